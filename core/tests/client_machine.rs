//! The client machine alone, driven by hand as a scripted server would drive it, and judged by
//! what it hands its driver: the requests it sends, the timers it asks for (retry back-off and
//! pacing delays, to the millisecond), the errors it reports and the lists it publishes. The
//! model and the simulator judge the same machine inside a world; these tests pin the numbers a
//! world with a coarse clock cannot tell apart (docs/design.md, "Pacing" and "Bounds").

use listsync_core::client::{
    CallError, CatalogClient, ClientConfig, ClientError, ClientInput, ClientOutput, Coalesce,
    Limits, Pacing,
};
use listsync_core::history::{Event, RefreshOutcome, Restart};
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{AuthCtx, Era, Item, Kind, KindSet};
use listsync_core::wire::{
    Caps, ClientMsg, Cursor, ErrorReason, Notification, Page, ReqId, Request, Response, RpcError,
    ServerMsg,
};
use std::sync::Arc;

const A: AuthCtx = AuthCtx(0);

/// A client machine (its clock set by `at`) and what its last step asked for.
struct MachineUnderTest {
    c: CatalogClient,
    out: Vec<ClientOutput>,
}

impl MachineUnderTest {
    /// A 2025-11-25 client of tools with these limits and pacing, connected and initialized:
    /// its first list request is in `out`.
    fn new(strategy: ClientStrategy, limits: Limits, pacing: Pacing) -> MachineUnderTest {
        let mut r = MachineUnderTest::of(ClientConfig {
            limits,
            pacing,
            ..ClientConfig::tools(strategy, Era::V2025_11_25)
        });
        r.connect();
        r
    }

    /// A client of this configuration, not started.
    fn of(cfg: ClientConfig) -> MachineUnderTest {
        MachineUnderTest {
            c: CatalogClient::new(0, Arc::new(cfg)),
            out: Vec::new(),
        }
    }

    /// Connects a 2025-11-25 client: `initialize`, answered with list-changed notifications
    /// of tools; its first list request is in `out`.
    fn connect(&mut self) {
        self.step(ClientInput::Start);
        let init = self.request(|q| matches!(q, Request::Initialize));
        self.answer(
            init,
            Response::Initialized {
                era: Era::V2025_11_25,
                caps: Caps {
                    list_changed: KindSet::only(Kind::Tools),
                    subscribe: false,
                },
            },
        );
    }

    fn step(&mut self, input: ClientInput) -> &[ClientOutput] {
        self.out.clear();
        self.c.step(input, &mut self.out);
        &self.out
    }

    /// Sets the clock to `ms` milliseconds.
    fn at(&mut self, ms: u64) {
        self.c.set_clock(ms * 1_000);
    }

    fn answer(&mut self, id: ReqId, resp: Response) -> &[ClientOutput] {
        self.step(ClientInput::Receive(ServerMsg::Response { id, resp }))
    }

    /// A tools `list_changed` (of a 2025-11-25 session: no stream id).
    fn notify(&mut self) -> &[ClientOutput] {
        self.list_changed(None)
    }

    /// A tools `list_changed` sent on listen stream `sub` (2026-07-28).
    fn notify_on(&mut self, sub: u32) -> &[ClientOutput] {
        self.list_changed(Some(sub))
    }

    fn list_changed(&mut self, sub: Option<u32>) -> &[ClientOutput] {
        self.step(ClientInput::Receive(ServerMsg::Notification(
            Notification::ListChanged {
                kind: Kind::Tools,
                sub,
            },
        )))
    }

    /// The id of the one request the last step sent that `want` selects.
    fn request(&self, want: impl Fn(&Request) -> bool) -> ReqId {
        let ids: Vec<ReqId> = self
            .out
            .iter()
            .filter_map(|o| match o {
                ClientOutput::Send(ClientMsg { id, req, .. }) if want(req) => Some(*id),
                _ => None,
            })
            .collect();
        assert_eq!(ids.len(), 1, "one such request: {:?}", self.out);
        ids[0]
    }

    /// The id of the first-page tools list request the last step sent.
    fn first_page(&self) -> ReqId {
        self.request(|q| {
            matches!(
                q,
                Request::List {
                    kind: Kind::Tools,
                    cursor: None
                }
            )
        })
    }

    /// The id of the continuation request (cursor `c`) the last step sent.
    fn next_page(&self, c: &str) -> ReqId {
        self.request(|q| match q {
            Request::List {
                kind: Kind::Tools,
                cursor: Some(Cursor(have)),
            } => &**have == c,
            _ => false,
        })
    }

    fn sent_anything(&self) -> bool {
        self.out.iter().any(|o| matches!(o, ClientOutput::Send(_)))
    }

    /// The pacing delay the last step asked for, if it held a walk back.
    fn walk_delay(&self) -> Option<u32> {
        self.out.iter().find_map(|o| match o {
            ClientOutput::ScheduleWalk { delay_ms, .. } => Some(*delay_ms),
            _ => None,
        })
    }

    /// The retry the last step asked for: (attempt, delay).
    fn retry(&self) -> Option<(u8, u32)> {
        self.out.iter().find_map(|o| match o {
            ClientOutput::ScheduleRetry {
                attempt, delay_ms, ..
            } => Some((*attempt, *delay_ms)),
            _ => None,
        })
    }

    fn failure(&self) -> Option<&ClientError> {
        self.out.iter().find_map(|o| match o {
            ClientOutput::Failed { error, .. } => Some(error),
            _ => None,
        })
    }

    fn published(&self) -> Option<Vec<String>> {
        self.out.iter().find_map(|o| match o {
            ClientOutput::Event(Event::Published { items, .. }) => Some(
                items
                    .iter()
                    .map(|i| format!("{}={}", i.name, i.def))
                    .collect(),
            ),
            _ => None,
        })
    }

