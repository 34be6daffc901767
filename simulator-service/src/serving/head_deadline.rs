//! The header read timeout (`header_read_timeout`): one timer a connection, not
//! one a request.
//!
//! hyper has this limit built in (`http1::Builder::header_read_timeout`), but it
//! arms a fresh timer each time it begins to read a head, which on a keep-alive
//! connection is once a request: a boxed sleep made, entered in tokio's timer
//! wheel when the head is not there yet (it never is: the connection waits for
//! its client's next request), taken out again and freed when the head arrives.
//! On a 2-vCPU AMD EPYC VM that came to 2.8 us of the serving path's 35 us a
//! request, 5 % of its throughput (issue 62; `tools/bench/server-vs-axum.py`).
//!
//! Here a connection keeps the instant it began to wait for a head in one atomic
//! word: set when it opens and when its reply is done, cleared when a head
//! arrives (hyper calls the service). A reply of a known length is done when it
//! is handed to hyper; a stream (the live view's events, the tap) when its body
//! ends or is dropped ([`ReplyEnd`]), so no stream is cut at the timeout. Its watch ([`HeadDeadline::passed`])
//! sleeps until that instant plus the timeout, then looks again: a connection
//! still waiting is closed, one that has been busy since sleeps until its new
//! deadline. So a request costs two stores and a clock read, and under steady
//! traffic a connection's one timer fires once a timeout.
//!
//! What differs from hyper's: the wait after a reply of a known length begins
//! when it is handed to hyper, a moment before its last byte is written, not
//! when hyper begins to read the next head; so a connection whose client reads
//! nothing of such a reply for the whole timeout is closed.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::response::Response;
use hyper::body::{Frame, SizeHint};
use tokio::time::Instant;

/// A request is in hand: no head is awaited.
const BUSY: u64 = u64::MAX;

/// When one connection began to wait for a request head, if it is waiting.
#[derive(Debug)]
pub struct HeadDeadline {
    opened: Instant,
    timeout: Duration,
    /// Nanoseconds from `opened` to when the wait began, or [`BUSY`].
    waiting_since: AtomicU64,
}

impl HeadDeadline {
    /// A connection just opened: waiting for its first head from now.
    pub fn new(timeout: Duration) -> Self {
        Self {
            opened: Instant::now(),
            timeout,
            waiting_since: AtomicU64::new(0),
        }
    }

    /// A whole head has arrived: the wait is over until the reply.
    pub fn head_arrived(&self) {
        self.waiting_since.store(BUSY, Ordering::Relaxed);
    }

    /// The reply is handed on: from now the connection waits for its next head.
    pub fn replied(&self) {
        let since = u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(BUSY - 1);
        self.waiting_since.store(since, Ordering::Relaxed);
    }

    /// The reply, with the wait for the next head begun at its end: now for a
    /// body of a known length, when the body ends for a stream.
    pub fn reply_ends(self: &Arc<Self>, reply: Response) -> Response {
        if reply.body().size_hint().exact().is_some() {
            self.replied();
            return reply;
        }
        let head = Arc::clone(self);
        reply.map(|body| Body::new(ReplyEnd { body, head }))
    }

    /// Ends when the connection has waited for a head for the whole timeout.
    pub async fn passed(&self) {
        loop {
            let deadline = match self.waiting_since.load(Ordering::Relaxed) {
                // Busy: no head can be late before a whole timeout from now.
                BUSY => Instant::now() + self.timeout,
                since => self.opened + Duration::from_nanos(since) + self.timeout,
            };
            if deadline <= Instant::now() {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    }
}

pin_project_lite::pin_project! {
    /// A streamed reply's body, which tells its connection when it has ended
    /// (hyper drops a body after its last frame, or when the client goes).
    struct ReplyEnd {
        #[pin]
        body: Body,
        head: Arc<HeadDeadline>,
    }

    impl PinnedDrop for ReplyEnd {
        fn drop(this: Pin<&mut Self>) {
            this.head.replied();
        }
    }
}

impl HttpBody for ReplyEnd {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    const TIMEOUT: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_sends_nothing_passes_its_deadline_at_the_timeout() {
        let head = HeadDeadline::new(TIMEOUT);
        let started = Instant::now();
        head.passed().await;
        assert_eq!(started.elapsed(), TIMEOUT);
    }

    #[tokio::test(start_paused = true)]
    async fn each_reply_starts_the_wait_again() {
        let head = HeadDeadline::new(TIMEOUT);
        let mut passed = Box::pin(head.passed());
        for _ in 0..5 {
            tokio::time::sleep(Duration::from_secs(6)).await;
            assert!((&mut passed).now_or_never().is_none());
            head.head_arrived();
            head.replied();
        }
        let last_reply = Instant::now();
        passed.await;
        assert_eq!(last_reply.elapsed(), TIMEOUT);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_in_hand_is_never_timed_out_however_long_it_takes() {
        let head = HeadDeadline::new(TIMEOUT);
        head.head_arrived();
        let passed = tokio::time::timeout(Duration::from_secs(3600), head.passed()).await;
        assert!(passed.is_err(), "timed out while busy");
        head.replied();
        let replied = Instant::now();
        head.passed().await;
        assert_eq!(replied.elapsed(), TIMEOUT);
    }
}
