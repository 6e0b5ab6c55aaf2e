//! Catching a panic inside a future, so a bug in one request handler becomes an error reply
//! instead of a request rmcp never answers (its handler tasks are spawned and not joined).

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Polls `fut`, turning a panic into `Err(message)`.
pub async fn catch<F: Future>(fut: F) -> Result<F::Output, String> {
    CatchUnwind(Box::pin(fut)).await
}

struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.get_mut().0.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_owned());
                Poll::Ready(Err(msg))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn panics_become_errors() {
        assert_eq!(catch(async { 7 }).await, Ok(7));
        let r = catch(async {
            if std::hint::black_box(true) {
                panic!("boom");
            }
            1
        })
        .await;
        assert_eq!(r, Err("boom".to_owned()));
    }
}
