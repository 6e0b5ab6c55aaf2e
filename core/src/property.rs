//! The properties listsync decides, with their fixed names (docs/design.md), and verdicts.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A correctness property of list synchronisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Property {
    /// Every published snapshot equals the server's visible list at one single catalog version.
    #[serde(rename = "no_torn_snapshot")]
    NoTornSnapshot,
    /// The catalog version behind a client's published snapshot never goes backwards.
    #[serde(rename = "no_stale_overwrite")]
    NoStaleOverwrite,
    /// At quiescence every client's snapshot equals the server's current visible list.
    #[serde(rename = "converges")]
    Converges,
    /// A change committed after a client's last refresh started is never left unfetched at
    /// quiescence.
    #[serde(rename = "no_lost_wakeup")]
    NoLostWakeup,
    /// No `list_changed` is sent before the change is visible to a list request.
    #[serde(rename = "notify_after_commit")]
    NotifyAfterCommit,
    /// The server never runs a tool absent from its registry at dispatch, and a client never
    /// routes a call to a tool that the server removed and its own published list no longer has.
    #[serde(rename = "no_call_to_removed")]
    NoCallToRemoved,
    /// A burst of notifications during one refresh causes at most one further refresh, and a
    /// committed batch causes at most one `list_changed` per list per client.
    #[serde(rename = "bounded_refresh")]
    BoundedRefresh,
    /// A snapshot cached for one authorization context never holds an item visible only to
    /// another.
    #[serde(rename = "auth_isolation")]
    AuthIsolation,
    /// (2026-07-28) A client that opens `subscriptions/listen` lists after the acknowledgement.
    #[serde(rename = "listen_then_list")]
    ListenThenList,
    /// No `list_changed` reaches a session unless the list it announces differs, for some
    /// authorization context the session has listed under, from what the session last knew.
    #[serde(rename = "no_spurious_notify")]
    NoSpuriousNotify,
    /// A failed call makes a client list again only when the error says the tool is gone and its
    /// snapshot still lists it, and then only that kind; any other error starts no refresh.
    #[serde(rename = "errors_not_changes")]
    ErrorsNotChanges,
    /// Every consumer of a client reads the one published snapshot: the call router sends a call
    /// exactly when the application's listing shows the tool.
    #[serde(rename = "consumers_agree")]
    ConsumersAgree,
    /// Approval is never inherited: a client whose application asks the user to approve tools
    /// with side effects sends a call of such a tool only under the user's approval of exactly
    /// the definition its published list shows, and not while it has been told the tool list
    /// changed and has not listed it again since.
    #[serde(rename = "approval_not_inherited")]
    ApprovalNotInherited,
    /// The server never runs a call whose arguments were built for an input schema the tool no
    /// longer has: it checks them against the current definition at dispatch.
    #[serde(rename = "no_stale_arguments")]
    NoStaleArguments,
    /// An application connected to several servers shows every tool of every server under a
    /// name of its own: a name it calls always reaches the same server's tool, that tool is
    /// always called by the same name, and at quiescence its combined listing holds every
    /// server's tools, none hidden by another's.
    #[serde(rename = "no_name_collision")]
    NoNameCollision,
}

impl Property {
    /// Every property, in report order.
    pub const ALL: [Property; 15] = [
        Property::NoTornSnapshot,
        Property::NoStaleOverwrite,
        Property::Converges,
        Property::NoLostWakeup,
        Property::NotifyAfterCommit,
        Property::NoCallToRemoved,
        Property::BoundedRefresh,
        Property::AuthIsolation,
        Property::ListenThenList,
        Property::NoSpuriousNotify,
        Property::ErrorsNotChanges,
        Property::ConsumersAgree,
        Property::ApprovalNotInherited,
        Property::NoStaleArguments,
        Property::NoNameCollision,
    ];

