//! The client role of the control protocol: `snapshot`, `refresh`, `call`, `listen`,
//! `set_auth` (this adapter's addition), `shutdown`; events `negotiated`, `notification`,
//! `refresh_started`, `refresh_failed`, `published`, `marked_stale`, `call_done`, and `history`
//! (each core history event of the client, as `{"entry": <event>}`).

use super::{Channel, CommandHandler, CommandReply, Failure, Outbox, ReadyInfo, str_field};
use crate::admin::item_json;
use crate::client::{ClientHandle, ClientNotice};
use listsync_core::client::CallError;
use listsync_core::history::Event;
use listsync_core::vocab::{AuthCtx, Kind, KindSet};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn items(items: &[listsync_core::vocab::Item]) -> Value {
    Value::Array(items.iter().map(item_json).collect())
}

/// Forwards what the client reports as control events.
pub fn forward_notices(mut rx: mpsc::UnboundedReceiver<ClientNotice>, out: Outbox) {
    tokio::spawn(async move {
        while let Some(n) = rx.recv().await {
            match n {
                ClientNotice::Negotiated {
                    protocol_version,
                    server,
                } => out.event(
                    "negotiated",
                    json!({"protocol_version": protocol_version, "server": server}),
                ),
                ClientNotice::Notification {
                    method,
                    uri,
                    sub,
                    count,
                } => {
                    let mut params = json!({});
                    if let Some(u) = uri {
                        params["uri"] = json!(u);
                    }
                    if let Some(s) = sub {
                        params["_meta"] = json!({ "io.modelcontextprotocol/subscriptionId": s });
                    }
                    let mut e = json!({"method": method, "params": params});
                    if count > 1 {
                        e["count"] = json!(count);
                    }
                    out.event("notification", e);
                }
                ClientNotice::NotificationsDropped { count } => {
                    out.log(format!(
                        "{count} notifications dropped (too many distinct pending)"
                    ));
                }
                ClientNotice::RefreshFailed { kind, error } => out.event(
                    "refresh_failed",
                    json!({"kind": kind.as_str(), "error": error.to_string()}),
                ),
                ClientNotice::RetryScheduled {
                    kind,
                    attempt,
                    of,
                    delay,
                } => out.log(format!(
                    "{kind}: retry {attempt} of {of} in {} ms",
                    delay.as_millis()
                )),
                ClientNotice::ConnectFailed { why } => out.log(format!("connect failed: {why}")),
                ClientNotice::ReconnectScheduled { attempt, delay, .. } => {
                    out.log(format!("reconnect {attempt} in {} ms", delay.as_millis()))
                }
                ClientNotice::Warning(m) => out.log(m),
                ClientNotice::NotOffered { kinds, .. } => {
                    out.log(format!("not offered by the server: {kinds}"))
                }
                ClientNotice::CallDone { tool, result } => {
                    let is_error = match &result {
                        Ok(r) => r.is_error,
                        Err(_) => true,
                    };
                    out.event("call_done", json!({"tool": tool, "is_error": is_error}));
                }
                ClientNotice::Content { uri, text } => {
                    out.event("content", json!({"uri": uri, "text": text}));
                }
                ClientNotice::Disconnected { why } => out.log(format!("disconnected: {why}")),
                ClientNotice::GaveUp { retries, why } => {
                    out.log(format!("gave up after {retries} reconnects: {why}"))
                }
                ClientNotice::Log(m) => out.log(m),
                // The machine's word on its refreshes: the channel reports what was observed.
                ClientNotice::Claimed(_) => {}
                ClientNotice::Event(e) => {
                    match &e {
                        Event::RefreshStarted { kind, .. } => {
                            out.event("refresh_started", json!({ "kind": kind.as_str() }));
                        }
                        Event::Published {
                            kind,
                            items: list,
                            version,
                            ..
                        } => out.event(
                            "published",
                            json!({
                                "kind": kind.as_str(),
                                "items": items(list),
                                "source": "catalog",
                                "version": version,
                            }),
                        ),
                        Event::MarkedStale { kind, .. } => {
                            out.event("marked_stale", json!({ "kind": kind.as_str() }));
                        }
                        _ => {}
                    }
                    out.event("history", json!({ "entry": e }));
                }
            }
        }
    });
}

