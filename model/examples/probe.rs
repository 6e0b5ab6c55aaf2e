use listsync_model::{ListModel, configs};
use stateright::{Checker, Model};
fn main() {
    let name = std::env::args().nth(1).unwrap();
    let n: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let c = configs::by_name(&name).unwrap();
    let ch = ListModel::first_only(c.scenario.clone())
        .checker()
        .target_state_count(n)
        .spawn_bfs()
        .join();
    println!(
        "unique={} depth={}",
        ch.unique_state_count(),
        ch.max_depth()
    );
}
