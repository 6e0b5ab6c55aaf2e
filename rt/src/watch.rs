//! Watching a server with the reference client (what `listsync watch` runs): a
//! [`ClientHandle`] on an [`Endpoint`], each change of its snapshots said as one line with the
//! catalog version behind it (a line identical to the last one said for that list is not said
//! again), every failure (connecting, listing) and every retry it schedules said as it happens,
//! and the end of the run decided: giving up after [`Retry::Times`] failed attempts in a row,
//! or stopping on Ctrl-C, on `shutdown` from the harness control channel, or when a stdio
//! connection ends. With a control socket the harness control channel (client role) is served
//! too, and every notice is forwarded to it. With [`WatchOptions::approvals`] the tools line
//! marks what a user would have to approve (docs/design.md, "Approval is never inherited").
//!
//! With several servers ([`Watched::Many`]) it runs one client per server under the key the
//! application configured for it ([`Servers`]): the tools line is the combined listing
//! (`tools AUTH KEY=vVERSION... (N items): KEY__tool, ...`), said again whenever any member's
//! tools change; every other list and every diagnostic is said per member, prefixed `KEY: `.
//! One member giving up ends the run. The control channel serves one client, so it is refused
//! with several servers.

use crate::client::{
    ClientHandle, ClientNotice, ClientSettings, ClientStatus, Endpoint, Servers, View,
};
#[cfg(feature = "harness")]
use crate::control::{self, ReadyInfo};
use listsync_core::aggregate::{self, Member};
use listsync_core::client::Pacing;
use listsync_core::history::{Event, RefreshOutcome};
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{
    AuthCtx, Era, Item, Kind, KindSet, Name, declares_read_only, fingerprint,
};
#[cfg(feature = "harness")]
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How many failed attempts in a row the client makes before it gives up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// Retries after a failure, then give up.
    Times(u8),
    /// Never give up.
    Forever,
}

impl std::str::FromStr for Retry {
    type Err = String;
    fn from_str(s: &str) -> Result<Retry, String> {
        match s {
            "forever" => Ok(Retry::Forever),
            n => n.parse::<u8>().map(Retry::Times).map_err(|_| {
                format!("'{n}' is neither a number of retries (0..=255) nor 'forever'")
            }),
        }
    }
}

/// Which server, or servers, to watch.
#[derive(Clone, Debug)]
pub enum Watched {
    /// One server.
    One(Endpoint),
    /// Several servers, each under the key the application configured for it (checked as
    /// [`listsync_core::aggregate::check_members`] checks keys), in this order.
    Many(Vec<(String, Endpoint)>),
}

/// What to watch and how.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// Protocol era.
    pub era: Era,
    /// Client strategy. With several servers it is also the prefixing strategy of the combined
    /// listing; `prefix-from-server-info` keeps each member's lists as `reference` does.
    pub strategy: ClientStrategy,
    /// Where the server (or servers) are.
    pub watched: Watched,
    /// Lists kept.
    pub kinds: KindSet,
    /// Authorization context to start in.
    pub auth: AuthCtx,
    /// Bearer token presented for `auth` over HTTP.
    pub bearer: Option<String>,
    /// Failed attempts in a row before giving up.
    pub retry: Retry,
    /// Longest wait for a connection (with its handshake) and for each request.
    pub timeout: Duration,
    /// Pacing of the walks notifications cause.
    pub pacing: Pacing,
    /// Unix socket of the harness control channel (one server only).
    pub control: Option<PathBuf>,
    /// Mark, on the tools line, each tool with side effects a user would have to approve:
    /// `[approve]` the first time it is listed, `[re-approve]` when its definition differs from
    /// the one last listed (a changed tool, or a new tool under a removed one's name).
    pub approvals: bool,
}

/// One line `watch` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Said {
    /// A list changed: `KIND AUTH vVERSION (N items)[ stale]: NAMES`.
    Change(String),
    /// A failure, a retry, a warning, or why the run ended.
    Diagnostic(String),
}

/// How the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Stopped on request (Ctrl-C, `shutdown`) or because the stdio connection ended.
    Stopped,
    /// Gave up after its failed attempts.
    GaveUp,
}

