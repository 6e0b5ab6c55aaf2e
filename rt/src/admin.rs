//! Changing a running server's lists by hand (`listsync change`): the admin socket a server
//! listens on (`listsync serve --admin-socket PATH`), the op arguments of the command line, and
//! the two ways to send one batch — the admin socket, which speaks the control protocol's
//! server role (`mutate`, `catalog`, ...; docs/harness-protocol.md), or the HTTP endpoint's
//! `POST /admin/change` (token-protected, off unless enabled; [`crate::server::admin`]).
//!
//! An op argument is either a control-protocol op as JSON (`{"op":"add","kind":"tools",...}`) or
//! the shorthand `VERB:KIND:NAME[@CONTEXT][=DESCRIPTION]` (`add:tool:search=Searches the web`,
//! `remove:prompt:greet`, `update:tool:echo=Echoes, louder`, `add:tool:audit@1=Only context 1
//! sees it`), or `content:URI=TEXT` for a resource's content. Both become the same JSON op and
//! are checked by [`parse_op`].

use crate::server::Server;
use listsync_control::{
    Channel, CommandHandler, CommandReply, Failure, Incoming, Line, MAX_LINE, read_line, str_field,
};
use listsync_core::vocab::{AuthCtx, Kind, Op, Scope};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Admin connections served at once (one more waits for one to end).
const MAX_ADMIN_CONNECTIONS: usize = 16;

/// The kind names the shorthand accepts, and the control protocol's name for each.
fn kind_name(s: &str) -> Option<&'static str> {
    Some(match s {
        "tool" | "tools" => "tools",
        "prompt" | "prompts" => "prompts",
        "resource" | "resources" => "resources",
        "template" | "templates" | "resource_template" | "resource_templates" => {
            "resource_templates"
        }
        _ => return None,
    })
}

/// One op argument as the control protocol's JSON op, checked by [`parse_op`]. The error says
/// what is wrong (the caller names the argument's position).
pub fn op_arg(arg: &str) -> Result<Value, String> {
    const FORM: &str = "expected VERB:KIND:NAME[=DESCRIPTION] (VERB add, remove or update; KIND \
                        tool, prompt, resource or template), content:URI=TEXT, or a JSON op";
    let v = if arg.trim_start().starts_with('{') {
        serde_json::from_str::<Value>(arg).map_err(|e| format!("not a JSON op: {e}"))?
    } else {
        let (verb, rest) = arg.split_once(':').ok_or_else(|| FORM.to_owned())?;
        if verb == "content" {
            let (uri, text) = rest
                .split_once('=')
                .ok_or_else(|| "content: expected content:URI=TEXT".to_owned())?;
            json!({"op": "set_content", "uri": uri, "text": text})
        } else {
            let (kind, rest) = rest.split_once(':').ok_or_else(|| FORM.to_owned())?;
            let kind = kind_name(kind).ok_or_else(|| {
                format!("unknown kind '{kind}' (tool, prompt, resource or template)")
            })?;
            let (target, description) = match rest.split_once('=') {
                Some((t, d)) => (t, Some(d)),
                None => (rest, None),
            };
            let (name, auth) = match target.rsplit_once('@') {
                Some((n, a)) if !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()) => {
                    let auth: u8 = a
                        .parse()
                        .map_err(|_| format!("context '{a}' out of range (0 to 255)"))?;
                    (n, Some(auth))
                }
                _ => (target, None),
            };
            if name.is_empty() {
                return Err(format!("no name: {FORM}"));
            }
            let mut m = Map::new();
            m.insert("kind".into(), json!(kind));
            m.insert("name".into(), json!(name));
            match (verb, description, auth) {
                ("add", Some(d), auth) => {
                    m.insert("op".into(), json!("add"));
                    m.insert("description".into(), json!(d));
                    if let Some(a) = auth {
                        m.insert("auth".into(), json!(a));
                    }
                }
                ("update", Some(d), None) => {
                    m.insert("op".into(), json!("update"));
                    m.insert("description".into(), json!(d));
                }
                ("remove", None, None) => {
                    m.insert("op".into(), json!("remove"));
                }
                ("add" | "update", None, _) => {
                    return Err(format!("{verb} needs a description: {verb}:KIND:NAME=TEXT"));
                }
                ("remove", Some(_), _) => {
                    return Err("remove takes no description: remove:KIND:NAME".into());
                }
                ("update" | "remove", _, Some(_)) => {
                    return Err(format!(
                        "{verb} takes no @CONTEXT (an item keeps the scope it was added with)"
                    ));
                }
                (other, _, _) => return Err(format!("unknown verb '{other}': {FORM}")),
            }
            Value::Object(m)
        }
    };
    parse_op(&v).map_err(|f| f.error)?;
    Ok(v)
}

