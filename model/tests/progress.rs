//! The progress pass judges the graph the checker recorded while exploring: the same states,
//! quiescent states and verdict as a second, independent exploration of the same model finds.

use listsync_core::world::World;
use listsync_model::configs;
use listsync_model::graph::hash;
use listsync_model::progress::check_model;
use listsync_model::{ListModel, Search, check};

fn same_as_exploring_again(name: &str, threads: usize) {
    let c = configs::by_name(name).unwrap();
    same_as_exploring_again_by(name, c.search, threads);
}

fn same_as_exploring_again_by(name: &str, search: Search, threads: usize) {
    let c = configs::by_name(name).unwrap();
    let recorded = check(&c.scenario, search, c.situations, threads, &mut |_, _| {}).progress;
    let model = ListModel::new(c.scenario.clone());
    let again = match search {
        Search::Bfs | Search::Dfs => check_model(&model, World::quiescent, hash::<World>),
        Search::DfsSymmetric => {
            check_model(&model, World::quiescent, |w: &World| hash(&w.canonical()))
        }
        Search::Walks => panic!("random walks are never exhaustive: no progress pass"),
    };
    assert_eq!(
        (recorded.states, recorded.quiescent, recorded.stuck),
        (again.states, again.quiescent, again.stuck),
        "{name}"
    );
    assert!(recorded.quiescent > 0, "{name}: no quiescent state");
}

#[test]
fn the_breadth_first_checker_s_graph_is_the_whole_graph() {
    same_as_exploring_again("reference", 2);
    same_as_exploring_again("reference-faults", 1);
}

#[test]
fn the_depth_first_checker_s_graph_is_the_whole_graph() {
    same_as_exploring_again_by("reference-faults", Search::Dfs, 2);
    same_as_exploring_again_by("reference-cluster-migrate", Search::Dfs, 1);
}

#[test]
fn the_symmetric_checker_s_graph_is_the_whole_graph_up_to_symmetry() {
    same_as_exploring_again("reference-multi-client", 2);
}