    /// The fixed name.
    pub fn as_str(self) -> &'static str {
        match self {
            Property::NoTornSnapshot => "no_torn_snapshot",
            Property::NoStaleOverwrite => "no_stale_overwrite",
            Property::Converges => "converges",
            Property::NoLostWakeup => "no_lost_wakeup",
            Property::NotifyAfterCommit => "notify_after_commit",
            Property::NoCallToRemoved => "no_call_to_removed",
            Property::BoundedRefresh => "bounded_refresh",
            Property::AuthIsolation => "auth_isolation",
            Property::ListenThenList => "listen_then_list",
            Property::NoSpuriousNotify => "no_spurious_notify",
            Property::ErrorsNotChanges => "errors_not_changes",
            Property::ConsumersAgree => "consumers_agree",
            Property::ApprovalNotInherited => "approval_not_inherited",
            Property::NoStaleArguments => "no_stale_arguments",
            Property::NoNameCollision => "no_name_collision",
        }
    }

    /// A short column header for tables (terminal and pages).
    pub fn short(self) -> &'static str {
        match self {
            Property::NoTornSnapshot => "torn",
            Property::NoStaleOverwrite => "stale",
            Property::Converges => "conv",
            Property::NoLostWakeup => "wake",
            Property::NotifyAfterCommit => "commit",
            Property::NoCallToRemoved => "call",
            Property::BoundedRefresh => "bound",
            Property::AuthIsolation => "auth",
            Property::ListenThenList => "listen",
            Property::NoSpuriousNotify => "quiet",
            Property::ErrorsNotChanges => "errors",
            Property::ConsumersAgree => "agree",
            Property::ApprovalNotInherited => "approve",
            Property::NoStaleArguments => "args",
            Property::NoNameCollision => "names",
        }
    }

    /// Position in [`Property::ALL`] (bit index in sets).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether the property is judged when the world comes to rest (quiescence), not at the
    /// event that breaks it.
    pub fn judged_at_rest(self) -> bool {
        matches!(
            self,
            Property::Converges | Property::NoLostWakeup | Property::ListenThenList
        )
    }
}

/// What reports say of a property (`reports/properties.md` is generated from it): kept here,
/// beside the enum, so that the page cannot drift from the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Description {
    /// The property in one sentence.
    pub sentence: &'static str,
    /// What an observer (a user, a log reader) sees when it fails.
    pub failure: &'static str,
    /// Which check of [`crate::monitor::Monitor`] judges it, on which event.
    pub checker: &'static str,
    /// Judged only at quiescence (the end of a run): a violation becomes certain there, and the
    /// step that caused it is earlier.
    pub at_quiescence: bool,
}