/// The op arguments of one batch as the control protocol's `ops` array; the error names the
/// first bad argument by its position (1-based) and text.
pub fn ops_of_args(args: &[String]) -> Result<Value, String> {
    if args.is_empty() {
        return Err("no ops: give at least one (e.g. add:tool:search=Searches the web)".into());
    }
    let mut ops = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        ops.push(op_arg(a).map_err(|e| format!("op {} ({a:?}): {e}", i + 1))?);
    }
    Ok(Value::Array(ops))
}

/// Parses one control-protocol op. The description stands for the definition (the server builds
/// the item from it). `"auth": N` on an `add` scopes the item to authorization context N (this
/// adapter's addition).
pub fn parse_op(v: &Value) -> Result<Op, Failure> {
    let kind =
        || -> Result<Kind, Failure> { str_field(v, "kind")?.parse::<Kind>().map_err(Failure::new) };
    let name = || str_field(v, "name").map(|s| s.into());
    let description = || str_field(v, "description").map(|s| s.into());
    match str_field(v, "op")? {
        "add" => Ok(Op::Add {
            kind: kind()?,
            name: name()?,
            def: description()?,
            scope: match v.get("auth").and_then(Value::as_u64) {
                Some(n) => Scope::Only(AuthCtx(
                    u8::try_from(n).map_err(|_| Failure::new("auth out of range"))?,
                )),
                None => Scope::Public,
            },
        }),
        "remove" => Ok(Op::Remove {
            kind: kind()?,
            name: name()?,
        }),
        "update" => Ok(Op::Update {
            kind: kind()?,
            name: name()?,
            def: description()?,
        }),
        "set_content" => Ok(Op::SetContent {
            uri: str_field(v, "uri")?.into(),
            text: str_field(v, "text")?.into(),
        }),
        other => Err(Failure::new(format!("unknown op '{other}'"))),
    }
}

/// Parses an array of ops.
pub fn parse_ops(v: &Value) -> Result<Vec<Op>, Failure> {
    match v {
        Value::Array(ops) => ops.iter().map(parse_op).collect(),
        _ => Err(Failure::new("ops must be an array")),
    }
}

/// Runs one command of the server role that changes or reads the catalog (`mutate`, `notify`,
/// `catalog`, `shutdown`): what the admin socket serves, and what the harness channel
/// ([`crate::control`], feature `harness`) serves besides its gates.
pub fn command(server: Server, cmd: String, v: Value) -> CommandReply {
    Box::pin(async move {
        match cmd.as_str() {
            "mutate" => {
                let ops = parse_ops(v.get("ops").unwrap_or(&Value::Null))?;
                let applied = server.apply_checked(&ops).await?;
                Ok(json!({"version": applied.version, "notified": applied.notified}))
            }
            "notify" => {
                let kind = str_field(&v, "kind")?;
                let reached = if kind == "resource_updated" {
                    let uri = str_field(&v, "uri")?;
                    server.notify(Kind::Resources, Some(uri)).await
                } else {
                    let kind = kind.parse::<Kind>().map_err(Failure::new)?;
                    server.notify(kind, None).await
                };
                Ok(json!({ "sessions": reached }))
            }
            "catalog" => {
                let kind = str_field(&v, "kind")?
                    .parse::<Kind>()
                    .map_err(Failure::new)?;
                let auth = v.get("auth").and_then(Value::as_u64).unwrap_or(0);
                let items: Vec<Value> = server
                    .visible(kind, AuthCtx(u8::try_from(auth).unwrap_or(0)))
                    .iter()
                    .map(item_json)
                    .collect();
                Ok(json!({"items": items, "version": server.version()}))
            }
            "shutdown" => Ok(json!({})), // the channel stops after replying
            other => Err(Failure::new(format!("unknown command '{other}'"))),
        }
    })
}

/// An item as the control protocol shows it: name, description, and the full definition.
pub(crate) fn item_json(item: &listsync_core::vocab::Item) -> Value {
    json!({
        "name": &*item.name,
        "description": crate::items::description_of(&item.def),
        "def": &*item.def,
    })
}

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// The server refused the batch (nothing was applied).
    #[error("the server refused the batch (nothing changed): {0}")]
    Refused(String),
    /// The server could not be reached, or did not answer as the protocol says.
    #[error("{0}")]
    Failed(String),
}

/// What a committed batch gave: the version now visible and the notifications sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Changed {
    /// Catalog version after the batch.
    pub version: u64,
    /// Notifications handed to transports.
    pub notified: u64,
}

