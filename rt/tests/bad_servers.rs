//! The reference client against lying servers (hand-written rmcp handlers): a cursor cycle,
//! endless pagination, duplicate names (in one page, and across pages), an invalid input schema,
//! an oversized list, a result of the wrong shape, and a server that exits in the middle of a
//! walk. Each server first serves a good list; then it starts lying and announces a change. Every
//! test asserts the client's error and that the previous snapshot is intact (marked stale), and
//! that the work stayed bounded; the loud part — each failure and each retry reported, the list's
//! status failing with the reason and the next retry — is asserted for every lie.

mod common;

use common::*;
use listsync_core::client::ClientError;
use listsync_core::vocab::{Era, Kind, KindSet};
use listsync_rt::client::{ClientHandle, ClientNotice, ClientSettings, Endpoint, ListHealth};
use listsync_rt::history::SharedHistory;
use listsync_testkit::peers::{FakeServer, Lister, page};
use rmcp::model::{ErrorCode, ListToolsResult, Tool};
use rmcp::service::{Peer, RoleServer};
use rmcp::{ErrorData as McpError, ServiceExt};
use serde_json::json;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lie {
    Honest,
    CursorCycle,
    Endless,
    Duplicates,
    DuplicatesAcrossPages,
    InvalidSchema,
    Oversized,
    WrongShape,
    ExitOnPage2,
}

#[derive(Default)]
struct LiarState {
    lie: Mutex<Option<Lie>>,
    peers: Arc<Mutex<Vec<Peer<RoleServer>>>>,
    served: AtomicU32,
    /// Cancels the current connection (the "server exits").
    exit: Mutex<Option<CancellationToken>>,
}

impl LiarState {
    fn lie(&self) -> Lie {
        self.lie.lock().unwrap().unwrap_or(Lie::Honest)
    }
}

fn tool(name: &str) -> Tool {
    listsync_testkit::peers::tool(name, &format!("{name} tool"))
}

/// The lying server's lists: honest until the test picks a lie.
struct Liar {
    state: Arc<LiarState>,
}

impl Lister for Liar {
    async fn list(
        &self,
        cursor: Option<String>,
        _peer: &Peer<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let n = self.state.served.fetch_add(1, Ordering::SeqCst);
        Ok(match (self.state.lie(), cursor.as_deref()) {
            (Lie::Honest, None) => page(vec![tool("a"), tool("b")], Some("2".into())),
            (Lie::Honest, Some(_)) => page(vec![tool("c")], None),
            (Lie::CursorCycle, _) => page(vec![tool("x")], Some("loop".into())),
            (Lie::Endless, _) => page(vec![tool(&format!("e{n}"))], Some(format!("p{n}"))),
            (Lie::Duplicates, _) => page(vec![tool("a"), tool("a")], None),
            (Lie::DuplicatesAcrossPages, None) => {
                page(vec![tool("a"), tool("b")], Some("2".into()))
            }
            (Lie::DuplicatesAcrossPages, Some(_)) => page(vec![tool("c"), tool("a")], None),
            (Lie::InvalidSchema, _) => {
                let mut t = tool("a");
                t.input_schema = Arc::new(json!({"type": "string"}).as_object().cloned().unwrap());
                page(vec![t], None)
            }
            (Lie::Oversized, _) => page((0..200).map(|i| tool(&format!("o{i}"))).collect(), None),
            (Lie::WrongShape, _) => {
                return Err(McpError::new(ErrorCode(-32603), "lists are hard", None));
            }
            (Lie::ExitOnPage2, None) => page(vec![tool("a"), tool("z")], Some("2".into())),
            (Lie::ExitOnPage2, Some(_)) => {
                // The process dies: the connection goes away with this request unanswered;
                // the next connection is an honest server again.
                *self.state.lie.lock().unwrap() = Some(Lie::Honest);
                if let Some(exit) = self.state.exit.lock().unwrap().take() {
                    exit.cancel();
                }
                std::future::pending::<()>().await;
                unreachable!("pending never resolves")
            }
        })
    }
}