/// The change line of a list, `None` before its first listing; `names` (if given) replaces the
/// plain item names.
fn change_line(kind: Kind, view: &View, names: Option<Vec<String>>) -> Option<String> {
    if !view.fetched {
        return None;
    }
    let names = names.unwrap_or_else(|| view.names());
    Some(format!(
        "{} {} v{} ({} items){}: {}",
        kind,
        view.auth,
        view.version.map_or("-".to_owned(), |v| v.to_string()),
        view.items.len(),
        if view.is_stale() { " stale" } else { "" },
        names.join(", ")
    ))
}

/// What a user has been shown of each tool with side effects, per authorization context: the
/// fingerprint of the definition last listed (kept after a removal, so a new tool under the name
/// is compared with it).
#[derive(Default)]
struct Shown(BTreeMap<(AuthCtx, Name), u64>);

impl Shown {
    /// The names of a tools listing, each tool with side effects marked `[approve]` the first
    /// time it is shown and `[re-approve]` when its definition differs from the one last shown.
    fn mark(&mut self, auth: AuthCtx, items: &[Item]) -> Vec<String> {
        items
            .iter()
            .map(|i| {
                if declares_read_only(&i.def) {
                    return i.name.to_string();
                }
                let fp = fingerprint(&i.def);
                match self.0.insert((auth, i.name.clone()), fp) {
                    None => format!("{} [approve]", i.name),
                    Some(before) if before != fp => format!("{} [re-approve]", i.name),
                    Some(_) => i.name.to_string(),
                }
            })
            .collect()
    }
}

fn ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

/// Counts failed listings per list and words each notice.
struct Notices {
    retry: Retry,
    failures: BTreeMap<Kind, u32>,
    /// The connection is lost (until the next one opens): the refreshes that end meanwhile
    /// ended with it, and reconnecting (not listing) decides whether to give up.
    lost: bool,
}

impl Notices {
    fn new(retry: Retry) -> Notices {
        Notices {
            retry,
            failures: BTreeMap::new(),
            lost: false,
        }
    }

    /// The diagnostic of a notice, if it has one, and the reason to give up, if it is one.
    fn word(&mut self, n: &ClientNotice) -> (Option<String>, Option<String>) {
        let said = match n {
            ClientNotice::ConnectFailed { why } => {
                self.lost = true;
                format!("cannot connect: {why}")
            }
            ClientNotice::Negotiated { .. } => {
                self.lost = false;
                return (None, None);
            }
            ClientNotice::GaveUp { retries: 0, why } => {
                return (
                    None,
                    Some(format!("giving up (no reconnect allowed): {why}")),
                );
            }
            ClientNotice::GaveUp { retries, why } => {
                return (
                    None,
                    Some(format!(
                        "giving up after {retries} failed reconnects in a row; last error: {why}"
                    )),
                );
            }
            ClientNotice::ReconnectScheduled { attempt, of, delay } => match of {
                Some(of) => format!("reconnecting in {} (attempt {attempt} of {of})", ms(*delay)),
                None => format!("reconnecting in {} (attempt {attempt})", ms(*delay)),
            },
            ClientNotice::Disconnected { why } => {
                self.lost = true;
                format!("disconnected: {why}; the lists shown are stale until it is back")
            }
            ClientNotice::RefreshFailed { kind, error } => {
                *self.failures.entry(*kind).or_default() += 1;
                format!("{kind}: listing failed: {error}")
            }
            ClientNotice::RetryScheduled {
                kind,
                attempt,
                of,
                delay,
            } => format!("{kind}: retry {attempt} of {of} in {}", ms(*delay)),
            ClientNotice::Warning(w) => format!("warning: {w}"),
            ClientNotice::NotOffered { kinds, offered } if offered.is_empty() => {
                return (
                    None,
                    Some(format!(
                        "giving up: the server offers none of the lists watched ({kinds}): its handshake declares no capability for them"
                    )),
                );
            }
            ClientNotice::NotOffered { kinds, .. } => format!(
                "{kinds}: not offered by the server (its handshake declares no capability for them); not watched"
            ),
            ClientNotice::NotificationsDropped { count } => {
                format!("{count} notifications dropped (too many distinct ones pending)")
            }
            ClientNotice::Claimed(Event::RefreshEnded { kind, outcome, .. }) => {
                if *outcome != RefreshOutcome::Failed {
                    self.failures.remove(kind);
                    return (None, None);
                }
                let n = self.failures.get(kind).copied().unwrap_or(0);
                if self.lost || n == 0 {
                    // It ended with the connection (or failed no listing of its own): the
                    // reconnect lists it again, and gives up by its own count.
                    return (None, None);
                }
                if self.retry != Retry::Forever {
                    return (
                        None,
                        Some(format!("{kind}: giving up after {n} failed attempts")),
                    );
                }
                format!(
                    "{kind}: still failing after {n} attempts; trying again on the next change notification"
                )
            }
            _ => return (None, None),
        };
        (Some(said), None)
    }
}

