//! A JSON-RPC server written by hand on one end of a `tokio::io::duplex`, for the flood tests:
//! nothing slows a flood down but the client under test.

use listsync_rt::client::{BoxRead, BoxWrite, ClientHandle, Endpoint};
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The `initialize` result of a server of tools that change.
pub fn initialize_result(name: &str) -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {"listChanged": true}},
        "serverInfo": {"name": name, "version": "1"},
    })
}

/// The `tools/list` result: one tool, `a`.
pub fn one_tool() -> Value {
    json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]})
}

/// Serves `io`: each message the client sends is handed to `answer`, whose result (if any) is
/// the result of the reply to it; once `go` is set, `flood` gives the next bytes to write (none
/// once the flood is over). Replies are written between flood chunks.
pub fn serve<A, F, N>(io: tokio::io::DuplexStream, go: Arc<AtomicBool>, mut answer: A, mut flood: N)
where
    A: FnMut(Value) -> F + Send + 'static,
    F: Future<Output = Option<Value>> + Send,
    N: FnMut() -> Option<String> + Send + 'static,
{
    let (read, mut write) = tokio::io::split(io);
    let (tx, mut replies) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let id = message["id"].clone();
            let Some(result) = answer(message).await else {
                continue;
            };
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
            if tx.send(format!("{reply}\n")).is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        loop {
            while let Ok(r) = replies.try_recv() {
                if write.write_all(r.as_bytes()).await.is_err() {
                    return;
                }
            }
            let chunk = if go.load(Ordering::SeqCst) {
                flood()
            } else {
                None
            };
            if let Some(chunk) = chunk {
                if write.write_all(chunk.as_bytes()).await.is_err() {
                    return;
                }
            } else {
                // Idle: the next reply, or a look at the flood flag every 10 ms.
                tokio::select! {
                    r = replies.recv() => match r {
                        Some(r) => {
                            if write.write_all(r.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                        None => return,
                    },
                    _ = tokio::time::sleep(Duration::from_millis(10)) => {}
                }
            }
            let _ = write.flush().await;
        }
    });
}

/// An endpoint whose every connection is a duplex whose server end `serve` is given.
pub fn endpoint(serve: impl Fn(tokio::io::DuplexStream) + Send + Sync + 'static) -> Endpoint {
    let serve = Arc::new(serve);
    Endpoint::io(move |_auth| {
        let serve = serve.clone();
        async move {
            let (client, server) = tokio::io::duplex(64 << 10);
            serve(server);
            let (r, w) = tokio::io::split(client);
            Ok((Box::new(r) as BoxRead, Box::new(w) as BoxWrite))
        }
    })
}

/// Waits (at most `bound`) for `catalog`'s first list.
pub async fn first_list(catalog: &ClientHandle, bound: Duration) {
    let mut status = catalog.status();
    tokio::time::timeout(
        bound,
        status.wait_for(|s| s.ready && s.idle && s.publications == 1),
    )
    .await
    .expect("first list within the bound")
    .expect("client alive");
}
