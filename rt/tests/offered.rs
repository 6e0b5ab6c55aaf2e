//! A client that keeps every list, connected to a server whose handshake offers tools only (a
//! raw JSON-RPC peer written by hand, which records every method it is sent): the client lists
//! tools only; `list_status` says of the other lists that the server does not offer them, and
//! why (not "not listed yet", which would wait forever); one `NotOffered` notice names them.

mod common;

use common::raw_peer;
use listsync_core::vocab::{Era, Kind, KindSet};
use listsync_rt::client::{ClientHandle, ClientNotice, ClientSettings, ListHealth};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_the_server_does_not_offer_are_said_to_be_not_offered() {
    let methods = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = methods.clone();
    let endpoint = raw_peer::endpoint(move |io| {
        let seen = seen.clone();
        raw_peer::serve(
            io,
            Arc::default(),
            move |message| {
                let method = message["method"].as_str().unwrap_or("").to_owned();
                seen.lock().unwrap().push(method.clone());
                std::future::ready(match method.as_str() {
                    "initialize" => Some(raw_peer::initialize_result("tools-only")),
                    "tools/list" => Some(raw_peer::one_tool()),
                    _ => None,
                })
            },
            || None,
        );
    });
    let all: KindSet = Kind::ALL.into_iter().collect();
    let mut settings = ClientSettings::new(Era::V2025_11_25, all);
    let (tx, mut notices) = mpsc::unbounded_channel();
    settings.observer = Some(tx);
    let catalog = ClientHandle::spawn(settings, endpoint);
    raw_peer::first_list(&catalog, Duration::from_secs(30)).await;

    assert_eq!(catalog.list_status(Kind::Tools).health, ListHealth::Current);
    for (kind, capability) in [
        (Kind::Prompts, "`prompts`"),
        (Kind::Resources, "`resources`"),
        (Kind::ResourceTemplates, "`resources`"),
    ] {
        let status = catalog.list_status(kind);
        assert_eq!(status.health, ListHealth::NotOffered, "{kind}: {status:?}");
        let reason = status.reason.unwrap_or_default();
        assert!(
            reason.contains("does not offer") && reason.contains(capability),
            "{kind}: {reason}"
        );
    }
    let mut said = Vec::new();
    while let Ok(n) = notices.try_recv() {
        if let ClientNotice::NotOffered { kinds, offered } = n {
            said.push((kinds, offered));
        }
    }
    let missing: KindSet = [Kind::Prompts, Kind::Resources, Kind::ResourceTemplates]
        .into_iter()
        .collect();
    assert_eq!(said, [(missing, KindSet::only(Kind::Tools))]);
    let asked = methods.lock().unwrap().clone();
    assert!(
        asked
            .iter()
            .all(|m| !m.ends_with("/list") || m == "tools/list"),
        "only tools are listed: {asked:?}"
    );
    catalog.shutdown();
}
