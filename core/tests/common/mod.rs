//! What the world-driving tests share: delivering everything in flight, and the scenario frame of
//! one stdio client.

use listsync_core::client::{ClientConfig, Pacing};
use listsync_core::record::Recorder;
use listsync_core::scenario::{Faults, Scenario, Transport};
use listsync_core::server::ServerConfig;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{Era, Op};
use listsync_core::world::{Step, World};

/// Delivers every message in flight (the first deliverable one each time), recording into
/// `log`, until nothing is in flight.
pub fn settle(w: &mut World, scn: &Scenario, log: &mut impl Recorder) {
    for _ in 0..100 {
        let mut steps = Vec::new();
        w.enabled(scn, &mut steps);
        let Some(s) = steps
            .into_iter()
            .find(|s| matches!(s, Step::Deliver { .. }))
        else {
            return;
        };
        w.apply(scn, &s, log).unwrap();
    }
    panic!("the world does not settle");
}

/// A 2025-11-25 stdio scenario of one unpaced client of `strategy` keeping the tools list, with
/// this catalog, script and calls, the reference server, and no faults; callers adjust the rest.
pub fn one_client(
    name: &str,
    strategy: ClientStrategy,
    initial: Vec<Op>,
    script: Vec<Vec<Op>>,
    calls: &[&str],
) -> Scenario {
    Scenario {
        name: name.into(),
        era: Era::V2025_11_25,
        transport: Transport::Stdio,
        server: ServerConfig::default(),
        initial,
        clients: vec![ClientConfig {
            pacing: Pacing::OFF,
            ..ClientConfig::tools(strategy, Era::V2025_11_25)
        }],
        script,
        auth_changes: Vec::new(),
        calls: calls.iter().map(|t| (0, (*t).into())).collect(),
        approvals: Vec::new(),
        faults: Faults::default(),
        cluster: None,
        aggregate: None,
    }
}