struct Setup {
    state: Arc<LiarState>,
    catalog: ClientHandle,
    notices: mpsc::UnboundedReceiver<ClientNotice>,
}

fn setup() -> Setup {
    let state = Arc::new(LiarState::default());
    let st = state.clone();
    let endpoint = Endpoint::duplex(move |_auth| {
        let st = st.clone();
        async move {
            let (client, theirs) = tokio::io::duplex(1 << 20);
            let exit = CancellationToken::new();
            *st.exit.lock().unwrap() = Some(exit.clone());
            tokio::spawn(async move {
                if let Ok(running) = FakeServer::new(
                    "liar",
                    Arc::new(Liar { state: st.clone() }),
                    st.peers.clone(),
                )
                .serve_with_ct(theirs, exit)
                .await
                {
                    let _ = running.waiting().await;
                }
            });
            Ok(client)
        }
    });
    let history = SharedHistory::new();
    let mut settings: ClientSettings =
        client_settings(Era::V2025_11_25, KindSet::only(Kind::Tools), 0, &history);
    settings.client.limits.max_pages = 20;
    settings.client.limits.max_items = 100;
    settings.client.limits.max_retries = 2;
    // Retries far enough apart that a status reader sees each one armed.
    settings.client.limits.backoff_base_ms = 100;
    let (tx, notices) = mpsc::unbounded_channel();
    settings.observer = Some(tx);
    Setup {
        state,
        catalog: ClientHandle::spawn(settings, endpoint),
        notices,
    }
}

fn names(catalog: &ClientHandle) -> Vec<String> {
    catalog.tools().names()
}

/// The server tells its latest session that the tool list changed.
async fn announce_change(s: &Setup) {
    let peer = s
        .state
        .peers
        .lock()
        .unwrap()
        .last()
        .cloned()
        .expect("a session");
    within("notify", peer.notify_tool_list_changed())
        .await
        .expect("notified");
}

/// Serves the honest list, then lies and announces a change; returns the first refresh error.
async fn lie_after_a_good_list(s: &mut Setup, lie: Lie) -> ClientError {
    wait_status("first list", &s.catalog, |st| {
        st.ready && st.idle && st.publications == 1
    })
    .await;
    assert_eq!(names(&s.catalog), ["a", "b", "c"]);
    *s.state.lie.lock().unwrap() = Some(lie);
    announce_change(s).await;
    within("refresh error", async {
        loop {
            if let Some(ClientNotice::RefreshFailed { error, .. }) = s.notices.recv().await {
                return error;
            }
        }
    })
    .await
}

