//! Approval is never inherited (docs/design.md, "Approval is never inherited"): a client whose
//! application asks for approvals sends a call of a tool with side effects only under the user's
//! approval of the definition its list shows, and holds such a call while a change is announced
//! and not yet listed; a read-only tool needs nothing. The `approval_not_inherited` judge, fed by
//! the world's observation (the user's approvals, the deliveries, the calls on the wire), tells
//! the reference from `approval-by-name`.

mod common;

use listsync_core::property::{Property, Verdict};
use listsync_core::record::Log;
use listsync_core::scenario::Scenario;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{Kind, Op};
use listsync_core::wire::{Request, ServerMsg};
use listsync_core::world::{Link, Step, World};

const READ_ONLY: &str = r#"{"annotations":{"readOnlyHint":true}}"#;

/// One stdio client asking for approvals, tools `a` (side effects) and `r` (read-only); a batch
/// changing `a`'s definition; the user approves `a`; the application calls `a`, `r`, `a`.
fn scenario(strategy: ClientStrategy) -> Scenario {
    let mut scn = common::one_client(
        "approvals",
        strategy,
        vec![
            Op::add(Kind::Tools, "a", "a1"),
            Op::add(Kind::Tools, "r", READ_ONLY),
        ],
        vec![vec![Op::update(Kind::Tools, "a", "a2")]],
        &["a", "r", "a"],
    );
    scn.clients[0].ask_approval = true;
    scn.approvals = vec![(0, "a".into())];
    scn
}

fn settle(w: &mut World, scn: &Scenario) {
    common::settle(w, scn, &mut Log::default());
}

fn apply(w: &mut World, scn: &Scenario, s: Step) {
    w.apply(scn, &s, &mut Log::default()).unwrap();
}

/// Tool calls on the client's request link.
fn calls_in_flight(w: &World) -> Vec<String> {
    w.links[0]
        .up
        .iter()
        .filter_map(|m| match &m.req {
            Request::CallTool { name, .. } => Some(name.to_string()),
            _ => None,
        })
        .collect()
}

fn approval_verdict(w: &World) -> Verdict {
    if w.monitor.violated(Property::ApprovalNotInherited) {
        Verdict::Violated
    } else {
        Verdict::Holds
    }
}

/// Listed; the user approves `a` (definition a1); the administrator changes `a` to a2 and the
/// client lists again; the application calls `a` (call 2).
fn rug_pull(strategy: ClientStrategy) -> (World, Vec<String>) {
    let scn = scenario(strategy);
    let mut w = World::new(&scn);
    settle(&mut w, &scn);
    apply(&mut w, &scn, Step::Approve { approval: 0 });
    apply(&mut w, &scn, Step::Mutate { batch: 0 });
    settle(&mut w, &scn);
    apply(&mut w, &scn, Step::Call { call: 2 });
    let sent = calls_in_flight(&w);
    settle(&mut w, &scn);
    (w, sent)
}

#[test]
fn reference_asks_again_after_the_definition_changed() {
    let (w, sent) = rug_pull(ClientStrategy::Reference);
    assert!(sent.is_empty(), "sent {sent:?} under the approval of a1");
    assert_eq!(w.clients[0].needs_approval(), vec!["a".into()]);
    assert_eq!(approval_verdict(&w), Verdict::Holds);
}

#[test]
fn approval_by_name_runs_the_changed_tool_and_is_caught() {
    let (w, sent) = rug_pull(ClientStrategy::ApprovalByName);
    assert_eq!(sent, vec!["a".to_string()]);
    assert_eq!(approval_verdict(&w), Verdict::Violated);
    let why = w
        .monitor
        .first_violation(Property::ApprovalNotInherited)
        .unwrap();
    assert!(why.contains("no approval of that definition"), "{why}");
}

#[test]
fn approved_and_read_only_tools_go_out() {
    let scn = scenario(ClientStrategy::Reference);
    let mut w = World::new(&scn);
    settle(&mut w, &scn);
    // Before approval: a is refused in the client, r (read-only) goes out.
    apply(&mut w, &scn, Step::Call { call: 0 });
    apply(&mut w, &scn, Step::Call { call: 1 });
    assert_eq!(calls_in_flight(&w), vec!["r".to_string()]);
    settle(&mut w, &scn);
    apply(&mut w, &scn, Step::Approve { approval: 0 });
    assert!(w.clients[0].needs_approval().is_empty());
    apply(&mut w, &scn, Step::Call { call: 2 });
    assert_eq!(calls_in_flight(&w), vec!["a".to_string()]);
    settle(&mut w, &scn);
    assert_eq!(approval_verdict(&w), Verdict::Holds);
}

/// The user approved `a`; the change to `a` is announced and its notification delivered, but
/// the walk it starts has not been answered when the application calls `a`.
fn call_while_told(strategy: ClientStrategy) -> (World, Scenario, Vec<String>) {
    let scn = scenario(strategy);
    let mut w = World::new(&scn);
    settle(&mut w, &scn);
    apply(&mut w, &scn, Step::Approve { approval: 0 });
    apply(&mut w, &scn, Step::Mutate { batch: 0 });
    assert!(matches!(
        w.links[0].down.first(),
        Some(ServerMsg::Notification(_))
    ));
    let deliver = Step::Deliver {
        client: 0,
        link: Link::Down,
        index: 0,
    };
    apply(&mut w, &scn, deliver);
    apply(&mut w, &scn, Step::Call { call: 2 });
    let sent = calls_in_flight(&w);
    (w, scn, sent)
}

#[test]
fn reference_holds_a_call_while_a_change_is_announced() {
    let (mut w, scn, sent) = call_while_told(ClientStrategy::Reference);
    assert!(
        sent.is_empty(),
        "sent {sent:?} while the change was announced"
    );
    assert_eq!(w.clients[0].paused_calls(), 1);
    // The walk ends with a2 listed: the held call is decided afresh and refused (a2 is not
    // approved), so nothing runs under the approval of a1.
    settle(&mut w, &scn);
    assert_eq!(w.clients[0].paused_calls(), 0);
    assert!(calls_in_flight(&w).is_empty());
    assert_eq!(w.clients[0].needs_approval(), vec!["a".into()]);
    assert_eq!(approval_verdict(&w), Verdict::Holds);
}

#[test]
fn approval_by_name_calls_while_a_change_is_announced_and_is_caught() {
    let (w, _, sent) = call_while_told(ClientStrategy::ApprovalByName);
    assert_eq!(sent, vec!["a".to_string()]);
    let why = w
        .monitor
        .first_violation(Property::ApprovalNotInherited)
        .unwrap();
    assert!(why.contains("while told its tool list changed"), "{why}");
}
