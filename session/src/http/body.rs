//! Bodies through the recorder. A JSON-RPC body (a POST's, a JSON response's) is read whole
//! up to [`crate::log::MAX_LINE_BYTES`] within [`BODY_TIMEOUT`] ([`read_capped`]), logged, then forwarded:
//! the peer cannot act on it before it is logged. A longer body is forwarded as it arrives (the
//! bytes already read first) and logged as too long when it ends. A `text/event-stream` body is
//! forwarded chunk by chunk as it arrives, each event logged the moment the chunk that completes
//! it is read and before that chunk is forwarded ([`Tap`]).

use super::conns::Conns;
use super::sse::SseReader;
use crate::log::{LogDir, MAX_PREVIEW, Writer};
use bytes::{Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use http_body_util::{BodyExt, Empty, Full, combinators::BoxBody};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

/// Longest wait for a whole JSON-RPC body (a request's from the client, a JSON response's from
/// the server).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Any error a forwarded body can end with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body type the recorder sends both ways.
pub type HttpBody = BoxBody<Bytes, BoxError>;

/// A body of these bytes.
pub fn full(bytes: impl Into<Bytes>) -> HttpBody {
    Full::new(bytes.into()).map_err(|e| match e {}).boxed()
}

/// An empty body.
pub fn empty() -> HttpBody {
    Empty::new().map_err(|e| match e {}).boxed()
}

/// A body read as far as the limit allows.
pub enum Read<B> {
    /// The whole body.
    Whole(Bytes),
    /// More than the limit: the bytes read so far and the rest, unread.
    Over {
        /// The bytes read (a little more than the limit).
        head: Bytes,
        /// The rest of the body.
        rest: B,
    },
}

/// Why a body could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// It was not whole within [`BODY_TIMEOUT`].
    Timeout,
    /// The sender broke it off.
    Broken(BoxError),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Timeout => write!(f, "not whole within {} s", BODY_TIMEOUT.as_secs()),
            ReadError::Broken(e) => write!(f, "broken off ({e})"),
        }
    }
}

/// Reads `body` whole if it holds at most `cap` bytes and arrives within [`BODY_TIMEOUT`].
/// Trailers, which no MCP message uses, are not kept.
pub async fn read_capped<B>(mut body: B, cap: usize) -> Result<Read<B>, ReadError>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    let deadline = tokio::time::Instant::now() + BODY_TIMEOUT;
    let mut buf = BytesMut::new();
    loop {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .map_err(|_| ReadError::Timeout)?;
        match frame {
            None => return Ok(Read::Whole(buf.freeze())),
            Some(Err(e)) => return Err(ReadError::Broken(e.into())),
            Some(Ok(f)) => {
                if let Ok(data) = f.into_data() {
                    buf.extend_from_slice(&data);
                    if buf.len() > cap {
                        return Ok(Read::Over {
                            head: buf.freeze(),
                            rest: body,
                        });
                    }
                }
            }
        }
    }
}

/// Where a tapped body's messages are logged.
#[derive(Clone)]
pub struct Sink {
    /// The log.
    pub log: Arc<Writer>,
    /// The connection table (a server stream that breaks closes its connection).
    pub conns: Arc<Conns>,
    /// The connection the body belongs to.
    pub conn: u32,
    /// Which way it travels.
    pub dir: LogDir,
}

/// What a [`Tap`] reads off the bytes it forwards.
pub enum TapWatch {
    /// Server-sent events: each one's data is logged as it completes.
    Events(SseReader),
    /// A body longer than the limit: counted, logged as too long when it ends.
    Count {
        /// Its first bytes, for the preview.
        preview: Vec<u8>,
        /// Its length so far.
        len: usize,
    },
    /// Nothing (a body outside the MCP endpoint).
    Nothing,
}

/// A body forwarded frame by frame as it arrives, its bytes read by a [`TapWatch`] before each
/// frame is passed on.
pub struct Tap<B> {
    head: Option<Bytes>,
    inner: B,
    watch: TapWatch,
    sink: Option<Sink>,
}

impl<B> Tap<B> {
    /// Forwards a body longer than the limit whole (`head`, its bytes read so far, then
    /// `rest`), counting it for a `too long` entry in `sink`'s log when it ends.
    pub fn oversized(head: Bytes, rest: B, sink: Sink) -> Self {
        let watch = TapWatch::Count {
            preview: Vec::new(),
            len: 0,
        };
        Tap::new(Some(head), rest, watch, Some(sink))
    }

    /// Forwards `head` (bytes already read, if any) and then `inner`.
    pub fn new(head: Option<Bytes>, inner: B, watch: TapWatch, sink: Option<Sink>) -> Self {
        let mut tap = Tap {
            head: None,
            inner,
            watch,
            sink,
        };
        if let Some(h) = &head {
            tap.read(h);
        }
        tap.head = head.filter(|h| !h.is_empty());
        tap
    }

    /// A body forwarded as is.
    pub fn plain(inner: B) -> Self {
        Tap::new(None, inner, TapWatch::Nothing, None)
    }

    /// Logs a counted body as too long, once. Called at its end, or when it is dropped: hyper
    /// stops polling a body once it has sent the `Content-Length` it announced.
    fn finish(&mut self) {
        if let (TapWatch::Count { preview, len }, Some(s)) = (&self.watch, &self.sink) {
            s.log.body(s.conn, s.dir, preview, *len);
            self.watch = TapWatch::Nothing;
        }
    }

    fn read(&mut self, bytes: &[u8]) {
        match (&mut self.watch, &self.sink) {
            (TapWatch::Events(r), Some(s)) => {
                r.feed(bytes, |e| s.log.body(s.conn, s.dir, e.data, e.len));
            }
            (TapWatch::Count { preview, len }, _) => {
                let keep = MAX_PREVIEW.saturating_sub(preview.len()).min(bytes.len());
                preview.extend_from_slice(&bytes[..keep]);
                *len += bytes.len();
            }
            _ => {}
        }
    }
}

impl<B> Drop for Tap<B> {
    fn drop(&mut self) {
        self.finish();
    }
}

impl<B> http_body::Body for Tap<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some(h) = this.head.take() {
            return Poll::Ready(Some(Ok(Frame::data(h))));
        }
        match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => {
                if let Some(d) = frame.data_ref() {
                    this.read(d);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(e)) => {
                let e: BoxError = e.into();
                if let Some(s) = this
                    .sink
                    .as_ref()
                    .filter(|s| s.dir == LogDir::ServerToClient)
                {
                    tracing::warn!(
                        "record: the server's stream on connection {} broke: {e}",
                        s.conn
                    );
                    s.conns
                        .close(s.conn, &format!("the server's stream broke ({e})"));
                }
                Poll::Ready(Some(Err(e)))
            }
            None => {
                this.finish();
                Poll::Ready(None)
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        let extra = self.head.as_ref().map_or(0, |h| h.len() as u64);
        let inner = self.inner.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + extra);
        if let Some(u) = inner.upper() {
            hint.set_upper(u + extra);
        }
        hint
    }
}