/// The settings of one client `watch` runs, reporting to `observer`.
fn settings(
    opts: &WatchOptions,
    strategy: ClientStrategy,
    observer: mpsc::UnboundedSender<ClientNotice>,
) -> ClientSettings {
    let mut settings = ClientSettings::new(opts.era, opts.kinds);
    settings.client.strategy = strategy;
    settings.client.auth = opts.auth;
    settings.client.pacing = opts.pacing;
    settings.observer = Some(observer);
    settings.connect_timeout = opts.timeout;
    settings.request_timeout = opts.timeout;
    match opts.retry {
        Retry::Times(n) => {
            settings.max_reconnects = Some(u32::from(n));
            settings.client.limits.max_retries = n;
        }
        Retry::Forever => {
            settings.max_reconnects = None;
            settings.client.limits.max_retries = u8::MAX;
        }
    }
    if let Some(token) = &opts.bearer {
        settings.bearer.insert(opts.auth, token.clone());
    }
    settings
}

/// Runs the client (or clients) until it stops or gives up, saying each line through `say` as
/// it happens. Fails only when the control socket cannot be reached, or (several servers) when
/// a key is invalid or a control socket is given.
pub async fn watch(opts: WatchOptions, say: &mut dyn FnMut(Said)) -> std::io::Result<Ended> {
    match opts.watched.clone() {
        Watched::One(endpoint) => watch_one(opts, endpoint, say).await,
        Watched::Many(members) => watch_many(opts, members, say).await,
    }
}

