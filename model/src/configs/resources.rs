//! Resources: a change to a resource's content and a change to the resources list are two
//! different notifications.

use super::Config;
use super::spec::Spec;
use crate::Search;
use listsync_core::situation::Situation::*;
use listsync_core::vocab::{Kind, KindSet, Op};

/// A subscriber to one resource's content while the resources list changes too.
pub(super) fn resources() -> Config {
    let mut s = Spec::new("reference-resources");
    s.page_size = 0;
    s.initial = vec![
        Op::add(Kind::Resources, "file:///r1", "r1"),
        Op::add(Kind::Tools, "a", "a1"),
    ];
    s.script = vec![
        vec![Op::SetContent {
            uri: "file:///r1".into(),
            text: "hello".into(),
        }],
        vec![Op::add(Kind::Resources, "file:///r2", "r2")],
    ];
    let mut s = s.build();
    s.clients[0].kinds = KindSet::only(Kind::Resources);
    s.clients[0].watch = vec!["file:///r1".into()];
    Config {
        scenario: s,
        about: "resources: a content change (resources/updated to the subscriber) and a list change (list_changed) are told apart",
        search: Search::Bfs,
        violates: &[],
        situations: &[ContentUpdateInFlight, NotifyDuringRefresh],
    }
}