    /// What the client's readers see of its tools list: the items ("name=def") and the version
    /// of the snapshot it holds now, whatever its last step said about it.
    fn held(&self) -> Option<(Vec<String>, Option<u64>)> {
        self.c.snapshot(Kind::Tools).map(|s| {
            let items = s
                .items
                .iter()
                .map(|i| format!("{}={}", i.name, i.def))
                .collect();
            (items, s.version)
        })
    }

    fn ended(&self) -> Option<RefreshOutcome> {
        self.out.iter().find_map(|o| match o {
            ClientOutput::Event(Event::RefreshEnded { outcome, .. }) => Some(*outcome),
            _ => None,
        })
    }

    fn restarted(&self) -> Option<Restart> {
        self.out.iter().find_map(|o| match o {
            ClientOutput::Event(Event::WalkRestarted { reason, .. }) => Some(*reason),
            _ => None,
        })
    }

    fn marked_stale(&self) -> bool {
        self.out
            .iter()
            .any(|o| matches!(o, ClientOutput::Event(Event::MarkedStale { .. })))
    }
}

/// A tools page of `items` ("name=def"), continued by cursor `next`, at `version` of catalog 1.
fn page(items: &[&str], next: Option<&str>, version: Option<u64>) -> Response {
    page_of(Kind::Tools, items, next, version, Some(1))
}

fn page_of(
    kind: Kind,
    items: &[&str],
    next: Option<&str>,
    version: Option<u64>,
    catalog: Option<u64>,
) -> Response {
    Response::Page(Page {
        kind,
        items: items
            .iter()
            .map(|s| {
                let (n, d) = s.split_once('=').expect("name=def");
                Item::new(n, d)
            })
            .collect(),
        next: next.map(|c| Cursor(c.into())),
        version,
        catalog: version.and(catalog),
        ttl_ms: None,
        cache_scope: None,
        version_bound: false,
    })
}

fn internal_error() -> Response {
    Response::Error(RpcError {
        code: listsync_core::wire::INTERNAL_ERROR,
        reason: ErrorReason::Other("down".into()),
    })
}

// --- Retries -------------------------------------------------------------------------------

#[test]
fn failed_refreshes_back_off_doubling_to_the_cap_and_give_up_after_the_last_retry() {
    let limits = Limits {
        max_retries: 5,
        backoff_base_ms: 100,
        backoff_max_ms: 1_000,
        ..Limits::default()
    };
    let mut r = MachineUnderTest::new(ClientStrategy::Reference, limits, Pacing::OFF);
    let mut id = r.first_page();
    let mut seen = Vec::new();
    for _ in 0..5 {
        r.answer(id, internal_error());
        assert!(
            matches!(r.failure(), Some(ClientError::Rpc(_))),
            "a server error is reported as one: {:?}",
            r.out
        );
        assert_eq!(r.ended(), None, "the refresh goes on while retries remain");
        let Some(retry) = r.retry() else {
            panic!("a retry is armed: {:?}", r.out)
        };
        seen.push(retry);
        r.step(ClientInput::RetryDue(Kind::Tools, A));
        id = r.first_page();
    }
    assert_eq!(
        seen,
        vec![(1, 100), (2, 200), (3, 400), (4, 800), (5, 1_000)],
        "attempts count up; delays double from the base and stop at the cap"
    );
    r.answer(id, internal_error());
    assert_eq!(r.retry(), None, "no sixth retry: {:?}", r.out);
    assert_eq!(r.ended(), Some(RefreshOutcome::Failed));
    r.step(ClientInput::RetryDue(Kind::Tools, A));
    assert!(!r.sent_anything(), "a late timer does nothing: {:?}", r.out);
}

#[test]
fn a_client_that_does_not_retry_ends_the_refresh_at_the_first_failure() {
    let mut r = MachineUnderTest::new(ClientStrategy::Naive, Limits::default(), Pacing::OFF);
    let id = r.first_page();
    r.answer(id, internal_error());
    assert!(r.failure().is_some());
    assert_eq!(r.retry(), None);
    assert_eq!(r.ended(), Some(RefreshOutcome::Failed));
}

#[test]
fn a_retry_timer_restarts_only_the_walk_it_was_armed_for_and_only_once() {
    let mut r = MachineUnderTest::new(ClientStrategy::Reference, Limits::default(), Pacing::OFF);
    let id = r.first_page();
    // A timer no failure armed, while the first walk waits for its page: nothing happens.
    r.step(ClientInput::RetryDue(Kind::Tools, A));
    assert!(!r.sent_anything(), "{:?}", r.out);
    assert_eq!(r.restarted(), None);
    r.answer(id, page(&["a=1"], None, Some(1)));
    assert!(r.published().is_some());
    // A change, and its walk fails: the retry is armed.
    r.notify();
    let id = r.first_page();
    r.answer(id, internal_error());
    assert!(r.marked_stale(), "the held list is marked stale once");
    assert_eq!(r.retry(), Some((1, 100)));
    // The connection drops before the timer fires: the timer finds no connection.
    r.step(ClientInput::Disconnected);
    r.step(ClientInput::RetryDue(Kind::Tools, A));
    assert!(
        !r.sent_anything(),
        "no request without a connection: {:?}",
        r.out
    );
}

#[test]
fn the_retry_walk_starts_from_the_first_page_and_a_second_failure_does_not_mark_again() {
    let mut r = MachineUnderTest::new(ClientStrategy::Reference, Limits::default(), Pacing::OFF);
    let id = r.first_page();
    r.answer(id, page(&["a=1"], None, Some(1)));
    r.notify();
    let id = r.first_page();
    r.answer(id, page(&["a=1"], Some("p2"), Some(2)));
    let id = r.next_page("p2");
    r.answer(id, internal_error());
    assert!(r.marked_stale());
    r.step(ClientInput::RetryDue(Kind::Tools, A));
    assert_eq!(r.restarted(), Some(Restart::Retry));
    let id = r.first_page();
    r.step(ClientInput::RetryDue(Kind::Tools, A));
    assert!(!r.sent_anything(), "the timer fired once: {:?}", r.out);
    r.answer(id, internal_error());
    assert!(!r.marked_stale(), "already stale: {:?}", r.out);
    assert_eq!(r.retry(), Some((2, 200)));
}

