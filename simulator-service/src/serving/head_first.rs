//! `reply_writes = split`: a reply whose head leaves in a write of its own.
//!
//! hyper writes a small reply's head and body in one `writev`. A server that
//! flushes its headers before it has the body (a framework that streams, a
//! handler that writes the status line first, a proxy that forwards the upstream's
//! headers as soon as they come) makes two writes instead, and without
//! `TCP_NODELAY` Nagle's algorithm holds the second, small one until the client
//! acknowledges the first: the client, which has nothing to send, delays that
//! acknowledgement by Linux's least delayed-ACK timeout, 40 ms. [`HeadFirst`]
//! makes the two writes the way such a server does, not by sleeping: its body
//! is not ready the first time hyper asks, so hyper flushes the head it has
//! encoded; the body wakes its task at once and is ready when asked again.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use hyper::body::{Frame, SizeHint};

/// A reply body held back for one poll; its size stays known, so the head keeps
/// its `Content-Length`.
#[derive(Debug)]
pub struct HeadFirst {
    inner: Body,
    held: bool,
}

impl HeadFirst {
    pub fn new(inner: Body) -> Self {
        Self { inner, held: false }
    }
}

impl hyper::body::Body for HeadFirst {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if !self.held {
            self.held = true;
            // Ready at the next poll, which comes after hyper has flushed the head.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }

    fn is_end_stream(&self) -> bool {
        // An empty body has nothing to send after the head.
        self.inner.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn the_body_is_the_same_and_its_size_known() {
        let body = HeadFirst::new(Body::from("{\"id\":1}"));
        assert_eq!(hyper::body::Body::size_hint(&body).exact(), Some(8));
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"{\"id\":1}");
    }
}
