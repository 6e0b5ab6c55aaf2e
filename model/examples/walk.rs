use listsync_core::record::Log;
use listsync_core::world::World;
use listsync_model::configs;
fn main() {
    let name = std::env::args().nth(1).unwrap();
    let c = configs::by_name(&name).unwrap();
    let scn = &c.scenario;
    let mut seed: u64 = 12345;
    let mut longest = (0, Vec::new());
    for _ in 0..2000 {
        let mut log = Log::default();
        let mut w = World::new_recorded(scn, &mut log);
        let mut n = 0;
        loop {
            let mut steps = Vec::new();
            w.enabled(scn, &mut steps);
            if steps.is_empty() || n > 500 {
                break;
            }
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let s = &steps[(seed >> 33) as usize % steps.len()];
            log.lines.push(format!("== {s}"));
            w.apply(scn, s, &mut log).unwrap();
            n += 1;
        }
        if n > longest.0 {
            longest = (n, log.lines.clone());
        }
    }
    println!("longest {}", longest.0);
    for l in longest.1.iter().take(400) {
        println!("{l}");
    }
}