// --- Bounds on a walk ----------------------------------------------------------------------

fn bounded(max_pages: u32, max_items: u32) -> MachineUnderTest {
    let limits = Limits {
        max_pages,
        max_items,
        max_retries: 0,
        ..Limits::default()
    };
    MachineUnderTest::new(ClientStrategy::Reference, limits, Pacing::OFF)
}

#[test]
fn a_walk_of_exactly_max_pages_and_max_items_is_published() {
    let mut r = bounded(2, 3);
    let id = r.first_page();
    r.answer(id, page(&["a=1", "b=1"], Some("p2"), Some(1)));
    let id = r.next_page("p2");
    r.answer(id, page(&["c=1"], None, Some(1)));
    assert_eq!(r.failure(), None, "{:?}", r.out);
    assert_eq!(
        r.published(),
        Some(vec!["a=1".into(), "b=1".into(), "c=1".into()])
    );
}

#[test]
fn one_page_more_than_max_pages_fails_the_walk() {
    let mut r = bounded(2, 100);
    let id = r.first_page();
    r.answer(id, page(&["a=1"], Some("p2"), Some(1)));
    let id = r.next_page("p2");
    r.answer(id, page(&["b=1"], Some("p3"), Some(1)));
    let id = r.next_page("p3");
    r.answer(id, page(&["c=1"], None, Some(1)));
    assert_eq!(r.failure(), Some(&ClientError::TooManyPages(2)));
    assert_eq!(r.published(), None);
}

#[test]
fn items_are_counted_across_pages() {
    let mut r = bounded(10, 2);
    let id = r.first_page();
    r.answer(id, page(&["a=1", "b=1"], Some("p2"), Some(1)));
    let id = r.next_page("p2");
    r.answer(id, page(&["c=1"], None, Some(1)));
    assert_eq!(r.failure(), Some(&ClientError::TooManyItems(2)));
    assert_eq!(r.published(), None);
}

#[test]
fn a_cursor_seen_twice_in_one_walk_fails_it() {
    let mut r = bounded(10, 100);
    let id = r.first_page();
    r.answer(id, page(&["a=1"], Some("x"), Some(1)));
    let id = r.next_page("x");
    r.answer(id, page(&["b=1"], Some("x"), Some(1)));
    assert_eq!(
        r.failure(),
        Some(&ClientError::CursorCycle(Cursor("x".into())))
    );
}

#[test]
fn a_page_of_another_list_is_an_unexpected_response() {
    let mut r = bounded(10, 100);
    let id = r.first_page();
    r.answer(id, page_of(Kind::Prompts, &["a=1"], None, Some(1), Some(1)));
    assert!(
        matches!(r.failure(), Some(ClientError::UnexpectedResponse(_))),
        "{:?}",
        r.out
    );
    assert_eq!(r.published(), None);
}

// --- Restarts ------------------------------------------------------------------------------

#[test]
fn a_refused_cursor_restarts_the_reference_walk_and_fails_a_naive_one() {
    let refused = || {
        Response::Error(RpcError {
            code: listsync_core::wire::INVALID_PARAMS,
            reason: ErrorReason::InvalidCursor,
        })
    };
    let mut r = bounded(10, 100);
    let id = r.first_page();
    r.answer(id, page(&["a=1"], Some("p2"), Some(1)));
    let id = r.next_page("p2");
    r.answer(id, refused());
    assert_eq!(r.restarted(), Some(Restart::InvalidCursor));
    assert_eq!(r.failure(), None);
    r.first_page();

    let mut n = MachineUnderTest::new(ClientStrategy::Naive, Limits::default(), Pacing::OFF);
    let id = n.first_page();
    n.answer(id, page(&["a=1"], Some("p2"), Some(1)));
    let id = n.next_page("p2");
    n.answer(id, refused());
    assert_eq!(n.restarted(), None);
    assert!(
        matches!(n.failure(), Some(ClientError::Rpc(e)) if e.reason == ErrorReason::InvalidCursor),
        "{:?}",
        n.out
    );
}

#[test]
fn a_later_page_from_another_version_or_catalog_restarts_the_walk() {
    for (version, catalog) in [(2, 1), (1, 2)] {
        let mut r = bounded(10, 100);
        let id = r.first_page();
        r.answer(id, page(&["a=1"], Some("p2"), Some(1)));
        let id = r.next_page("p2");
        r.answer(
            id,
            page_of(Kind::Tools, &["b=2"], None, Some(version), Some(catalog)),
        );
        assert_eq!(
            r.restarted(),
            Some(Restart::VersionChanged),
            "v{version} of catalog {catalog}: {:?}",
            r.out
        );
        assert_eq!(r.published(), None);
    }
}

// --- Which finished walk is published ------------------------------------------------------

/// A reference client holding `items` at `version` of `catalog` (no versions when None).
fn holding(items: &[&str], version: Option<u64>, catalog: u64) -> MachineUnderTest {
    let mut r = bounded(10, 100);
    let id = r.first_page();
    r.answer(
        id,
        page_of(Kind::Tools, items, None, version, Some(catalog)),
    );
    assert!(r.published().is_some());
    r
}

/// Walks the list once more after a change; the server answers `resp`.
fn walk_again(r: &mut MachineUnderTest, resp: Response) {
    r.notify();
    let id = r.first_page();
    r.answer(id, resp);
}

#[test]
fn the_same_list_again_is_not_published_again() {
    let mut r = holding(&["a=1"], Some(3), 1);
    walk_again(&mut r, page(&["a=1"], None, Some(3)));
    assert_eq!(r.published(), None, "{:?}", r.out);
    assert_eq!(r.ended(), Some(RefreshOutcome::Discarded));
    // Without versions, the same items are the same list.
    let mut r = holding(&["a=1"], None, 1);
    walk_again(&mut r, page(&["a=1"], None, None));
    assert_eq!(r.published(), None, "{:?}", r.out);
    assert_eq!(r.ended(), Some(RefreshOutcome::Discarded));
}