fn changed(reply: &Value) -> Result<Changed, ChangeError> {
    if reply.get("ok").and_then(Value::as_bool) != Some(true) {
        let error = reply
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("(no message)");
        return Err(ChangeError::Refused(error.to_owned()));
    }
    match (
        reply.get("version").and_then(Value::as_u64),
        reply.get("notified").and_then(Value::as_u64),
    ) {
        (Some(version), Some(notified)) => Ok(Changed { version, notified }),
        _ => Err(ChangeError::Failed(format!(
            "the server's answer has no version: {reply}"
        ))),
    }
}

/// Sends `ops` (a JSON array of control-protocol ops) as one `mutate` on the admin socket at
/// `path`, and waits at most `bound` for the reply.
pub async fn change_by_socket(
    path: &Path,
    ops: Value,
    bound: Duration,
) -> Result<Changed, ChangeError> {
    let shown = path.display();
    let run = async {
        let stream = UnixStream::connect(path)
            .await
            .map_err(|e| ChangeError::Failed(format!("admin socket {shown}: {e}")))?;
        let (r, mut w) = stream.into_split();
        let mut line = listsync_control::command(1, "mutate", json!({ "ops": ops })).to_string();
        line.push('\n');
        w.write_all(line.as_bytes())
            .await
            .map_err(|e| ChangeError::Failed(format!("admin socket {shown}: {e}")))?;
        let mut reader = BufReader::new(r);
        let mut buf = Vec::new();
        loop {
            let got = read_line(&mut reader, &mut buf, MAX_LINE)
                .await
                .map_err(|e| ChangeError::Failed(format!("admin socket {shown}: {e}")))?;
            let text = match got {
                Some(Line::Text(t)) => t,
                Some(_) => continue,
                None => {
                    return Err(ChangeError::Failed(format!(
                        "admin socket {shown}: closed before the reply"
                    )));
                }
            };
            if let Ok(Incoming::Reply { id: Some(1), body }) = Incoming::decode(&text) {
                return changed(&body);
            }
        }
    };
    tokio::time::timeout(bound, run).await.unwrap_or_else(|_| {
        Err(ChangeError::Failed(format!(
            "admin socket {shown}: no reply within {bound:?}"
        )))
    })
}

/// The admin URL of a server URL: its scheme, host and port with the path `/admin/change`. Only
/// plain `http://` on a loopback host: the token must not leave the machine.
#[cfg(feature = "http")]
pub fn admin_url(url: &str) -> Result<String, String> {
    let u = reqwest::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
    if u.scheme() != "http" {
        return Err(format!(
            "{url}: only http:// (the admin endpoint is loopback only)"
        ));
    }
    let host = u.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = bare == "localhost"
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !loopback {
        return Err(format!(
            "{url}: not a loopback address (the admin endpoint listens on 127.0.0.1 only, and \
             the token is not sent elsewhere)"
        ));
    }
    let port = u.port_or_known_default().unwrap_or(80);
    Ok(format!("http://{host}:{port}/admin/change"))
}

/// Sends `ops` as one batch to the HTTP endpoint's `POST /admin/change` of the server at `url`
/// with `token`, and waits at most `bound` for the answer.
#[cfg(feature = "http")]
pub async fn change_by_http(
    url: &str,
    token: &str,
    ops: Value,
    bound: Duration,
) -> Result<Changed, ChangeError> {
    let admin = admin_url(url).map_err(ChangeError::Failed)?;
    let client = reqwest::Client::builder()
        .timeout(bound)
        .no_proxy()
        .build()
        .map_err(|e| ChangeError::Failed(e.to_string()))?;
    let resp = client
        .post(&admin)
        .header(reqwest::header::AUTHORIZATION, format!("Bearer {token}"))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(json!({ "ops": ops }).to_string())
        .send()
        .await
        .map_err(|e| ChangeError::Failed(format!("{admin}: {e}")))?;
    let status = resp.status();
    let body = resp
        .bytes()
        .await
        .map_err(|e| ChangeError::Failed(format!("{admin}: {e}")))?;
    let text = String::from_utf8_lossy(&body);
    let said = || {
        serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| text.trim().to_owned())
    };
    match status.as_u16() {
        200 => {
            let v: Value = serde_json::from_slice(&body)
                .map_err(|e| ChangeError::Failed(format!("{admin}: answer not JSON: {e}")))?;
            changed(&v)
        }
        409 | 400 => Err(ChangeError::Refused(said())),
        404 => Err(ChangeError::Failed(format!(
            "{admin}: 404: the server has no admin endpoint (start it with --admin-token-file)"
        ))),
        401 | 403 => Err(ChangeError::Failed(format!(
            "{admin}: {}: the server refused the token",
            status.as_u16()
        ))),
        n => Err(ChangeError::Failed(format!("{admin}: {n}: {}", said()))),
    }
}

