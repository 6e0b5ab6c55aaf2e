//! The registry's version count, read from the commits it claims (`Event::Committed`, the
//! history's record of the catalog changing): each batch that changes the catalog takes the
//! next version, whether it lands at once (the reference server) or is staged and lands later
//! (the known-bad strategies that announce a change before committing it).

use listsync_core::history::Event;
use listsync_core::server::{Registry, ServerConfig, ServerInput, ServerOutput};
use listsync_core::strategy::ServerStrategy;
use listsync_core::vocab::{Catalog, Kind, Op};
use std::sync::Arc;

fn committed(out: &[ServerOutput]) -> Vec<u64> {
    out.iter()
        .filter_map(|o| match o {
            ServerOutput::Claim(Event::Committed { version, .. }) => Some(*version),
            _ => None,
        })
        .collect()
}

fn add(name: &str) -> ServerInput {
    ServerInput::Apply(Arc::from([Op::add(Kind::Tools, name, "1")]))
}

#[test]
fn every_change_that_lands_takes_the_next_version() {
    for strategy in [
        ServerStrategy::Reference,
        ServerStrategy::NotifyBeforeCommit,
    ] {
        let cfg = ServerConfig {
            strategy,
            ..ServerConfig::default()
        };
        let mut r = Registry::new(cfg, Catalog::from_ops(&[Op::add(Kind::Tools, "a", "1")]));
        let first = r.version();
        let mut out = Vec::new();
        // A second batch while the first is staged: the staged one lands first.
        r.step(add("b"), &mut out);
        r.step(add("c"), &mut out);
        // The staged one lands on its own.
        r.step(ServerInput::CommitStaged, &mut out);
        // A batch that changes nothing takes no version.
        r.step(add("c"), &mut out);
        r.step(ServerInput::CommitStaged, &mut out);
        assert_eq!(
            committed(&out),
            [first + 1, first + 2],
            "{strategy:?}: {out:?}"
        );
        assert_eq!(r.version(), first + 2, "{strategy:?}");
    }
}