#[test]
fn an_older_version_does_not_overwrite_a_newer_one() {
    let mut r = holding(&["a=1"], Some(5), 1);
    walk_again(&mut r, page(&["a=0"], None, Some(3)));
    // Judged by what readers see: the snapshot still holds v5.
    assert_eq!(r.held(), Some((vec!["a=1".into()], Some(5))), "{:?}", r.out);
    assert_eq!(r.published(), None, "{:?}", r.out);
    walk_again(&mut r, page(&["a=2"], None, Some(6)));
    assert_eq!(r.held(), Some((vec!["a=2".into()], Some(6))), "{:?}", r.out);
}

#[test]
fn a_reconnection_to_a_lagging_node_of_the_same_catalog_does_not_roll_back() {
    let mut r = holding(&["a=5"], Some(5), 7);
    r.step(ClientInput::Disconnected);
    r.connect();
    let id = r.first_page();
    r.answer(id, page_of(Kind::Tools, &["a=3"], None, Some(3), Some(7)));
    // Judged by what readers see: the snapshot still holds v5.
    assert_eq!(r.held(), Some((vec!["a=5".into()], Some(5))), "{:?}", r.out);
    assert_eq!(r.published(), None, "{:?}", r.out);
}

#[test]
fn a_reconnection_to_a_restarted_server_takes_its_list_whatever_its_version() {
    let mut r = holding(&["a=5"], Some(5), 7);
    r.step(ClientInput::Disconnected);
    r.connect();
    let id = r.first_page();
    r.answer(id, page_of(Kind::Tools, &["b=1"], None, Some(1), Some(8)));
    assert_eq!(r.published(), Some(vec!["b=1".into()]), "{:?}", r.out);
}

// --- Pacing --------------------------------------------------------------------------------

/// A reference client with this pacing whose first walk (started at 0 ms) published `a=1`.
fn paced(pacing: Pacing) -> MachineUnderTest {
    let mut r = MachineUnderTest::new(ClientStrategy::Reference, Limits::default(), pacing);
    let id = r.first_page();
    r.answer(id, page(&["a=1"], None, Some(1)));
    r
}

/// A change at `ms`: the walk it causes is held; returns the pacing delay asked for.
fn change_at(r: &mut MachineUnderTest, ms: u64) -> Option<u32> {
    r.at(ms);
    r.notify();
    r.walk_delay()
}

/// The held walk starts at `ms` and the server answers it at once with `items` at `version`.
fn walk_at(r: &mut MachineUnderTest, ms: u64, items: &[&str], version: u64) {
    r.at(ms);
    r.step(ClientInput::WalkDue(Kind::Tools, A));
    let id = r.first_page();
    r.answer(id, page(items, None, Some(version)));
}

#[test]
fn the_adaptive_gap_is_four_smoothed_notification_intervals_from_the_last_walk_start() {
    let pacing = Pacing {
        coalesce: Coalesce::Adaptive(100),
        ..Pacing::OFF
    };
    // Far from 0 ms, so that absolute times are not mistaken for intervals.
    let t = 5_000;
    let mut r = paced(pacing);
    // The first change of a burst: no interval known yet, the walk may start at once.
    assert_eq!(change_at(&mut r, t + 10), Some(0));
    r.at(t + 10);
    r.step(ClientInput::WalkDue(Kind::Tools, A));
    let id = r.first_page();
    // A second change 10 ms later, while the walk runs: interval 10 ms.
    assert_eq!(
        change_at(&mut r, t + 20),
        None,
        "no second walk while one runs"
    );
    // The walk ends at +21: the next waits for 4 × 10 ms from the last start (+10): 29 ms.
    r.at(t + 21);
    r.answer(id, page(&["a=2"], None, Some(2)));
    assert_eq!(r.walk_delay(), Some(29), "{:?}", r.out);
    // A third change at +26, while that walk is held: interval (3 × 10 + 6) / 4 = 9 ms.
    assert_eq!(change_at(&mut r, t + 26), None);
    walk_at(&mut r, t + 50, &["a=3"], 3);
    // A fourth at +55: interval (3 × 9 + 29) / 4 = 14 ms, the gap 56 ms from +50: 51 ms.
    assert_eq!(change_at(&mut r, t + 55), Some(51));
    walk_at(&mut r, t + 106, &["a=4"], 4);
    // The gap never exceeds the knob: changes 90 ms apart (interval (3 × 14 + 51) / 4 = 23 ms,
    // then about 40 ms) would ask for more than 100 ms.
    assert_eq!(
        change_at(&mut r, t + 196),
        Some(0),
        "more than 4 intervals since the last change"
    );
}

/// A reference client with an adaptive gap of at most 100 ms, its list changed at `t` ms (far
/// from 0, so that absolute times are not mistaken for intervals) and walked at once.
fn adaptive_after_a_change_at(t: u64) -> MachineUnderTest {
    let mut r = paced(Pacing {
        coalesce: Coalesce::Adaptive(100),
        ..Pacing::OFF
    });
    assert_eq!(change_at(&mut r, t), Some(0));
    walk_at(&mut r, t, &["a=2"], 2);
    r
}

#[test]
fn the_adaptive_gap_is_capped_by_its_knob_and_forgets_changes_older_than_it() {
    let t = 5_000;
    let mut r = adaptive_after_a_change_at(t);
    // 60 ms later: interval 60 ms, gap min(240, 100) = 100 ms from the walk at +0.
    assert_eq!(change_at(&mut r, t + 60), Some(40));
    walk_at(&mut r, t + 100, &["a=3"], 3);
    // 150 ms after the last change: farther apart than the knob, not a burst.
    assert_eq!(change_at(&mut r, t + 210), Some(0));
}