/// After the retries give up: the old snapshot is what applications still read, marked stale;
/// every failure and every retry was reported, and the list's status says it is failing, why,
/// with no retry due any more.
async fn assert_old_snapshot_kept(s: &mut Setup) {
    let status = wait_status("retries over", &s.catalog, |st| st.idle).await;
    assert_eq!(status.publications, 1, "nothing else was published");
    assert_eq!(names(&s.catalog), ["a", "b", "c"]);
    assert!(s.catalog.tools().is_stale());
    let (mut failed, mut retries) = (1, 0); // the first failure was taken already
    while let Ok(n) = s.notices.try_recv() {
        match n {
            ClientNotice::RefreshFailed { .. } => failed += 1,
            ClientNotice::RetryScheduled { attempt, of, .. } => {
                retries += 1;
                assert_eq!((attempt, of), (retries, 2));
            }
            _ => {}
        }
    }
    assert_eq!(
        (failed, retries),
        (3, 2),
        "each failure and each retry reported"
    );
    let list = s.catalog.list_status(Kind::Tools);
    assert_eq!(list.health, ListHealth::Failing, "{list:?}");
    assert_eq!(list.failures, 3, "{list:?}");
    assert!(list.reason.is_some(), "{list:?}");
    assert_eq!(
        list.next_retry, None,
        "given up until the next change: {list:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursor_cycle() {
    let mut s = setup();
    let err = lie_after_a_good_list(&mut s, Lie::CursorCycle).await;
    assert_eq!(
        err,
        ClientError::CursorCycle(listsync_core::wire::Cursor("loop".into()))
    );
    assert_old_snapshot_kept(&mut s).await;
    // Two pages per attempt, three attempts (first + two retries), plus the first list.
    assert!(s.state.served.load(Ordering::SeqCst) <= 2 + 3 * 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_pagination_stops_at_the_page_limit() {
    let mut s = setup();
    let err = lie_after_a_good_list(&mut s, Lie::Endless).await;
    assert_eq!(err, ClientError::TooManyPages(20));
    assert_old_snapshot_kept(&mut s).await;
    assert!(s.state.served.load(Ordering::SeqCst) <= 2 + 3 * 21);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_names_reject_the_snapshot() {
    let mut s = setup();
    let err = lie_after_a_good_list(&mut s, Lie::Duplicates).await;
    assert_eq!(err, ClientError::DuplicateName("a".into()));
    assert_old_snapshot_kept(&mut s).await;
}

/// The same name on two pages of one walk: no page is wrong on its own, the list is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_names_across_pages_reject_the_snapshot() {
    let mut s = setup();
    let err = lie_after_a_good_list(&mut s, Lie::DuplicatesAcrossPages).await;
    assert_eq!(err, ClientError::DuplicateName("a".into()));
    // While a retry is pending the status says why the list is failing and when the next
    // attempt is due.
    let status = wait_status("a retry armed", &s.catalog, |st| {
        st.lists[&Kind::Tools].next_retry.is_some()
    })
    .await;
    let failing = &status.lists[&Kind::Tools];
    assert_eq!(failing.health, ListHealth::Failing);
    assert!(
        failing
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("'a' twice")),
        "{failing:?}"
    );
    assert_old_snapshot_kept(&mut s).await;
    assert!(s.state.served.load(Ordering::SeqCst) <= 2 + 3 * 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_schema_rejects_the_snapshot() {
    let mut s = setup();
    let err = lie_after_a_good_list(&mut s, Lie::InvalidSchema).await;
    assert!(
        matches!(&err, ClientError::InvalidResponse(m) if m.contains("inputSchema")),
        "{err}"
    );
    assert_old_snapshot_kept(&mut s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_list_is_refused() {
    let mut s = setup();
    let err = lie_after_a_good_list(&mut s, Lie::Oversized).await;
    assert_eq!(err, ClientError::TooManyItems(100));
    assert_old_snapshot_kept(&mut s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_instead_of_a_list() {
    let mut s = setup();
    let err = lie_after_a_good_list(&mut s, Lie::WrongShape).await;
    assert!(
        matches!(&err, ClientError::Rpc(e) if e.code == -32603),
        "{err}"
    );
    assert_old_snapshot_kept(&mut s).await;
}

/// The server exits while page 2 of a walk is outstanding: the old snapshot is kept and marked
/// stale, the client reconnects (a new server process), and re-lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_exits_mid_refresh() {
    let mut s = setup();
    wait_status("first list", &s.catalog, |st| {
        st.ready && st.idle && st.publications == 1
    })
    .await;
    *s.state.lie.lock().unwrap() = Some(Lie::ExitOnPage2);
    announce_change(&s).await;
    within("disconnect", async {
        loop {
            if let Some(ClientNotice::Disconnected { .. }) = s.notices.recv().await {
                return;
            }
        }
    })
    .await;
    // Lost with the connection: the walk; kept: the snapshot, marked stale.
    assert_eq!(names(&s.catalog), ["a", "b", "c"]);
    let status = wait_status("reconnected and relisted", &s.catalog, |st| {
        st.connections == 2 && st.ready && st.idle
    })
    .await;
    assert_eq!(status.publications, 2);
    assert_eq!(names(&s.catalog), ["a", "b", "c"]);
    assert!(!s.catalog.tools().is_stale(), "fresh after the re-list");
}
