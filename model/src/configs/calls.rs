//! Calls routed by the list: a failed call is not a change, every consumer reads one snapshot,
//! approvals and arguments follow the definition listed, and a name reaches the server it names.

use super::Config;
use super::spec::{A_X, A_X_REWORDED, A_Y, READ_ONLY, Spec, tools, two_servers};
use crate::Search;
use listsync_core::situation::Situation::*;
use listsync_core::vocab::{Kind, Op};

/// A call refused because its tool is gone, and one that fails otherwise.
pub(super) fn errors() -> Config {
    let mut s = Spec::new("reference-errors");
    s.page_size = 0;
    s.script = vec![vec![Op::remove(Kind::Tools, "a")]];
    let mut s = s.build();
    s.calls = vec![(0, "a".into()), (0, "b".into())];
    s.faults.call_error = 1;
    Config {
        scenario: s,
        about: "errors are not changes: a call to a tool being removed is refused as unknown (one re-list of tools, only while the snapshot still lists it), and a call that fails with an internal error starts no refresh",
        search: Search::Bfs,
        violates: &[],
        situations: &[CallRefusedAsGone, CallFailedOtherwise],
    }
}

/// A preloaded tool that the server removes: the router follows the published list.
pub(super) fn known_tools() -> Config {
    let mut s = Spec::new("reference-known-tools");
    s.page_size = 0;
    s.initial = tools(&[("a", "a1"), ("k", "k1")]);
    s.script = vec![
        vec![Op::remove(Kind::Tools, "k")],
        vec![Op::add(Kind::Tools, "c", "c1")],
    ];
    let mut s = s.build();
    s.clients[0].known = vec!["k".into()];
    s.calls = vec![(0, "k".into()), (0, "c".into())];
    Config {
        scenario: s,
        about: "one snapshot for every consumer: the application preloads tool k, which the server then removes, and adds c; calls of k and c at any moment are routed exactly when the published list shows the tool (k before the first list too)",
        search: Search::Bfs,
        violates: &[],
        situations: &[CallInFlightDuringRemoval],
    }
}

/// Approvals of a definition, while the definition changes and its name is reused.
pub(super) fn approvals() -> Config {
    let mut s = Spec::new("reference-approvals");
    s.page_size = 0;
    s.initial = tools(&[("a", "a1"), ("r", READ_ONLY)]);
    s.script = vec![
        vec![Op::update(Kind::Tools, "a", "a2")],
        vec![Op::remove(Kind::Tools, "a")],
        vec![Op::add(Kind::Tools, "a", "a3")],
    ];
    let mut s = s.build();
    s.clients[0].ask_approval = true;
    s.approvals = vec![(0, "a".into())];
    s.calls = vec![(0, "a".into()), (0, "r".into())];
    Config {
        scenario: s,
        about: "approval is never inherited: the user approves tool a (side effects) as listed at any moment, while a's definition changes, a is removed, and a new a takes its name; calls of a and of the read-only r at any moment go out only under an approval of the definition listed, and wait while a change is announced and not yet listed",
        search: Search::Bfs,
        violates: &[],
        situations: &[ApprovedDefinitionChanged, CallWaitsForSettle],
    }
}

/// Calls in flight while a tool's input schema changes under its name.
pub(super) fn schema_change() -> Config {
    let mut s = Spec::new("reference-schema-change");
    s.page_size = 0;
    s.initial = tools(&[("a", A_X)]);
    s.script = vec![
        vec![Op::update(Kind::Tools, "a", A_X_REWORDED)],
        vec![Op::update(Kind::Tools, "a", A_Y)],
    ];
    let mut s = s.build();
    s.calls = vec![(0, "a".into()), (0, "a".into())];
    Config {
        scenario: s,
        about: "the schema-change race: tool a's description is reworded (same input schema), then its input schema changes; calls built against whatever the client lists run only if their arguments fit the current schema, else -32602 names the change and the client lists tools once",
        search: Search::Bfs,
        violates: &[],
        situations: &[CallInFlightDuringSchemaChange],
    }
}

/// A new input schema under a new name, the old tool removed after: no stale arguments.
pub(super) fn migration() -> Config {
    let mut s = Spec::new("reference-migration");
    s.page_size = 0;
    s.initial = tools(&[("a", A_X)]);
    s.script = vec![
        vec![Op::add(Kind::Tools, "a_v2", A_Y)],
        vec![Op::remove(Kind::Tools, "a")],
    ];
    let mut s = s.build();
    s.calls = vec![(0, "a".into()), (0, "a_v2".into())];
    Config {
        scenario: s,
        about: "the versioned migration: add a_v2 with the new input schema, move callers over, then remove a; no tool's schema changes under a name, so no call's arguments go stale",
        search: Search::Bfs,
        violates: &[],
        situations: &[CallInFlightDuringRemoval],
    }
}

/// One application, two servers reporting the same name and the same tool names.
pub(super) fn two_servers_one_name() -> Config {
    let mut s = Spec::new("reference-two-servers");
    s.clients = 2;
    s.page_size = 0;
    s.initial = tools(&[("read", "r1"), ("a", "a1")]);
    s.script = vec![vec![
        Op::add(Kind::Tools, "b", "b1"),
        Op::remove(Kind::Tools, "a"),
    ]];
    let mut s = two_servers(s.build());
    s.aggregate.as_mut().expect("two servers").calls = 2;
    Config {
        scenario: s,
        about: "one application, two servers that both report serverInfo.name \"files\" and list the same tool names (two sessions of one registry, as two instances of one server program): the combined listing names every tool of both, and two calls of any names it shows at any moment each reach the server it named, while one batch adds a tool and removes another",
        search: Search::Bfs,
        violates: &[],
        situations: &[OneNameTwoServers],
    }
}
