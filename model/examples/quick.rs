use listsync_model::{check, configs};
fn main() {
    let names: Vec<String> = std::env::args().skip(1).collect();
    for c in configs::all() {
        if !names.is_empty() && !names.iter().any(|n| n == c.name()) {
            continue;
        }
        let r = check(&c.scenario, c.search, 1, &mut |_, _| {});
        let viol: Vec<_> = r
            .verdicts
            .iter()
            .filter(|(_, v)| **v == listsync_core::property::Verdict::Violated)
            .map(|(p, _)| {
                format!(
                    "{p}@{}",
                    r.counterexamples
                        .iter()
                        .find(|x| x.property == *p)
                        .unwrap()
                        .depth
                )
            })
            .collect();
        println!(
            "{:28} states={:>9} depth={:>3} {:>6.2}s ok={} violated={:?}",
            c.name(),
            r.unique_states,
            r.max_depth,
            r.seconds,
            r.verdicts == c.expected(),
            viol
        );
    }
}
#[allow(dead_code)]
fn _x() {}
