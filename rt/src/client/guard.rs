//! A server that talks without answering, or answers what it was not asked.
//!
//! rmcp's client waits for the answer to `initialize` (or `server/discover`) and skips whatever
//! else arrives meanwhile, so a server that floods notifications instead of answering would
//! hold a connection attempt until its timeout, with nothing said. [`Guarded`] counts the
//! messages that arrive before the first answer and closes the connection once there are more
//! than [`MAX_BEFORE_ANSWER`], saying why. Over Streamable HTTP the answer comes in the
//! response stream of the handshake's POST, which rmcp's HTTP worker reads itself (dropping
//! what comes before the answer): [`GuardedHttp`], the HTTP client under the worker, counts
//! that stream's events the same way.
//!
//! rmcp also drops, with nothing said, a response whose id answers no request in flight (an id
//! the server made up or mangled, a second answer to one request) and an error response
//! without an id (a server that could not read a request): the request it was meant for then
//! waits for its timeout. [`Guarded`] keeps the ids of the client's requests in flight and
//! says the first few such responses as they arrive (through the connection's warning
//! channel); they are still dropped.

use crate::sniff::Report;
use rmcp::model::RequestId;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, OnceLock};

/// Messages a server may send before it answers the handshake. A server may log or ping
/// before it answers; a few thousand messages are no longer that.
pub(crate) const MAX_BEFORE_ANSWER: u64 = 10_000;

/// Requests in flight whose ids are kept: past this, the oldest one is forgotten (its answer,
/// should it ever come, is then said to answer nothing).
const MAX_IN_FLIGHT: usize = 10_000;

/// Responses that answer nothing, said per connection (one more line says that further ones
/// are not).
const MAX_REPORTS: u32 = 3;

/// Why a guarded connection was closed, once it was.
pub(crate) type Tripped = Arc<OnceLock<String>>;

/// A client transport that gives up on a server that does not answer but keeps talking, and
/// says the responses that answer no request.
pub(crate) struct Guarded<T> {
    inner: T,
    /// Messages seen before the first answer; `None` once a response answered a request.
    before_answer: Option<u64>,
    tripped: Tripped,
    in_flight: InFlight,
    /// Hears what is said about responses that answer nothing.
    warn: Report,
    /// Responses that answered nothing, so far.
    strays: u32,
}

impl<T> Guarded<T> {
    pub(crate) fn new(inner: T, warn: Report) -> (Guarded<T>, Tripped) {
        Guarded::sharing(inner, Tripped::default(), warn)
    }

    /// Guarded, telling `tripped` (which a guard below it may tell too).
    pub(crate) fn sharing(inner: T, tripped: Tripped, warn: Report) -> (Guarded<T>, Tripped) {
        let guarded = Guarded {
            inner,
            before_answer: Some(0),
            tripped: tripped.clone(),
            in_flight: InFlight::default(),
            warn,
            strays: 0,
        };
        (guarded, tripped)
    }

    /// Counts `message`; false once the server has said too much without answering.
    fn admit(&mut self, message: &RxJsonRpcMessage<RoleClient>) -> bool {
        // (the id it answers, the error it carries) of a response.
        let answer = match message {
            RxJsonRpcMessage::<RoleClient>::Response(r) => Some((Some(&r.id), None)),
            RxJsonRpcMessage::<RoleClient>::Error(e) => Some((e.id.as_ref(), Some(&e.error))),
            _ => None,
        };
        match answer {
            Some((Some(id), _)) if self.in_flight.answer(id) => {
                self.before_answer = None;
                return true;
            }
            Some((Some(id), _)) => self.stray(format!(
                "the server sent a response to request {}, which is not in flight \
                 (never sent, or answered already); dropped",
                serde_json::to_string(id).unwrap_or_default()
            )),
            Some((None, error)) => {
                let error = error
                    .map(|e| format!("{} {}", e.code.0, e.message))
                    .unwrap_or_default();
                self.stray(format!(
                    "the server sent an error without a request id (it could not tell \
                     which request it answers): {error}; dropped"
                ));
            }
            None => {}
        }
        let Some(seen) = &mut self.before_answer else {
            return true;
        };
        *seen += 1;
        if *seen <= MAX_BEFORE_ANSWER {
            return true;
        }
        // Said once, when the connection is closed.
        let what = serde_json::to_value(message)
            .ok()
            .and_then(|m| m.get("method")?.as_str().map(str::to_owned));
        trip(&self.tripped, what.as_deref());
        false
    }

