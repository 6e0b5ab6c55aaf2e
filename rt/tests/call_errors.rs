//! Errors are not changes (docs/design.md, "Errors are not changes"), over rmcp's JSON-RPC
//! transport against a hand-written server: tool calls that fail with an internal error, with
//! invalid arguments, or with a tool error result start no refresh, and a call refused because
//! the tool is gone starts exactly one. The server counts the list requests it answers (what the
//! wire shows, not what the client says of itself), and the recorded history is judged by
//! core's monitor. The known-bad `refresh-on-any-error` client, on the same server, lists again
//! after every failure and is judged violating `errors_not_changes`.

mod common;

use common::*;
use listsync_core::history::Event;
use listsync_core::property::Property;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{Era, Kind, KindSet};
use listsync_rt::client::{ClientHandle, Endpoint};
use listsync_rt::history::SharedHistory;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

#[derive(Default)]
struct Counts {
    lists: AtomicU32,
    a_removed: AtomicBool,
}

/// Tools `a`, `b`, `c`. `b` always fails with an internal error, `d` (not listed) with invalid
/// arguments, `c` returns a tool error result; `a` runs until the test removes it, and is then
/// refused as unknown. The server sends no `list_changed`: a refusal is how the client learns.
struct Flaky {
    counts: Arc<Counts>,
}

fn tool(name: &str) -> Tool {
    let schema = json!({"type": "object"}).as_object().cloned().unwrap();
    Tool::new(name.to_owned(), format!("{name} tool"), Arc::new(schema))
}

impl ServerHandler for Flaky {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("flaky".to_owned(), "1".to_owned());
        info
    }

    async fn list_tools(
        &self,
        _req: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.counts.lists.fetch_add(1, Ordering::SeqCst);
        let mut tools = vec![tool("b"), tool("c")];
        if !self.counts.a_removed.load(Ordering::SeqCst) {
            tools.insert(0, tool("a"));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        req: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        match req.name.as_ref() {
            "a" if !self.counts.a_removed.load(Ordering::SeqCst) => {
                Ok(CallToolResult::success(vec![ContentBlock::text("ran a")]).into())
            }
            "b" => Err(McpError::internal_error("the database is down", None)),
            "c" => Ok(CallToolResult::error(vec![ContentBlock::text("bad input")]).into()),
            "d" => Err(McpError::invalid_params(
                "argument x must be a number",
                None,
            )),
            other => Err(McpError::invalid_params(
                format!("Unknown tool: {other}"),
                None,
            )),
        }
    }
}

fn spawn(
    strategy: ClientStrategy,
    calls_by_name: bool,
    counts: &Arc<Counts>,
    history: &SharedHistory,
) -> ClientHandle {
    let c = counts.clone();
    let endpoint = Endpoint::duplex(move |_auth| {
        let counts = c.clone();
        async move {
            let (client, theirs) = tokio::io::duplex(1 << 20);
            tokio::spawn(async move {
                if let Ok(running) = (Flaky { counts }).serve(theirs).await {
                    let _ = running.waiting().await;
                }
            });
            Ok(client)
        }
    });
    let mut settings = client_settings(Era::V2025_11_25, KindSet::only(Kind::Tools), 0, history);
    settings.client.strategy = strategy;
    settings.client.calls_by_name = calls_by_name;
    ClientHandle::spawn(settings, endpoint)
}

/// Lists; calls `b` (an internal error) and `c` (a tool error result) five times each; then the
/// server removes `a`, and a call of `a` is refused as unknown; waits for the snapshot without
/// `a`. Returns the list requests the server answered.
async fn run(strategy: ClientStrategy, history: &SharedHistory) -> u32 {
    let counts = Arc::new(Counts::default());
    let client = spawn(strategy, false, &counts, history);
    wait_status("first list", &client, |st| {
        st.ready && st.idle && st.publications == 1
    })
    .await;
    assert_eq!(counts.lists.load(Ordering::SeqCst), 1);
    for _ in 0..5 {
        let failed = within("call b", client.call("b")).await;
        assert!(failed.is_err(), "{failed:?}");
        let tool_error = within("call c", client.call("c")).await.expect("a result");
        assert!(tool_error.is_error, "{tool_error:?}");
    }
    // The server removes `a` and says nothing; the refusal of a call is the news.
    counts.a_removed.store(true, Ordering::SeqCst);
    let refused = within("call a", client.call("a")).await;
    assert!(refused.is_err(), "{refused:?}");
    wait_status("a dropped", &client, |st| {
        st.idle && !client.tools().items.iter().any(|i| &*i.name == "a")
    })
    .await;
    client.shutdown();
    counts.lists.load(Ordering::SeqCst)
}

fn failures(history: &SharedHistory) -> (usize, usize) {
    let events = history.events();
    let failed = |gone| {
        events
            .iter()
            .filter(|e| matches!(e, Event::CallFailed { gone: g, .. } if *g == gone))
            .count()
    };
    (failed(false), failed(true))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_calls_start_no_refresh_and_a_gone_tool_one() {
    let history = SharedHistory::new();
    let lists = run(ClientStrategy::Reference, &history).await;
    assert_eq!(lists, 2, "the first list and one for the gone tool");
    assert_eq!(failures(&history), (5, 1), "{}", history.render());
    assert!(
        !violated(&history).contains(&Property::ErrorsNotChanges),
        "{}",
        history.render()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_argument_error_is_not_a_change() {
    let history = SharedHistory::new();
    let counts = Arc::new(Counts::default());
    // `d` is not listed: the application names it (a model picking a tool by name).
    let client = spawn(ClientStrategy::Reference, true, &counts, &history);
    wait_status("first list", &client, |st| st.ready && st.idle).await;
    for _ in 0..3 {
        let e = within("call d", client.call("d")).await;
        assert!(e.is_err(), "{e:?}");
    }
    // A call that succeeds after them: a list request sent for an argument error would have
    // reached the server before this call's answer came back.
    within("call a", client.call("a")).await.expect("a runs");
    assert_eq!(counts.lists.load(Ordering::SeqCst), 1);
    assert_eq!(failures(&history), (3, 0), "{}", history.render());
    client.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_refreshes_on_any_error_is_judged() {
    let history = SharedHistory::new();
    let lists = run(ClientStrategy::RefreshOnAnyError, &history).await;
    assert!(lists > 2, "it lists again after failures: {lists} lists");
    assert!(
        violated(&history).contains(&Property::ErrorsNotChanges),
        "{}",
        history.render()
    );
}