async fn watch_one(
    opts: WatchOptions,
    endpoint: Endpoint,
    say: &mut dyn FnMut(Said),
) -> std::io::Result<Ended> {
    let (ntx, mut nrx) = mpsc::unbounded_channel();
    let settings = settings(&opts, opts.strategy, ntx);
    #[cfg_attr(not(feature = "harness"), allow(unused_variables))]
    let WatchOptions {
        era,
        strategy,
        kinds,
        retry,
        control: control_path,
        approvals,
        ..
    } = opts;
    // The control channel first: no event may be lost.
    let channel = match &control_path {
        #[cfg(feature = "harness")]
        Some(path) => Some(control::connect_client(path).await.map_err(|e| {
            std::io::Error::new(e.kind(), format!("control socket {}: {e}", path.display()))
        })?),
        #[cfg(not(feature = "harness"))]
        Some(path) => return Err(crate::no_control_channel(path)),
        None => None,
    };
    #[cfg(not(feature = "harness"))]
    let channel: Option<std::convert::Infallible> = channel;
    let stdio = matches!(endpoint, Endpoint::Stdio);
    let catalog = ClientHandle::spawn(settings, endpoint);
    let stop = CancellationToken::new();
    // Notices are said below and, with a control channel, sent to the harness too.
    let (ctl_tx, outbox): (
        Option<mpsc::UnboundedSender<ClientNotice>>,
        Option<tokio::task::JoinHandle<listsync_control::Outbox>>,
    ) = match channel {
        #[cfg(feature = "harness")]
        Some(channel) => {
            let (tx, rx) = mpsc::unbounded_channel();
            let info = ReadyInfo {
                role: "client",
                era,
                variant: strategy.to_string(),
                extra: json!({ "kinds": kinds }),
            };
            let task = tokio::spawn(control::run_client(
                channel,
                catalog.clone(),
                rx,
                info,
                stop.clone(),
            ));
            (Some(tx), Some(task))
        }
        None => (None, None),
    };

    let mut last: BTreeMap<Kind, String> = BTreeMap::new();
    let mut shown = Shown::default();
    let mut notices = Notices::new(retry);
    let mut changes = catalog.changes();
    // A snapshot published before this subscription is not a change to it: say the lists as
    // they are now once, then every change.
    changes.mark_changed();
    let mut status = catalog.status();
    let mut ended = Ended::Stopped;
    loop {
        tokio::select! {
            // Notices first: the client's last failure is said before the line that ends.
            biased;
            Some(n) = nrx.recv() => {
                let (said, give_up) = notices.word(&n);
                if let Some(line) = said {
                    say(Said::Diagnostic(line));
                }
                if let Some(tx) = &ctl_tx {
                    let _ = tx.send(n);
                }
                if let Some(why) = give_up {
                    say(Said::Diagnostic(why));
                    ended = Ended::GaveUp;
                    break;
                }
            }
            r = changes.changed() => {
                if r.is_err() { break; }
                changes.borrow_and_update();
                for kind in kinds.iter() {
                    let view = catalog.list(kind);
                    if let Some(line) = change_line(kind, &view, None)
                        && last.get(&kind) != Some(&line)
                    {
                        let marked = (approvals && kind == Kind::Tools)
                            .then(|| {
                                let names = shown.mark(view.auth, &view.items);
                                change_line(kind, &view, Some(names))
                            })
                            .flatten();
                        say(Said::Change(marked.unwrap_or_else(|| line.clone())));
                        last.insert(kind, line);
                    }
                }
            }
            r = status.wait_for(|s| s.ended) => {
                // Notices the client sent as it ended are said before the last line.
                let mut gave_up = false;
                while let Ok(n) = nrx.try_recv() {
                    let (said, give_up) = notices.word(&n);
                    if let Some(line) = said {
                        say(Said::Diagnostic(line));
                    }
                    if let Some(why) = give_up {
                        say(Said::Diagnostic(why));
                        ended = Ended::GaveUp;
                        gave_up = true;
                    }
                }
                if !gave_up && let Ok(s) = r && let Some(e) = &s.last_error {
                    if stdio {
                        say(Said::Diagnostic(format!("stopped: {e}")));
                    } else {
                        say(Said::Diagnostic(format!("giving up: {e}")));
                        ended = Ended::GaveUp;
                    }
                }
                break;
            }
            _ = stop.cancelled() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    catalog.shutdown();
    if let Some(task) = outbox
        && let Ok(Ok(out)) = tokio::time::timeout(Duration::from_secs(2), task).await
    {
        let _ = tokio::time::timeout(Duration::from_secs(2), out.flush()).await;
    }
    Ok(ended)
}

/// What one member's forwarding task reports to [`watch_many`].
enum FromMember {
    Notice(ClientNotice),
    Changed,
    Ended(ClientStatus),
}

/// Forwards member `i`'s notices, snapshot changes and end to `tx`, in that priority (its
/// last failure reaches `tx` before its end).
fn forward(
    i: usize,
    handle: &ClientHandle,
    mut notices: mpsc::UnboundedReceiver<ClientNotice>,
    tx: mpsc::UnboundedSender<(usize, FromMember)>,
) {
    let mut changes = handle.changes();
    // A snapshot published before this subscription is not a change to it: say it once.
    changes.mark_changed();
    let mut status = handle.status();
    tokio::spawn(async move {
        loop {
            let m = tokio::select! {
                biased;
                Some(n) = notices.recv() => FromMember::Notice(n),
                r = changes.changed() => {
                    if r.is_err() {
                        break;
                    }
                    changes.borrow_and_update();
                    FromMember::Changed
                }
                r = status.wait_for(|s| s.ended) => {
                    let Ok(s) = r.map(|s| s.clone()) else { break };
                    while let Ok(n) = notices.try_recv() {
                        let _ = tx.send((i, FromMember::Notice(n)));
                    }
                    let _ = tx.send((i, FromMember::Ended(s)));
                    break;
                }
            };
            if tx.send((i, m)).is_err() {
                break;
            }
        }
    });
}

/// The combined tools line, `None` before any member has listed its tools:
/// `tools AUTH KEY=vVERSION... (N items)[ stale]: NAMES` (`v-`: not listed yet, or no
/// version); `marks` (if given) marks the names as [`Shown::mark`] does.
fn combined_line(servers: &Servers, marks: Option<&mut Shown>) -> Option<String> {
    let views: Vec<(&str, std::sync::Arc<View>)> =
        servers.handles().map(|(k, h)| (k, h.tools())).collect();
    let auth = views.iter().find(|(_, v)| v.fetched)?.1.auth;
    let versions: Vec<String> = views
        .iter()
        .map(|(k, v)| match v.version.filter(|_| v.fetched) {
            Some(n) => format!("{k}=v{n}"),
            None => format!("{k}=v-"),
        })
        .collect();
    let stale = views.iter().any(|(_, v)| v.fetched && v.is_stale());
    let listing = servers.listing();
    let names = match marks {
        Some(shown) => {
            let items: Vec<Item> = listing
                .iter()
                .map(|e| Item {
                    name: e.name.clone(),
                    ..e.item.clone()
                })
                .collect();
            shown.mark(auth, &items)
        }
        None => listing.iter().map(|e| e.name.to_string()).collect(),
    };
    Some(format!(
        "{} {} {} ({} items){}: {}",
        Kind::Tools,
        auth,
        versions.join(" "),
        listing.len(),
        if stale { " stale" } else { "" },
        names.join(", ")
    ))
}

/// [`watch`] of several servers.
async fn watch_many(
    opts: WatchOptions,
    members: Vec<(String, Endpoint)>,
    say: &mut dyn FnMut(Said),
) -> std::io::Result<Ended> {
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
    if opts.control.is_some() {
        return Err(invalid(
            "the control channel serves one client: not with several servers".into(),
        ));
    }
    // Each member keeps its lists as the strategy says; the known-bad prefixing is the
    // combined listing's alone.
    let member_strategy = match opts.strategy {
        ClientStrategy::PrefixFromServerInfo => ClientStrategy::Reference,
        s => s,
    };
    // Keys are checked before any client starts (a member may be a child process).
    let check: Vec<Member> = members
        .iter()
        .map(|(key, _)| Member {
            key: key.clone(),
            server_name: String::new(),
        })
        .collect();
    aggregate::check_members(&check).map_err(invalid)?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut handles = Vec::with_capacity(members.len());
    let mut inboxes = Vec::with_capacity(members.len());
    for (i, (key, endpoint)) in members.into_iter().enumerate() {
        let (ntx, nrx) = mpsc::unbounded_channel();
        let mut settings = settings(&opts, member_strategy, ntx);
        settings.id = u32::try_from(i).unwrap_or(u32::MAX);
        handles.push((key, ClientHandle::spawn(settings, endpoint)));
        inboxes.push(nrx);
    }
    let servers = Servers::new(opts.strategy, handles).map_err(invalid)?;
    for (i, ((_, h), nrx)) in servers.handles().zip(inboxes).enumerate() {
        forward(i, h, nrx, tx.clone());
    }
    drop(tx);
    let keys: Vec<String> = servers.handles().map(|(k, _)| k.to_owned()).collect();
    let mut notices: Vec<Notices> = keys.iter().map(|_| Notices::new(opts.retry)).collect();
    let mut last_tools: Option<String> = None;
    let mut last: BTreeMap<(usize, Kind), String> = BTreeMap::new();
    let mut shown = Shown::default();
    let mut ended = Ended::Stopped;
    loop {
        let (i, m) = tokio::select! {
            m = rx.recv() => match m {
                Some(m) => m,
                None => break,
            },
            _ = tokio::signal::ctrl_c() => break,
        };
        let key = &keys[i];
        match m {
            FromMember::Notice(n) => {
                let (said, give_up) = notices[i].word(&n);
                if let Some(line) = said {
                    say(Said::Diagnostic(format!("{key}: {line}")));
                }
                if let Some(why) = give_up {
                    say(Said::Diagnostic(format!("{key}: {why}")));
                    ended = Ended::GaveUp;
                    break;
                }
            }
            FromMember::Changed => {
                if opts.kinds.contains(Kind::Tools)
                    && let Some(line) = combined_line(&servers, None)
                    && last_tools.as_ref() != Some(&line)
                {
                    let marked = opts
                        .approvals
                        .then(|| combined_line(&servers, Some(&mut shown)))
                        .flatten();
                    say(Said::Change(marked.unwrap_or_else(|| line.clone())));
                    last_tools = Some(line);
                }
                let handle = servers.handle(key).expect("a member");
                for kind in opts.kinds.iter().filter(|k| *k != Kind::Tools) {
                    let view = handle.list(kind);
                    if let Some(line) = change_line(kind, &view, None)
                        && last.get(&(i, kind)) != Some(&line)
                    {
                        say(Said::Change(format!("{key}: {line}")));
                        last.insert((i, kind), line);
                    }
                }
            }
            FromMember::Ended(s) => {
                let why = s.last_error.unwrap_or_else(|| "stopped".into());
                say(Said::Diagnostic(format!("{key}: giving up: {why}")));
                ended = Ended::GaveUp;
                break;
            }
        }
    }
    servers.shutdown();
    Ok(ended)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_to_approve_are_marked_again_when_their_definition_changes() {
        let ro = r#"{"annotations":{"readOnlyHint":true}}"#;
        let mut shown = Shown::default();
        let mut mark = |items: &[Item]| shown.mark(AuthCtx(0), items);
        let first = [Item::new("a", "a1"), Item::new("r", ro)];
        assert_eq!(mark(&first), ["a [approve]", "r"]);
        assert_eq!(mark(&first), ["a", "r"]);
        assert_eq!(mark(&[Item::new("a", "a2")]), ["a [re-approve]"]);
        mark(&[]);
        assert_eq!(
            mark(&[Item::new("a", "a3"), Item::new("b", "b1")]),
            ["a [re-approve]", "b [approve]"]
        );
        // Another context is shown its own list.
        assert_eq!(
            shown.mark(AuthCtx(1), &[Item::new("a", "a3")]),
            ["a [approve]"]
        );
    }

    #[test]
    fn retry_is_a_count_or_forever() {
        assert_eq!("3".parse(), Ok(Retry::Times(3)));
        assert_eq!("forever".parse(), Ok(Retry::Forever));
        assert!("300".parse::<Retry>().unwrap_err().contains("'300'"));
    }

    #[test]
    fn failed_listings_give_up_only_when_retries_are_counted() {
        let failed = ClientNotice::RefreshFailed {
            kind: Kind::Tools,
            error: listsync_core::client::ClientError::TooManyPages(9),
        };
        let ended = ClientNotice::Claimed(Event::RefreshEnded {
            client: 0,
            kind: Kind::Tools,
            auth: AuthCtx(0),
            refresh: 1,
            outcome: RefreshOutcome::Failed,
        });
        let mut counted = Notices::new(Retry::Times(1));
        assert_eq!(
            counted.word(&failed).0.as_deref(),
            Some("tools: listing failed: list has more than 9 pages")
        );
        counted.word(&failed);
        assert_eq!(
            counted.word(&ended),
            (
                None,
                Some("tools: giving up after 2 failed attempts".into())
            )
        );
        let mut forever = Notices::new(Retry::Forever);
        forever.word(&failed);
        let (said, give_up) = forever.word(&ended);
        assert!(said.unwrap().contains("still failing after 1 attempts"));
        assert_eq!(give_up, None);
    }

    /// A refresh that ends with its connection is no failed listing: reconnecting decides
    /// whether to give up, and its count is the reconnects it made.
    #[test]
    fn a_refresh_ended_by_a_lost_connection_does_not_give_up() {
        let ended = ClientNotice::Claimed(Event::RefreshEnded {
            client: 0,
            kind: Kind::Tools,
            auth: AuthCtx(0),
            refresh: 1,
            outcome: RefreshOutcome::Failed,
        });
        let mut notices = Notices::new(Retry::Times(2));
        let (said, _) = notices.word(&ClientNotice::Disconnected {
            why: "connection ended (Closed)".into(),
        });
        assert!(said.unwrap().contains("stale"));
        assert_eq!(notices.word(&ended), (None, None));
        // Not even before a connection is lost: no listing of its own failed.
        assert_eq!(Notices::new(Retry::Times(2)).word(&ended), (None, None));
        let mut gave_up = |retries| {
            notices
                .word(&ClientNotice::GaveUp {
                    retries,
                    why: "boom".into(),
                })
                .1
                .unwrap()
        };
        assert_eq!(
            gave_up(2),
            "giving up after 2 failed reconnects in a row; last error: boom"
        );
        let none = gave_up(0);
        assert!(!none.contains('0'), "{none}");
    }
}