fn kind_of(v: &Value) -> Result<Kind, Failure> {
    str_field(v, "kind")?.parse::<Kind>().map_err(Failure::new)
}

fn command(catalog: ClientHandle, cmd: String, v: Value) -> CommandReply {
    Box::pin(async move {
        match cmd.as_str() {
            "snapshot" => {
                let view = catalog.list(kind_of(&v)?);
                let list = view.fetched.then(|| items(&view.items));
                Ok(json!({"items": list, "version": view.version, "stale": view.is_stale()}))
            }
            "refresh" => {
                let done = catalog
                    .refresh(kind_of(&v)?)
                    .await
                    .ok_or_else(|| Failure::new("client stopped"))?;
                Ok(json!({
                    "items": items(&done.view.items),
                    "pages": done.pages,
                    "version": done.view.version,
                    "stale": done.view.is_stale(),
                }))
            }
            "call" => match catalog.call(str_field(&v, "tool")?).await {
                Ok(r) => Ok(json!({"is_error": r.is_error, "text": r.text})),
                Err(CallError::Rpc(e)) => Err(Failure {
                    error: e.to_string(),
                    code: Some(e.code.into()),
                }),
                Err(CallError::NotInSnapshot) => Err(Failure::new(
                    "tool is not in the client's snapshot (the reference client does not call it)",
                )),
                Err(CallError::Transport(m)) => Err(Failure::new(m.to_string())),
                Err(CallError::NeedsApproval) => Err(Failure::new(
                    "the tool may have side effects and its listed definition is not approved",
                )),
                Err(CallError::ListOutOfDate) => Err(Failure::new(
                    "the tool may have side effects and the tool list is out of date",
                )),
            },
            "listen" => {
                let mut kinds = KindSet::EMPTY;
                for k in v
                    .get("kinds")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let k = k
                        .as_str()
                        .ok_or_else(|| Failure::new("kinds must be strings"))?
                        .parse::<Kind>()
                        .map_err(Failure::new)?;
                    kinds = kinds.with(k);
                }
                let uris = v
                    .get("uris")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|u| u.as_str().map(str::to_owned))
                    .collect();
                let honored = catalog.listen(kinds, uris).await.map_err(Failure::new)?;
                Ok(json!({"honored": {
                    "toolsListChanged": honored.contains(Kind::Tools),
                    "promptsListChanged": honored.contains(Kind::Prompts),
                    "resourcesListChanged": honored.contains(Kind::Resources),
                }}))
            }
            "set_auth" => {
                let auth = v
                    .get("auth")
                    .and_then(Value::as_u64)
                    .and_then(|a| u8::try_from(a).ok())
                    .ok_or_else(|| Failure::new("auth must be 0..=255"))?;
                catalog.set_auth(AuthCtx(auth));
                Ok(json!({}))
            }
            "subscribe" => Err(Failure::new(
                "the reference client subscribes to the resources it watches when it connects",
            )),
            "shutdown" => {
                catalog.shutdown();
                Ok(json!({}))
            }
            other => Err(Failure::new(format!("unknown command '{other}'"))),
        }
    })
}

/// Connects to the control socket at `path` (before anything else, so no event is lost).
pub async fn connect(path: &Path) -> std::io::Result<Channel> {
    Channel::connect(path).await
}

/// Waits until the client's session is up (or it gave up), reports `ready`, and serves the
/// client role until the socket closes or `shutdown` (both cancel `stop`).
pub async fn run_client(
    channel: Channel,
    catalog: ClientHandle,
    notices: mpsc::UnboundedReceiver<ClientNotice>,
    info: ReadyInfo,
    stop: CancellationToken,
) -> Outbox {
    let out = channel.outbox();
    forward_notices(notices, out.clone());
    let mut status = catalog.status();
    let _ = status.wait_for(|s| s.ready || s.ended).await;
    let negotiated = status.borrow().protocol_version.clone();
    let mut fields = info.fields();
    fields["protocol_version"] = json!(negotiated);
    out.event("ready", fields);
    let handler: CommandHandler = Arc::new(move |cmd, v| command(catalog.clone(), cmd, v));
    tokio::spawn(channel.serve(handler, stop));
    out
}