#[test]
fn a_fixed_gap_counts_from_the_previous_walk_start() {
    let pacing = Pacing {
        coalesce: Coalesce::Gap(50),
        ..Pacing::OFF
    };
    let mut r = paced(pacing);
    assert_eq!(change_at(&mut r, 20), Some(30));
    assert_eq!(
        r.c.held_walks().collect::<Vec<_>>(),
        vec![(Kind::Tools, A, 50_000)],
        "the held walk is due when its timer fires (µs), which a driver that re-arms timers reads"
    );
    walk_at(&mut r, 50, &["a=2"], 2);
    assert!(r.c.held_walks().next().is_none(), "the walk started");
    assert_eq!(change_at(&mut r, 200), Some(0));
}

#[test]
fn an_endless_storm_backs_off_doubling_from_the_base_to_the_max() {
    let pacing = Pacing {
        coalesce: Coalesce::Off,
        storm_after: 2,
        storm_base_ms: 100,
        storm_max_ms: 400,
    };
    let mut r = paced(pacing);
    let mut now = 1_000;
    let mut delays = Vec::new();
    for _ in 0..7 {
        // Each change comes 1 ms after the last walk started, and the list never changes.
        let d = change_at(&mut r, now).expect("walks are held while pacing is on");
        delays.push(d);
        now += u64::from(d);
        walk_at(&mut r, now, &["a=1"], 1);
        now += 1;
    }
    assert_eq!(
        delays,
        vec![0, 0, 99, 199, 399, 399, 399],
        "two unchanged walks back to back, then 100, 200, 400 ms from the previous start"
    );
    // A walk that publishes ends the storm.
    let d = change_at(&mut r, now).expect("held");
    assert_eq!(d, 399);
    walk_at(&mut r, now + 399, &["a=2"], 2);
    assert_eq!(change_at(&mut r, now + 400), Some(0));
}

// --- Inputs from the driver: transport failures, timers, the application ---------------------

#[test]
fn a_client_knows_its_id_and_a_renumbered_copy_its_new_one() {
    let cfg = Arc::new(ClientConfig::tools(
        ClientStrategy::Reference,
        Era::V2025_11_25,
    ));
    let c = CatalogClient::new(7, cfg);
    assert_eq!(c.id(), 7);
    assert_eq!(c.with_id(3).id(), 3);
}

#[test]
fn a_failed_or_unreadable_page_request_fails_the_walk_and_arms_a_retry() {
    let mut r = MachineUnderTest::new(ClientStrategy::Reference, Limits::default(), Pacing::OFF);
    let id = r.first_page();
    r.step(ClientInput::RequestFailed(id, "timed out".into()));
    assert_eq!(
        r.failure(),
        Some(&ClientError::Transport("timed out".into()))
    );
    assert_eq!(r.retry(), Some((1, 100)));
    r.step(ClientInput::RetryDue(Kind::Tools, A));
    let id = r.first_page();
    r.step(ClientInput::InvalidResponse(id, "item 3: no name".into()));
    assert_eq!(
        r.failure(),
        Some(&ClientError::InvalidResponse("item 3: no name".into()))
    );
    assert_eq!(r.retry(), Some((2, 200)));
    // A failure of a request the client no longer waits for changes nothing.
    r.step(ClientInput::RequestFailed(id, "late".into()));
    assert_eq!(r.failure(), None, "{:?}", r.out);
}

#[test]
fn an_application_refresh_walks_at_once_when_connected_and_not_otherwise() {
    let pacing = Pacing {
        coalesce: Coalesce::Gap(1_000),
        ..Pacing::OFF
    };
    let mut r = paced(pacing);
    r.at(10);
    r.step(ClientInput::Refresh(Kind::Tools));
    assert_eq!(r.walk_delay(), None, "not held by pacing: {:?}", r.out);
    let id = r.first_page();
    r.answer(id, page(&["a=1"], None, Some(1)));
    r.step(ClientInput::Disconnected);
    r.step(ClientInput::Refresh(Kind::Tools));
    assert!(!r.sent_anything(), "{:?}", r.out);
}

#[test]
fn a_ttl_expiry_walks_only_a_kept_list_of_a_connected_client() {
    let mut r = paced(Pacing::OFF);
    r.step(ClientInput::TtlExpired(Kind::Prompts));
    assert!(!r.sent_anything(), "prompts are not kept: {:?}", r.out);
    r.step(ClientInput::TtlExpired(Kind::Tools));
    r.first_page();
    let mut r = paced(Pacing::OFF);
    r.step(ClientInput::Disconnected);
    r.step(ClientInput::TtlExpired(Kind::Tools));
    assert!(!r.sent_anything(), "{:?}", r.out);
}

#[test]
fn a_kept_list_is_due_for_a_ttl_refetch_only_with_a_ttl_when_idle_and_behind_the_server() {
    let r = paced(Pacing::OFF);
    assert!(
        r.c.ttl_due(2).is_empty(),
        "a list published without a ttl is never due, however far behind"
    );
    let mut r = MachineUnderTest::new(ClientStrategy::Reference, Limits::default(), Pacing::OFF);
    let id = r.first_page();
    let Response::Page(mut p) = page(&["a=1"], None, Some(1)) else {
        unreachable!()
    };
    p.ttl_ms = Some(1_000);
    r.answer(id, Response::Page(p));
    assert!(r.published().is_some(), "{:?}", r.out);
    assert!(r.c.ttl_due(1).is_empty(), "not behind the server's version");
    assert_eq!(
        r.c.ttl_due(2),
        vec![Kind::Tools],
        "behind, with a ttl, idle"
    );
    r.notify();
    r.first_page();
    assert!(r.c.ttl_due(2).is_empty(), "a walk is already running");
}

#[test]
fn a_cut_connection_marks_the_held_list_stale_once() {
    let mut r = paced(Pacing::OFF);
    r.step(ClientInput::Disconnected);
    assert!(r.marked_stale(), "{:?}", r.out);
    let mut r = MachineUnderTest::new(ClientStrategy::Reference, Limits::default(), Pacing::OFF);
    let id = r.first_page();
    r.answer(id, page(&["a=1"], None, Some(1)));
    r.notify();
    let id = r.first_page();
    r.answer(id, internal_error());
    assert!(r.marked_stale());
    r.step(ClientInput::Disconnected);
    assert!(!r.marked_stale(), "already stale: {:?}", r.out);
}

