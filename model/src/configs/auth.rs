//! Authorization contexts: a client that switches context keeps a cache per context, and every
//! change and call is answered per context.

use super::Config;
use super::spec::Spec;
use crate::Search;
use listsync_core::situation::Situation::*;
use listsync_core::vocab::{AuthCtx, Kind, Op, Scope};

/// A client switching to auth1 and back while auth1-only items are added and called.
pub(super) fn auth() -> Config {
    let mut s = Spec::new("reference-auth");
    s.page_size = 0;
    s.script = vec![
        vec![Op::Add {
            kind: Kind::Tools,
            name: "s".into(),
            def: "s1".into(),
            scope: Scope::Only(AuthCtx(1)),
        }],
        // A rebuild that leaves every list as it was: no version, no notification.
        vec![Op::update(Kind::Tools, "a", "a1")],
    ];
    let mut s = s.build();
    s.initial.push(Op::Add {
        kind: Kind::Tools,
        name: "t".into(),
        def: "t1".into(),
        scope: Scope::Only(AuthCtx(1)),
    });
    s.auth_changes = vec![(0, AuthCtx(1)), (0, AuthCtx(0))];
    // The application calls the auth1-only tool by name at any moment, listed or not: under
    // auth0 the server must refuse it (judged by the world, from its own catalog).
    s.calls = vec![(0, "t".into())];
    s.clients[0].calls_by_name = true;
    Config {
        scenario: s,
        about: "two authorization contexts: the client switches to auth1 and back while items scoped to auth1 are added, and calls an auth1-only tool at any moment; caches are per context, calls answered per context; a rebuild that changes nothing, and a change only auth1 sees, are announced only to whom they change something",
        search: Search::Bfs,
        violates: &[],
        situations: &[NotifyDuringRefresh, AuthSwitchDuringRefresh],
    }
}