/// The admin socket of a server: a Unix socket it listens on, removed when this is dropped.
pub struct AdminSocket {
    path: PathBuf,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl AdminSocket {
    /// Stops listening, waits for the accept loop to end, and removes the socket file.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for AdminSocket {
    fn drop(&mut self) {
        self.stop.cancel();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Listens on a new Unix socket at `path` (mode 0600; an existing path is refused, never
/// replaced) for admin connections: each speaks the control protocol's server role
/// (docs/harness-protocol.md: `mutate`, `catalog`, `notify`, and with the feature `harness` the
/// gates) with the same codec and commands as the harness's channel; `shutdown` or closing ends that connection only.
pub async fn listen(server: Server, path: &Path) -> std::io::Result<AdminSocket> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} exists (remove it, or pick another path)",
                path.display()
            ),
        ));
    }
    let listener = UnixListener::bind(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    let stop = CancellationToken::new();
    // With the harness's gates (feature `harness`), the socket serves them too.
    #[cfg(feature = "harness")]
    let handler: CommandHandler =
        Arc::new(move |cmd, v| crate::control::server_command(server.clone(), cmd, v));
    #[cfg(not(feature = "harness"))]
    let handler: CommandHandler = Arc::new(move |cmd, v| command(server.clone(), cmd, v));
    let slots = Arc::new(Semaphore::new(MAX_ADMIN_CONNECTIONS));
    let s = stop.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok(slot) = slots.clone().acquire_owned().await else {
                break;
            };
            let stream = tokio::select! {
                r = listener.accept() => match r {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!("admin socket: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                _ = s.cancelled() => break,
            };
            let handler = handler.clone();
            let conn_stop = s.child_token();
            tokio::spawn(async move {
                Channel::from_stream(stream).serve(handler, conn_stop).await;
                drop(slot);
            });
        }
    });
    Ok(AdminSocket {
        path: path.to_owned(),
        stop,
        task: Some(task),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorthand_ops_become_control_protocol_ops() {
        let cases = [
            (
                "add:tool:search=Searches the web",
                json!({"op":"add","kind":"tools","name":"search","description":"Searches the web"}),
            ),
            (
                "add:tool:audit@1=Only context 1",
                json!({"op":"add","kind":"tools","name":"audit","description":"Only context 1","auth":1}),
            ),
            (
                "remove:prompt:greet",
                json!({"op":"remove","kind":"prompts","name":"greet"}),
            ),
            (
                "update:resource:demo://readme=New = text",
                json!({"op":"update","kind":"resources","name":"demo://readme","description":"New = text"}),
            ),
            (
                "add:template:demo://n/{id}=Notes",
                json!({"op":"add","kind":"resource_templates","name":"demo://n/{id}","description":"Notes"}),
            ),
            (
                "content:demo://readme=Hello",
                json!({"op":"set_content","uri":"demo://readme","text":"Hello"}),
            ),
            (
                r#"{"op":"remove","kind":"tools","name":"x"}"#,
                json!({"op":"remove","kind":"tools","name":"x"}),
            ),
        ];
        for (arg, want) in cases {
            assert_eq!(op_arg(arg).unwrap(), want, "{arg}");
        }
    }

    #[test]
    fn bad_op_arguments_say_what_is_wrong_and_where() {
        for (arg, want) in [
            ("add", "expected VERB:KIND:NAME"),
            ("add:tool:x", "add needs a description"),
            ("remove:tool:x=y", "remove takes no description"),
            ("add:tools:x@300=y", "out of range"),
            ("move:tool:x=y", "unknown verb 'move'"),
            ("add:widget:x=y", "unknown kind 'widget'"),
            ("add:tool:=y", "no name"),
            ("update:tool:x@1=y", "takes no @CONTEXT"),
            (r#"{"op":"add"}"#, "missing string field 'kind'"),
            ("{not json", "not a JSON op"),
        ] {
            let e = op_arg(arg).unwrap_err();
            assert!(e.contains(want), "{arg}: {e}");
        }
        let args = ["remove:tool:a".to_owned(), "oops".to_owned()];
        let e = ops_of_args(&args).unwrap_err();
        assert!(e.starts_with("op 2 (\"oops\"): "), "{e}");
        assert!(ops_of_args(&[]).is_err());
    }
}
