use listsync_core::world::World;
use listsync_model::configs;
use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
fn fp(w: &World) -> u64 {
    let mut h = DefaultHasher::new();
    w.hash(&mut h);
    h.finish()
}
fn main() {
    let name = std::env::args().nth(1).unwrap();
    let cap: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(3_000_000);
    let c = configs::by_name(&name).unwrap();
    let scn = &c.scenario;
    let init = World::new(scn);
    let mut seen = HashSet::new();
    seen.insert(fp(&init));
    let mut frontier = vec![init];
    let mut depth = 0;
    while !frontier.is_empty() && seen.len() < cap {
        let mut next = Vec::new();
        let mut maxup = 0;
        let mut maxdown = 0;
        for w in &frontier {
            let mut steps = Vec::new();
            w.enabled(scn, &mut steps);
            for s in steps {
                let mut n = w.clone();
                n.apply(scn, &s, &mut ()).unwrap();
                if seen.insert(fp(&n)) {
                    maxup = maxup.max(n.links[0].up.len());
                    maxdown = maxdown.max(n.links[0].down.len());
                    next.push(n);
                }
            }
        }
        depth += 1;
        println!(
            "depth {depth}: new {} total {} maxup {maxup} maxdown {maxdown}",
            next.len(),
            seen.len()
        );
        frontier = next;
    }
}