#[test]
fn a_context_switch_relists_under_the_new_context() {
    let mut r = paced(Pacing::OFF);
    r.step(ClientInput::SetAuth(AuthCtx(2)));
    assert_eq!(r.c.auth(), AuthCtx(2));
    let under: Vec<AuthCtx> = r
        .out
        .iter()
        .filter_map(|o| match o {
            ClientOutput::Send(ClientMsg {
                auth,
                req: Request::List { .. },
                ..
            }) => Some(*auth),
            _ => None,
        })
        .collect();
    assert_eq!(under, vec![AuthCtx(2)]);
}

// --- 2026-07-28: the listen stream -----------------------------------------------------------

/// A 2026-07-28 reference client of tools watching resource `r`, its listen stream
/// acknowledged as stream 1 and its first tools walk published.
fn listening() -> MachineUnderTest {
    let cfg = ClientConfig {
        watch: vec!["r".into()],
        pacing: Pacing::OFF,
        ..ClientConfig::tools(ClientStrategy::Reference, Era::V2026_07_28)
    };
    let mut r = MachineUnderTest::of(cfg);
    r.step(ClientInput::Start);
    r.request(|q| matches!(q, Request::Listen { .. }));
    ack(&mut r, 1);
    let id = r.first_page();
    r.answer(id, page(&["a=1"], None, Some(1)));
    assert!(r.published().is_some());
    r
}

fn ack(r: &mut MachineUnderTest, sub: u32) {
    r.step(ClientInput::Receive(ServerMsg::Notification(
        Notification::Acknowledged {
            sub,
            kinds: KindSet::only(Kind::Tools),
        },
    )));
}

fn updated(r: &mut MachineUnderTest, sub: Option<u32>) {
    r.step(ClientInput::Receive(ServerMsg::Notification(
        Notification::ResourceUpdated {
            uri: "r".into(),
            sub,
        },
    )));
}

#[test]
fn a_watched_resource_is_read_on_an_update_of_the_current_stream_only() {
    let mut r = listening();
    updated(&mut r, Some(2));
    assert!(!r.sent_anything(), "another stream's update: {:?}", r.out);
    updated(&mut r, Some(1));
    let id = r.request(|q| matches!(q, Request::ReadResource { .. }));
    r.answer(
        id,
        Response::Content {
            uri: "r".into(),
            text: "v2".into(),
        },
    );
    assert!(
        r.out
            .iter()
            .any(|o| matches!(o, ClientOutput::Content { text, .. } if &**text == "v2")),
        "{:?}",
        r.out
    );
    assert_eq!(r.c.contents().get("r").map(|t| &**t), Some("v2"));
    r.step(ClientInput::Disconnected);
    updated(&mut r, None);
    assert!(!r.sent_anything(), "not connected: {:?}", r.out);
}

#[test]
fn a_lost_stream_is_reopened_and_its_new_acknowledgement_relists_without_losing_a_walk() {
    let mut r = listening();
    r.notify_on(1);
    let walk = r.first_page();
    r.step(ClientInput::StreamLost);
    r.request(|q| matches!(q, Request::Listen { .. }));
    // The walk that was running still completes.
    r.answer(walk, page(&["a=2"], None, Some(2)));
    assert_eq!(r.published(), Some(vec!["a=2".into()]), "{:?}", r.out);
    ack(&mut r, 2);
    r.first_page();
    // A 2025-11-25 client has no stream to lose.
    let mut old = paced(Pacing::OFF);
    old.step(ClientInput::StreamLost);
    assert!(!old.sent_anything(), "{:?}", old.out);
    // Nor does a client that is not connected.
    let mut r = listening();
    r.step(ClientInput::Disconnected);
    r.step(ClientInput::StreamLost);
    assert!(!r.sent_anything(), "{:?}", r.out);
}

// --- Approvals -------------------------------------------------------------------------------

/// A fixed gap of 100 ms between walk starts.
const GAP_100: Pacing = Pacing {
    coalesce: Coalesce::Gap(100),
    ..Pacing::OFF
};

/// A reference client that asks approval, holding tool `t` (with side effects) at definition
/// `t1`, approved, with `max_retries` retries of a failed refresh.
fn approving(max_retries: u8) -> MachineUnderTest {
    approving_paced(max_retries, Pacing::OFF)
}

/// [`approving`] with this pacing; its first walk started at 0 ms.
fn approving_paced(max_retries: u8, pacing: Pacing) -> MachineUnderTest {
    let cfg = ClientConfig {
        ask_approval: true,
        pacing,
        limits: Limits {
            max_retries,
            ..Limits::default()
        },
        ..ClientConfig::tools(ClientStrategy::Reference, Era::V2025_11_25)
    };
    let mut r = MachineUnderTest::of(cfg);
    r.connect();
    let id = r.first_page();
    r.answer(id, page(&["t=t1"], None, Some(1)));
    r.step(ClientInput::Approve("t".into()));
    assert!(!r.c.approval_outdated());
    r
}

fn call_result(r: &MachineUnderTest) -> Option<Result<String, CallError>> {
    r.out.iter().find_map(|o| match o {
        ClientOutput::CallDone { result, .. } => Some(result.clone().map(|d| d.to_string())),
        _ => None,
    })
}

/// The last step refused the held or new call: the tool list is known to be out of date.
fn refused_as_out_of_date(r: &MachineUnderTest) {
    assert_eq!(
        call_result(r),
        Some(Err(CallError::ListOutOfDate)),
        "{:?}",
        r.out
    );
}

