//! A data-port connection's writes, counted as delayed-ack.bt counts the
//! server's `writev` calls: every write, and a pair when a second write to the
//! same connection follows the first within [`PAIR_WITHIN`] (a reply's head and
//! then its body, which Nagle's algorithm holds until the client's delayed ACK).
//! `/stats.connections` carries the two counts, so `trace delayed-ack` shows
//! without a tracer what the script shows.
//!
//! A write here is a call that the socket took bytes from (`Ready(Ok)`); the
//! script counts a call into the kernel, which also counts a `writev` that found
//! the socket's buffer full. Replies here are small and their sockets' buffers
//! empty, so the two agree (tests/suite/tracing/scripts_live/sockets.rs holds them together).
//! The counts go to the listener's per-thread parts (`observe::shards`): the
//! cost on the serving path is a clock read and an uncontended lock per write.

use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::observe::shards::Shards;

/// Two writes to one connection this close together are a pair, as the script
/// counts them.
pub const PAIR_WITHIN: Duration = Duration::from_millis(1);

/// Writes and pairs counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WriteTally {
    pub writes: u64,
    pub pairs: u64,
}

/// A listener's connections' writes, counted per thread.
#[derive(Debug, Default)]
pub struct Writes(Shards<WriteTally>);

impl Writes {
    /// A write; `pair`: the second within [`PAIR_WITHIN`] of the one before.
    #[inline]
    pub fn count(&self, pair: bool) {
        self.0.with(|tally| {
            tally.writes += 1;
            tally.pairs += u64::from(pair);
        });
    }

    /// Every thread's counts added up.
    pub fn total(&self) -> WriteTally {
        self.0
            .all()
            .iter()
            .fold(WriteTally::default(), |sum, part| WriteTally {
                writes: sum.writes + part.writes,
                pairs: sum.pairs + part.pairs,
            })
    }
}

/// A stream whose writes are counted in its listener's stats.
#[derive(Debug)]
pub struct CountedWrites<S> {
    inner: S,
    /// The last write that did not complete a pair (the script's `@last_write`).
    unpaired: Option<Instant>,
    writes: Arc<Writes>,
}

impl<S> CountedWrites<S> {
    pub fn new(inner: S, writes: Arc<Writes>) -> Self {
        CountedWrites {
            inner,
            unpaired: None,
            writes,
        }
    }

    fn wrote(&mut self, now: Instant) {
        let pair = self
            .unpaired
            .is_some_and(|then| now.duration_since(then) < PAIR_WITHIN);
        self.unpaired = if pair { None } else { Some(now) };
        self.writes.count(pair);
    }

    fn counted<T>(&mut self, polled: Poll<std::io::Result<T>>) -> Poll<std::io::Result<T>> {
        if let Poll::Ready(Ok(_)) = polled {
            self.wrote(Instant::now());
        }
        polled
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for CountedWrites<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for CountedWrites<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.counted(polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.counted(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_write_within_a_millisecond_is_a_pair_and_a_third_starts_anew() {
        let writes = Arc::new(Writes::default());
        let mut io = CountedWrites::new(tokio::io::sink(), Arc::clone(&writes));
        let t = Instant::now();
        io.wrote(t);
        io.wrote(t + Duration::from_micros(300));
        io.wrote(t + Duration::from_micros(600));
        io.wrote(t + Duration::from_millis(5));
        io.wrote(t + Duration::from_millis(7));
        assert_eq!(
            writes.total(),
            WriteTally {
                writes: 5,
                pairs: 1
            }
        );
    }

    #[tokio::test]
    async fn the_bytes_pass_and_each_write_is_counted() {
        use tokio::io::AsyncWriteExt;
        let writes = Arc::new(Writes::default());
        let (near, mut far) = tokio::io::duplex(64);
        let mut io = CountedWrites::new(near, Arc::clone(&writes));
        io.write_all(b"head").await.unwrap();
        io.write_all(b"body").await.unwrap();
        drop(io);
        let mut got = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut far, &mut got)
            .await
            .unwrap();
        assert_eq!(got, "headbody");
        assert_eq!(
            writes.total(),
            WriteTally {
                writes: 2,
                pairs: 1
            }
        );
    }
}