    /// Says a response that answers nothing, while there are few.
    fn stray(&mut self, text: String) {
        self.strays = self.strays.saturating_add(1);
        if self.strays <= MAX_REPORTS {
            (self.warn)(text);
        } else if self.strays == MAX_REPORTS + 1 {
            (self.warn)(
                "the server keeps sending responses that answer no request in flight \
                 (no longer reported)"
                    .to_owned(),
            );
        }
    }
}

/// The ids of the client's requests in flight, oldest first; at most [`MAX_IN_FLIGHT`].
#[derive(Default)]
struct InFlight {
    ids: HashSet<RequestId>,
    /// Sending order; holds ids already answered too, until they reach the front or are
    /// swept out.
    order: VecDeque<RequestId>,
}

impl InFlight {
    fn sent(&mut self, id: RequestId) {
        if self.ids.insert(id.clone()) {
            self.order.push_back(id);
        }
        while self.ids.len() > MAX_IN_FLIGHT {
            match self.order.pop_front() {
                Some(oldest) => {
                    self.ids.remove(&oldest);
                }
                None => break,
            }
        }
        if self.order.len() > 2 * self.ids.len() + 64 {
            let ids = &self.ids;
            self.order.retain(|id| ids.contains(id));
        }
    }

    /// Whether `id` answers a request in flight (no longer in flight then). As rmcp matches
    /// them, a string of digits answers the request of that number.
    fn answer(&mut self, id: &RequestId) -> bool {
        if self.ids.remove(id) {
            return true;
        }
        match id {
            RequestId::String(s) => s
                .parse::<i64>()
                .is_ok_and(|n| self.ids.remove(&RequestId::Number(n))),
            RequestId::Number(_) => false,
        }
    }
}

