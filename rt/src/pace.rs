//! A peer that sends requests faster than their answers can be written. rmcp (client and
//! server alike) starts a task for each request it reads, and nothing limits how many of them
//! wait to be answered: a peer that writes requests without reading the answers grew
//! `listsync serve --stdio` by 1.8 GB in 8 s of pings (4.1 GB of `tools/list`), and the client
//! by 740 MB in `rt/tests/request_flood.rs`. [`Paced`] reads no further message while
//! [`MAX_UNANSWERED`] of the peer's requests are unanswered (their answers not yet written), so
//! a flooding peer waits for this end, as a slow reader makes a writer wait; nothing is dropped.

use rmcp::service::{RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

/// The peer's requests that may be read and not yet answered (answers written).
pub const MAX_UNANSWERED: usize = 256;

/// A transport that reads no faster than it answers the peer's requests.
pub struct Paced<R, T> {
    inner: T,
    unanswered: Arc<Unanswered>,
    role: PhantomData<fn() -> R>,
}

/// The peer's requests read and not yet answered.
struct Unanswered {
    /// One permit per request that may still be read.
    slots: Semaphore,
    /// Requests read whose answers have not been handed to the transport.
    owed: AtomicUsize,
}

impl<R, T> Paced<R, T> {
    pub fn new(inner: T) -> Paced<R, T> {
        Paced {
            inner,
            unanswered: Arc::new(Unanswered {
                slots: Semaphore::new(MAX_UNANSWERED),
                owed: AtomicUsize::new(0),
            }),
            role: PhantomData,
        }
    }
}

/// A byte stream (newline-delimited JSON-RPC, as on stdio), paced.
pub fn paced<R, Rd, Wr>(read: Rd, write: Wr) -> Paced<R, AsyncRwTransport<R, Rd, Wr>>
where
    R: ServiceRole,
    Rd: AsyncRead + Send + Unpin + 'static,
    Wr: AsyncWrite + Send + Unpin + 'static,
{
    Paced::new(AsyncRwTransport::new(read, write))
}

impl<R: ServiceRole, T: Transport<R>> Transport<R> for Paced<R, T> {
    // One error type for every transport: with the inner transport's own, rustc cannot prove a
    // connection task `Send` (a higher-ranked lifetime error).
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<R>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answer = matches!(
            item,
            TxJsonRpcMessage::<R>::Response(_) | TxJsonRpcMessage::<R>::Error(_)
        ) && self
            .unanswered
            .owed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        let unanswered = self.unanswered.clone();
        let sending = self.inner.send(item);
        async move {
            let sent = sending.await.map_err(std::io::Error::other);
            // The request's slot is free once its answer is written (or failed to be).
            if answer {
                unanswered.slots.add_permits(1);
            }
            sent
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<R>> {
        // A slot before the next message is read, in case it is a request. Cancel-safe (rmcp
        // selects over this future): a slot not kept goes back when the future is dropped, and
        // the inner transport's receive loses nothing when dropped.
        let unanswered = self.unanswered.clone();
        let slot = unanswered.slots.acquire().await.ok()?;
        let message = self.inner.receive().await?;
        if matches!(message, RxJsonRpcMessage::<R>::Request(_)) {
            slot.forget();
            unanswered.owed.fetch_add(1, Ordering::AcqRel);
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await.map_err(std::io::Error::other)
    }
}