#[test]
fn a_call_held_for_a_change_fails_as_out_of_date_when_the_walk_after_it_fails_for_good() {
    let mut r = approving(0);
    r.notify();
    let id = r.first_page();
    r.step(ClientInput::CallTool("t".into()));
    assert_eq!(r.c.paused_calls(), 1, "held while the list is unsettled");
    r.answer(id, internal_error());
    refused_as_out_of_date(&r);
    // Told of a further change with no walk able to follow (the list keeps failing): a new
    // call is refused at once rather than held for ever.
    r.notify();
    let id = r.first_page();
    r.answer(id, internal_error());
    r.step(ClientInput::CallTool("t".into()));
    refused_as_out_of_date(&r);
    assert_eq!(r.c.paused_calls(), 0);
}

/// The call the last step held is neither refused nor sent; the walk held by pacing runs at
/// `ms` and shows the approved definition, and the call goes out.
fn goes_out_after_the_held_walk(r: &mut MachineUnderTest, ms: u64) {
    assert_eq!(call_result(r), None, "held, not refused: {:?}", r.out);
    assert_eq!(r.c.paused_calls(), 1);
    walk_at(r, ms, &["t=t1"], 2);
    r.request(|q| matches!(q, Request::CallTool { .. }));
}

/// [`approving`] with a 100 ms gap between walks: at 200 ms a change, whose walk is due at once
/// and runs (the id of its page request is returned), and a call held for it.
fn a_call_held_for_the_walk_after_a_change() -> (MachineUnderTest, ReqId) {
    let mut r = approving_paced(0, GAP_100);
    r.at(200);
    r.notify();
    assert_eq!(r.walk_delay(), Some(0));
    r.step(ClientInput::WalkDue(Kind::Tools, A));
    let id = r.first_page();
    r.step(ClientInput::CallTool("t".into()));
    assert_eq!(r.c.paused_calls(), 1);
    (r, id)
}

#[test]
fn a_call_held_for_a_change_waits_for_the_walk_after_a_later_change_when_its_own_walk_fails() {
    let (mut r, id) = a_call_held_for_the_walk_after_a_change();
    // A further change while it runs, then the walk fails for good: the walk after the later
    // change is coming (held by the gap), and the call waits for that one.
    r.at(210);
    r.notify();
    r.answer(id, internal_error());
    assert_eq!(r.walk_delay(), Some(90), "{:?}", r.out);
    goes_out_after_the_held_walk(&mut r, 300);
}

#[test]
fn a_call_held_for_a_change_fails_when_the_walk_after_it_fails_though_an_asked_walk_is_held() {
    let (mut r, id) = a_call_held_for_the_walk_after_a_change();
    // The application asks for the list while the walk runs (no change is told), then the
    // walk after the change fails for good: the asked walk is coming (held by the gap), but
    // what the call waited for, the list after the change, failed, so the call fails now.
    r.at(210);
    r.step(ClientInput::Refresh(Kind::Tools));
    assert!(!r.sent_anything(), "{:?}", r.out);
    r.answer(id, internal_error());
    assert_eq!(r.walk_delay(), Some(90), "{:?}", r.out);
    refused_as_out_of_date(&r);
    assert_eq!(r.c.paused_calls(), 0);
}

#[test]
fn a_call_held_for_a_change_goes_out_after_a_retried_walk_shows_the_approved_definition() {
    let mut r = approving(1);
    r.notify();
    let id = r.first_page();
    r.step(ClientInput::CallTool("t".into()));
    r.answer(id, internal_error());
    assert_eq!(call_result(&r), None, "a retry is coming: {:?}", r.out);
    assert_eq!(r.c.paused_calls(), 1);
    r.step(ClientInput::RetryDue(Kind::Tools, A));
    let id = r.first_page();
    r.answer(id, page(&["t=t1"], None, Some(2)));
    r.request(|q| matches!(q, Request::CallTool { .. }));
}

#[test]
fn a_call_told_of_a_change_whose_walk_is_held_by_pacing_waits_for_it() {
    let mut r = approving_paced(0, GAP_100);
    // The walk after the change is held back by the gap: none runs, but one is coming.
    r.at(10);
    r.notify();
    assert_eq!(r.walk_delay(), Some(90));
    r.step(ClientInput::CallTool("t".into()));
    goes_out_after_the_held_walk(&mut r, 100);
}

#[test]
fn an_approval_is_outdated_once_the_list_shows_another_definition() {
    let mut r = approving(0);
    walk_again(&mut r, page(&["t=t2"], None, Some(2)));
    assert!(r.published().is_some());
    assert!(r.c.approval_outdated());
    r.step(ClientInput::CallTool("t".into()));
    assert_eq!(call_result(&r), Some(Err(CallError::NeedsApproval)));
}

/// A tools page of `items`, the last one, at `version` of catalog 1, with this `ttlMs`.
fn page_with_ttl(items: &[&str], version: u64, ttl_ms: u32) -> Response {
    let Response::Page(mut p) = page(items, None, Some(version)) else {
        unreachable!()
    };
    p.ttl_ms = Some(ttl_ms);
    Response::Page(p)
}

#[test]
fn a_discarded_walk_refreshes_the_held_list_s_ttl_only_if_it_is_the_same_list() {
    let mut r = bounded(10, 100);
    let id = r.first_page();
    r.answer(id, page_with_ttl(&["a=1"], 5, 1_000));
    let ttl = |r: &MachineUnderTest| r.c.snapshot(Kind::Tools).and_then(|s| s.ttl_ms);
    assert_eq!(ttl(&r), Some(1_000));
    // An older walk of the same items: discarded, and its ttlMs is not the held list's.
    walk_again(&mut r, page_with_ttl(&["a=1"], 3, 50));
    assert_eq!(r.ended(), Some(RefreshOutcome::Discarded));
    assert_eq!(ttl(&r), Some(1_000));
    // The same list again: discarded, and the held list takes the new ttlMs.
    walk_again(&mut r, page_with_ttl(&["a=1"], 5, 2_000));
    assert_eq!(r.ended(), Some(RefreshOutcome::Discarded));
    assert_eq!(ttl(&r), Some(2_000));
}