/// Records why the connection is closed: `what` the server sent last.
fn trip(tripped: &Tripped, what: Option<&str>) {
    let _ = tripped.set(format!(
        "the server sent {MAX_BEFORE_ANSWER} messages without answering the handshake \
         (the last: {}); closed the connection",
        what.unwrap_or("?")
    ));
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Guarded<T> {
    // One error type for every transport: with the inner transport's own, rustc cannot prove
    // the connection task `Send` (a higher-ranked lifetime error).
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let TxJsonRpcMessage::<RoleClient>::Request(r) = &item {
            self.in_flight.sent(r.id.clone());
        }
        let sending = self.inner.send(item);
        async move { sending.await.map_err(std::io::Error::other) }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        self.admit(&message).then_some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await.map_err(std::io::Error::other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_takes_its_request_out_of_flight_once() {
        let mut f = InFlight::default();
        f.sent(RequestId::Number(0));
        f.sent(RequestId::String("s".into()));
        f.sent(RequestId::Number(7));
        assert!(f.answer(&RequestId::Number(0)));
        assert!(!f.answer(&RequestId::Number(0)), "a second answer");
        assert!(!f.answer(&RequestId::Number(1)), "never sent");
        // As rmcp matches them: "7" answers request 7, but 7 does not answer "s".
        assert!(f.answer(&RequestId::String("7".into())));
        assert!(!f.answer(&RequestId::Number(7)));
        assert!(f.answer(&RequestId::String("s".into())));
    }

    #[test]
    fn the_oldest_request_is_forgotten_past_the_bound() {
        let mut f = InFlight::default();
        for i in 0..(MAX_IN_FLIGHT as i64 + 60) {
            f.sent(RequestId::Number(i));
            if i % 2 == 1 && i < 100 {
                // Answered ones leave the sending order too, in time.
                assert!(f.answer(&RequestId::Number(i)));
            }
        }
        assert_eq!(f.ids.len(), MAX_IN_FLIGHT);
        assert!(f.order.len() <= 2 * MAX_IN_FLIGHT + 64);
        assert!(!f.answer(&RequestId::Number(0)), "forgotten");
        assert!(f.answer(&RequestId::Number(MAX_IN_FLIGHT as i64 + 59)));
    }
}

#[cfg(feature = "http")]
pub(crate) use http_client::GuardedHttp;

#[cfg(feature = "http")]
mod http_client {
    use super::{MAX_BEFORE_ANSWER, Tripped, trip};
    use futures_util::StreamExt;
    use futures_util::stream::BoxStream;
    use http::{HeaderName, HeaderValue};
    use rmcp::model::ClientJsonRpcMessage;
    use rmcp::transport::streamable_http_client::{
        SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
        StreamableHttpResponseLimits,
    };
    use sse_stream::Sse;
    use std::collections::HashMap;
    use std::sync::Arc;

    type Events = BoxStream<'static, std::result::Result<Sse, SseError>>;
    type Result<T> = std::result::Result<T, StreamableHttpError<reqwest::Error>>;

    /// Redirects followed for one request (same origin, 307 and 308 only).
    const MAX_REDIRECTS: usize = 10;

    /// rmcp's reqwest client, with the response stream of the handshake's POST counted.
    #[derive(Clone)]
    pub(crate) struct GuardedHttp {
        inner: reqwest::Client,
        tripped: Tripped,
    }

    impl GuardedHttp {
        /// A client configured as rmcp's default one: no idle connections kept (a reused
        /// connection whose last body was not read whole stalls on delayed ACKs), and only
        /// redirects that keep the method and body (307, 308) to the same origin followed, so
        /// the session id and headers never go to another host.
        pub(crate) fn new(tripped: Tripped) -> std::result::Result<GuardedHttp, String> {
            let redirects = reqwest::redirect::Policy::custom(|attempt| {
                let keeps_body = matches!(
                    attempt.status(),
                    reqwest::StatusCode::TEMPORARY_REDIRECT
                        | reqwest::StatusCode::PERMANENT_REDIRECT
                );
                let same_origin = attempt
                    .previous()
                    .first()
                    .is_some_and(|first| first.origin() == attempt.url().origin());
                if !(keeps_body && same_origin) {
                    attempt.stop()
                } else if attempt.previous().len() > MAX_REDIRECTS {
                    attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
                } else {
                    attempt.follow()
                }
            });
            let inner = reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .redirect(redirects)
                .build()
                .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
            Ok(GuardedHttp { inner, tripped })
        }
    }

    /// Whether `message` opens the handshake, whose answer the worker waits for.
    fn is_handshake(message: &ClientJsonRpcMessage) -> bool {
        matches!(message, ClientJsonRpcMessage::Request(r)
            if matches!(r.request.method(), "initialize" | "server/discover"))
    }

    /// `events`, ended (and `tripped` told why) once more than [`MAX_BEFORE_ANSWER`] events
    /// came before the first response.
    fn counted(events: Events, tripped: Tripped) -> Events {
        #[derive(serde::Deserialize)]
        struct Probe {
            method: Option<String>,
        }
        let mut seen = 0u64;
        let mut answered = false;
        let mut last: Option<String> = None;
        events
            .take_while(move |event| {
                let go = answered || {
                    let probe = event
                        .as_ref()
                        .ok()
                        .and_then(|e| e.data.as_deref())
                        .map(|d| serde_json::from_str::<Probe>(d).map(|p| p.method));
                    match probe {
                        // A message without a method is a response (or an error response).
                        Some(Ok(None)) => {
                            answered = true;
                            true
                        }
                        other => {
                            if let Some(Ok(Some(method))) = other {
                                last = Some(method);
                            }
                            seen += 1;
                            seen <= MAX_BEFORE_ANSWER || {
                                trip(&tripped, last.as_deref());
                                false
                            }
                        }
                    }
                };
                std::future::ready(go)
            })
            .boxed()
    }

    // The signatures are rmcp's trait's; a header name is never changed through its `Bytes`.
    #[allow(clippy::mutable_key_type)]
    impl StreamableHttpClient for GuardedHttp {
        type Error = reqwest::Error;

        async fn post_message(
            &self,
            uri: Arc<str>,
            message: ClientJsonRpcMessage,
            session_id: Option<Arc<str>>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<StreamableHttpPostResponse> {
            self.post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                StreamableHttpResponseLimits::default(),
            )
            .await
        }

        async fn post_message_with_response_limits(
            &self,
            uri: Arc<str>,
            message: ClientJsonRpcMessage,
            session_id: Option<Arc<str>>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
            limits: StreamableHttpResponseLimits,
        ) -> Result<StreamableHttpPostResponse> {
            let handshake = is_handshake(&message);
            let response = self
                .inner
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await?;
            Ok(match response {
                StreamableHttpPostResponse::Sse(events, session) if handshake => {
                    StreamableHttpPostResponse::Sse(counted(events, self.tripped.clone()), session)
                }
                other => other,
            })
        }

        async fn delete_session(
            &self,
            uri: Arc<str>,
            session_id: Arc<str>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<()> {
            self.inner
                .delete_session(uri, session_id, auth_header, custom_headers)
                .await
        }

        async fn get_stream(
            &self,
            uri: Arc<str>,
            session_id: Option<Arc<str>>,
            last_event_id: Option<String>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<Events> {
            self.inner
                .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
                .await
        }

        async fn get_stream_with_max_sse_event_size(
            &self,
            uri: Arc<str>,
            session_id: Option<Arc<str>>,
            last_event_id: Option<String>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
            max_sse_event_size: usize,
        ) -> Result<Events> {
            self.inner
                .get_stream_with_max_sse_event_size(
                    uri,
                    session_id,
                    last_event_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await
        }
    }
}