impl Property {
    /// What reports say of the property.
    pub fn describe(self) -> Description {
        let (sentence, failure, checker) = match self {
            Property::NoTornSnapshot => (
                "Every published list is the server's visible list at one single catalog version.",
                "the application shows a list that never existed: an item twice, or one missing, after a change landed between two pages of a walk",
                "`monitor/no_torn_snapshot.rs` on `Published`: the snapshot against every committed version",
            ),
            Property::NoStaleOverwrite => (
                "The catalog version behind a client's published list never goes backwards.",
                "a tool that was added disappears again (or a removed one comes back) when an older refresh finishes after a newer one",
                "`monitor/no_stale_overwrite.rs` on `Published`: the snapshot's version against the last one published",
            ),
            Property::Converges => (
                "Once nothing is in flight, every client's list equals the server's current visible list.",
                "the client keeps showing an out-of-date list after everything has settled",
                "`monitor/converges.rs` at quiescence: each client's last snapshot against the latest commit",
            ),
            Property::NoLostWakeup => (
                "A change committed after a client's last refresh started is never left unfetched once nothing is in flight.",
                "a list_changed arrived, yet the client never listed again and shows the old list for good",
                "`monitor/no_lost_wakeup.rs` at quiescence: a stale client whose last refresh started before the latest commit",
            ),
            Property::NotifyAfterCommit => (
                "No list_changed is sent before the change it announces is visible to a list request.",
                "the client lists at once on the notification and gets the old list; nothing tells it to list again",
                "`monitor/notify_after_commit.rs` on `Notified`: the announced version against the committed ones",
            ),
            Property::NoCallToRemoved => (
                "The server never runs a tool absent from its registry, and a client never routes a call to a tool the server removed and its own list no longer has.",
                "a tool the user saw removed still runs, or a call goes out for a tool no longer listed",
                "`monitor/no_call_to_removed.rs` on `Dispatched` (server) and `Routed` (client)",
            ),
            Property::BoundedRefresh => (
                "A burst of notifications during one refresh causes at most one further refresh, and one committed batch at most one list_changed per list per client.",
                "one change (or a burst) sets off a storm of list requests: many walks, or several notifications for one batch",
                "`monitor/bounded_refresh.rs` on `RefreshStarted` and `Notified`: refreshes and notifications counted per batch",
            ),
            Property::AuthIsolation => (
                "A list cached for one authorization context never holds an item visible only to another.",
                "after switching user or token, the application shows another principal's private tools",
                "`monitor/auth_isolation.rs` on `Published`: each item's scope against the snapshot's context",
            ),
            Property::ListenThenList => (
                "(2026-07-28) A client that opens subscriptions/listen lists again after the acknowledgement.",
                "a change committed between the listen request and its acknowledgement is never seen: the client stays stale",
                "`monitor/listen_then_list.rs` at quiescence: a listen acknowledged with no list after it",
            ),
            Property::NoSpuriousNotify => (
                "No list_changed reaches a session unless the list it announces differs, for some context the session listed under, from what the session last knew.",
                "clients re-list for nothing: notifications for a no-op change, or for a list the session cannot see",
                "`monitor/no_spurious_notify.rs` on `Notified`: the announced list against what the session last knew",
            ),
            Property::ErrorsNotChanges => (
                "A failed call makes a client list again only when the error says the tool is gone and its list still shows it, and then only that kind.",
                "every failed call (a timeout, a bad argument) sets off a full re-list",
                "`monitor/errors_not_changes.rs` on `CallFailed`: the kinds the client listed again in reaction, against the error and its published tool list",
            ),
            Property::ConsumersAgree => (
                "Every consumer of a client reads the one published list: the router sends a call exactly when the application's listing shows the tool.",
                "the application offers a tool the router refuses, or the router calls a tool the application no longer shows",
                "`monitor/consumers_agree.rs` on `Routed`: the routing decision against the published snapshot",
            ),
            Property::ApprovalNotInherited => (
                "A call of a tool with side effects goes out only under the user's approval of exactly the definition the published list shows, and not while a newer list is announced but not yet fetched.",
                "a tool whose definition changed runs under the approval the user gave the old one",
                "`monitor/approval_not_inherited.rs` on `Approved` and `Routed`: the approved definition against the published one",
            ),
            Property::NoStaleArguments => (
                "The server never runs a call whose arguments were built for an input schema the tool no longer has.",
                "a tool runs with arguments shaped for its old schema after its definition changed",
                "`monitor/no_stale_arguments.rs` on `RanStaleArguments`: the server dispatched without checking the current definition",
            ),
            Property::NoNameCollision => (
                "An application connected to several servers shows every tool under a name of its own, always reaching the same server's tool.",
                "two servers' tools share one name: one hides the other, or a call reaches the wrong server",
                "`monitor/no_name_collision.rs` on `CombinedListing` and `CalledCombined`",
            ),
        };
        Description {
            sentence,
            failure,
            checker,
            at_quiescence: self.judged_at_rest(),
        }
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Property {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Property::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown property '{s}'"))
    }
}

/// The verdict on one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Holds (exhaustively, for the model; on this history, for replays).
    Holds,
    /// Violated.
    Violated,
    /// Does not apply to this configuration.
    #[serde(rename = "n/a")]
    NotApplicable,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Holds => "holds",
            Verdict::Violated => "violated",
            Verdict::NotApplicable => "n/a",
        })
    }
}

/// A verdict per property.
pub type Verdicts = BTreeMap<Property, Verdict>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_description_is_one_sentence_and_names_its_checker_file() {
        for p in Property::ALL {
            let d = p.describe();
            assert!(d.sentence.ends_with('.'), "{p}: {}", d.sentence);
            assert!(
                !d.sentence.trim_end_matches('.').contains(". "),
                "{p}: more than one sentence: {}",
                d.sentence
            );
            assert!(!d.failure.is_empty() && !d.checker.is_empty(), "{p}");
            assert_eq!(
                d.at_quiescence,
                d.checker.contains("at quiescence"),
                "{p}: {}",
                d.checker
            );
            // The checker named is the property's own file in core/src/monitor/.
            let file = format!("monitor/{p}.rs");
            assert!(
                d.checker.starts_with(&format!("`{file}`")),
                "{p}: {}",
                d.checker
            );
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src")
                .join(&file);
            assert!(path.is_file(), "{p}: no {}", path.display());
        }
    }

    #[test]
    fn names_are_the_design_names() {
        let names: Vec<_> = Property::ALL.iter().map(|p| p.as_str()).collect();
        assert_eq!(
            names,
            [
                "no_torn_snapshot",
                "no_stale_overwrite",
                "converges",
                "no_lost_wakeup",
                "notify_after_commit",
                "no_call_to_removed",
                "bounded_refresh",
                "auth_isolation",
                "listen_then_list",
                "no_spurious_notify",
                "errors_not_changes",
                "consumers_agree",
                "approval_not_inherited",
                "no_stale_arguments",
                "no_name_collision"
            ]
        );
        for p in Property::ALL {
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{p}\""));
            assert_eq!(p.as_str().parse::<Property>().unwrap(), p);
            assert_eq!(Property::ALL[p.index()], p);
        }
    }
}