/// The first page of a two-page walk after a change, at version 2, its cursors declared
/// version-bound or not; returns the continuation request's id.
fn mid_walk(r: &mut MachineUnderTest, version_bound: bool) -> ReqId {
    r.notify();
    let id = r.first_page();
    let Response::Page(mut p) = page(&["a=2"], Some("p2"), Some(2)) else {
        unreachable!()
    };
    p.version_bound = version_bound;
    r.answer(id, Response::Page(p));
    r.next_page("p2")
}

#[test]
fn a_change_mid_walk_restarts_it_at_once_unless_the_server_binds_its_cursors_to_a_version() {
    // Versions on every page, but no promise about the cursors: the pages in hand may predate
    // the change, so the walk starts over now.
    let mut r = bounded(10, 100);
    let id = r.first_page();
    r.answer(id, page(&["a=1"], None, Some(1)));
    mid_walk(&mut r, false);
    r.notify();
    assert_eq!(r.restarted(), Some(Restart::NotifiedMidWalk), "{:?}", r.out);
    r.first_page();
    // Version-bound cursors: the walk cannot be torn; it finishes, then the list is walked
    // once more.
    let mut r = bounded(10, 100);
    let id = r.first_page();
    r.answer(id, page(&["a=1"], None, Some(1)));
    let next = mid_walk(&mut r, true);
    r.notify();
    assert_eq!(r.restarted(), None, "{:?}", r.out);
    assert!(!r.sent_anything());
    let Response::Page(mut p) = page(&["b=2"], None, Some(2)) else {
        unreachable!()
    };
    p.version_bound = true;
    r.answer(next, Response::Page(p));
    assert_eq!(r.published(), Some(vec!["a=2".into(), "b=2".into()]));
    r.first_page();
}

#[test]
fn the_adaptive_gap_ends_with_the_burst() {
    let t = 5_000;
    let mut r = adaptive_after_a_change_at(t);
    // A burst: 10 ms apart, so walks 40 ms apart.
    assert_eq!(change_at(&mut r, t + 10), Some(30));
    walk_at(&mut r, t + 40, &["a=3"], 3);
    // The application walks at +60.
    r.at(t + 60);
    r.step(ClientInput::Refresh(Kind::Tools));
    let id = r.first_page();
    r.answer(id, page(&["a=3"], None, Some(3)));
    // A TTL runs out at +65: 55 ms after the last notification, more than four intervals, so
    // the burst is over and the walk starts at once, though the last walk began 5 ms ago.
    r.at(t + 65);
    r.step(ClientInput::TtlExpired(Kind::Tools));
    assert_eq!(r.walk_delay(), Some(0), "{:?}", r.out);
}

#[test]
fn a_storm_back_off_set_to_start_after_zero_walks_is_off() {
    let pacing = Pacing {
        coalesce: Coalesce::Gap(10),
        storm_after: 0,
        storm_base_ms: 100,
        storm_max_ms: 400,
    };
    let mut r = paced(pacing);
    assert_eq!(change_at(&mut r, 5), Some(5), "the fixed gap alone");
}

/// The kinds of the list requests the last step sent.
fn listed(r: &MachineUnderTest) -> Vec<Kind> {
    r.out
        .iter()
        .filter_map(|o| match o {
            ClientOutput::Send(ClientMsg {
                req: Request::List { kind, .. },
                ..
            }) => Some(*kind),
            _ => None,
        })
        .collect()
}

/// The kinds of the listen request the last step sent.
fn listened(r: &MachineUnderTest) -> KindSet {
    let id = r.request(|q| matches!(q, Request::Listen { .. }));
    r.out
        .iter()
        .find_map(|o| match o {
            ClientOutput::Send(ClientMsg {
                id: sent,
                req: Request::Listen { kinds, .. },
                ..
            }) if *sent == id => Some(*kinds),
            _ => None,
        })
        .expect("the listen request")
}

/// The lists a client keeps on its own are the configured ones the server offers: a client of
/// every list, told that the server declares tools only, asks for tools only — at start-up,
/// when the authorization context switches, and (2026-07-28) on its listen stream — so a
/// server without prompts or resources is not asked for lists it refuses (and retried for
/// ever); an application's explicit refresh of prompts is still sent. Told nothing, a client
/// lists everything it is configured for.
#[test]
fn only_the_lists_the_server_offers_are_kept() {
    let every = |era| ClientConfig {
        kinds: Kind::ALL.into_iter().collect(),
        ..ClientConfig::tools(ClientStrategy::Reference, era)
    };
    let tools = KindSet::only(Kind::Tools);

    let mut r = MachineUnderTest::of(every(Era::V2025_11_25));
    r.step(ClientInput::Offers(tools));
    r.connect();
    assert_eq!(listed(&r), vec![Kind::Tools], "{:?}", r.out);
    r.step(ClientInput::SetAuth(AuthCtx(1)));
    assert!(listed(&r).iter().all(|k| *k == Kind::Tools), "{:?}", r.out);
    r.step(ClientInput::Refresh(Kind::Prompts));
    assert_eq!(listed(&r), vec![Kind::Prompts], "{:?}", r.out);

    let mut r = MachineUnderTest::of(every(Era::V2025_11_25));
    r.connect();
    let mut all = listed(&r);
    all.sort();
    assert_eq!(all, Kind::ALL.to_vec(), "{:?}", r.out);

    let mut only_tools = MachineUnderTest::of(ClientConfig::tools(
        ClientStrategy::Reference,
        Era::V2026_07_28,
    ));
    only_tools.step(ClientInput::Start);
    let mut r = MachineUnderTest::of(every(Era::V2026_07_28));
    r.step(ClientInput::Offers(tools));
    r.step(ClientInput::Start);
    assert_eq!(listened(&r), listened(&only_tools));
    let mut told_nothing = MachineUnderTest::of(every(Era::V2026_07_28));
    told_nothing.step(ClientInput::Start);
    assert_ne!(listened(&told_nothing), listened(&only_tools));
}
