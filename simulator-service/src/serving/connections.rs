//! Accepting connections: the connection limit, the header read timeout, and
//! closing connections gracefully at shutdown.
//!
//! axum's own `serve` has neither a header timeout nor a limit, and a room of
//! curious engineers will open a socket and type half a request into it. So the
//! server runs its own accept loop over hyper's HTTP/1.1 connection:
//!
//! - at most `max_connections` are served at once; the next one gets a JSON 503
//!   saying which limit it hit, and is closed, rather than waiting unseen in the
//!   kernel's accept queue;
//! - a connection must send a whole request head within `header_read_timeout` of
//!   opening or of its last reply, or it is closed (this also bounds how long an
//!   idle keep-alive connection holds its slot): one timer a connection
//!   (`head_deadline.rs`), not hyper's timer a request;
//! - where the listener is shared (the room), one address holds at most
//!   `per_address` of them (`per_address.rs`), so one laptop cannot take them all;
//! - a write that the peer leaves waiting (it does not read, its window stays
//!   shut) for `write_deadline` ([`WRITE_DEADLINE`] on every listener) closes
//!   the connection: a live view or a tap that never reads its stream holds
//!   its slot that long after the socket's buffers fill, not forever
//!   (tokio-io-timeout's writer);
//! - at shutdown each connection finishes the request it is on and closes.
//!
//! How it treats each connection is read at its accept ([`ConnectionPolicy`], from the live
//! settings), so a change applies to the next one: `TCP_NODELAY` or Nagle,
//! replies in one write or two (`head_first.rs`), and where a handshake's CPU
//! is spent (`handshake.rs`): inline in this loop, which then takes connections
//! no faster than one handshake at a time while the rest wait in the kernel's
//! accept queue (`listen_backlog`), or on the connection's own task.
//!
//! What the kernel cannot say of one listener the loop counts itself, for
//! `/stats.connections`: every write to a connection and the pairs among them
//! (`counted_writes.rs`), and the accept queue's longest, read at each accept
//! (`observe/recent_peak.rs`).
//!
//! Request bodies are timed by the router (`body.rs`), where the JSON 408 is made.
//! HTTP/2 is not offered: the clients and the seed speak HTTP/1.1.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_io_timeout::TimeoutWriter;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use simulator_api::settings::{HandshakeOn, ReplyWrites};
use simulator_api::{ConnectionCounts, ErrorBody, Settings};

use crate::observe::metrics as m;
use crate::observe::recent_peak::RecentPeak;
use crate::platform::descriptor_reserve::DescriptorReserve;
use crate::platform::{self, listener};
use crate::serving::accept_failures::{AcceptFailures, Next, ACCEPT_ERROR_PAUSE};
use crate::serving::counted_writes::{CountedWrites, Writes};
use crate::serving::handshake;
use crate::serving::head_deadline::HeadDeadline;
use crate::serving::head_first::HeadFirst;
use crate::serving::per_address::{AddressSlot, PerAddress};

/// How the listener treats a connection it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionPolicy {
    /// The accept queue to keep asked of the kernel; `None`: as bound.
    pub backlog: Option<usize>,
    pub nodelay: bool,
    pub reply_writes: ReplyWrites,
    pub handshake_cpu: Duration,
    pub handshake_on: HandshakeOn,
}

impl ConnectionPolicy {
    /// The operator's listener: dashboards and curl, served plainly.
    pub const PLAIN: ConnectionPolicy = ConnectionPolicy {
        backlog: None,
        nodelay: true,
        reply_writes: ReplyWrites::One,
        handshake_cpu: Duration::ZERO,
        handshake_on: HandshakeOn::Connection,
    };

    pub fn of(settings: &Settings) -> Self {
        ConnectionPolicy {
            backlog: Some(settings.listen_backlog),
            nodelay: settings.tcp_nodelay,
            reply_writes: settings.reply_writes,
            handshake_cpu: settings.handshake_cpu,
            handshake_on: settings.handshake_on,
        }
    }
}

/// Where the accept loop reads the ways in force at each accept.
pub type ConnectionPolicyNow = Arc<dyn Fn() -> ConnectionPolicy + Send + Sync>;

/// The connection limits `serve` enforces (see docs/limits.md).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    /// Which setting sets `max_connections`, for the refusal's message.
    pub limit_name: &'static str,
    /// Count connections in `isim_connections_*` (the data port only).
    pub metered: bool,
    /// How long a write may wait on a peer that does not read.
    pub write_deadline: Duration,
    /// The most one address may hold at once (`per_address.rs`); `None`:
    /// unlimited, as on the data port, whose load comes from one machine.
    pub per_address: Option<usize>,
}

/// Connections the operator's listener holds at once: a few dashboards, scrapers
/// and curl sessions, never a load.
pub const OPERATOR_MAX_CONNECTIONS: usize = 64;

/// Live connection counts for `/stats`, and the listening socket to read the
/// kernel's figures of.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    open: AtomicU64,
    accepted: AtomicU64,
    refused: AtomicU64,
    /// A duplicate of the listener's descriptor: the same socket, read while
    /// the accept loop owns the listener.
    listener: std::sync::OnceLock<platform::SocketHandle>,
    /// The backlog last asked of the kernel for it.
    backlog: AtomicU64,
    /// The connections' writes (`counted_writes.rs`), per thread.
    writes: Arc<Writes>,
    /// The accept queue's longest, as seen at each accept.
    queue_peak: RecentPeak,
}

impl ConnectionStats {
    pub fn snapshot(&self) -> ConnectionCounts {
        let kernel = self.listener.get().and_then(listener::figures);
        let writes = self.writes.total();
        ConnectionCounts {
            open: self.open.load(Ordering::Relaxed),
            accepted: self.accepted.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            writes: writes.writes,
            write_pairs: writes.pairs,
            listen_queue: kernel.map(|k| k.queued),
            listen_queue_peak: kernel.map(|k| k.queued.max(self.queue_peak.peak())),
            listen_backlog: kernel.map(|k| k.backlog),
            listen_drops: kernel.map(|k| k.drops),
        }
    }

    /// A connection was accepted: the queue it left holds the rest of its herd.
    fn saw_accept(&self) {
        if let Some(queued) = self.listener.get().and_then(listener::queued) {
            self.queue_peak.see(queued + 1);
        }
    }

    /// Asks the kernel for an accept queue of `backlog` on the listener, when
    /// that is not what it was last asked: Linux takes a second `listen(2)` on a
    /// listening socket as a new limit (`listen_backlog` is live), for SYNs that
    /// arrive after it.
    pub fn keep_backlog(&self, backlog: usize) {
        let Some(fd) = self.listener.get() else {
            return;
        };
        let asked = backlog as u64;
        if self.backlog.swap(asked, Ordering::Relaxed) == asked {
            return;
        }
        let limit = i32::try_from(backlog).unwrap_or(i32::MAX);
        if let Err(err) = socket2::SockRef::from(fd).listen(limit) {
            tracing::warn!(%err, backlog, "cannot change the listen backlog");
        }
    }

    /// Reads the kernel's figures of `listener` from now on.
    fn watch(&self, listener: &TcpListener) {
        match platform::duplicate(listener) {
            Ok(fd) => {
                let _ = self.listener.set(fd);
            }
            Err(err) => tracing::warn!(%err, "cannot read the listener's queue and drops"),
        }
    }
}

/// How long one write may wait on a peer that does not read before its
/// connection is closed: nginx's `send_timeout`. Nothing served here is large,
/// so a write waits this long only on a reader that stopped; a tap reader
/// paused for less (a tracer in a debugger) reads on and is told its losses.
pub const WRITE_DEADLINE: Duration = Duration::from_secs(60);

/// How long a refused connection may take to read our 503 before we close it:
/// closing with its request unread would reset the connection and lose the reply.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// What one accept gave.
enum Accepted {
    Connection((TcpStream, SocketAddr)),
    /// It failed (counted, logged, and waited out where `failures` says so).
    Failed,
    Stopped,
}

/// The next connection, or a failure handed to `failures` (paused after
/// where it says so), or the stop. In a spell of failures it first waits
/// until a connection is pending: an accept with nothing to take would fail
/// too, and be counted ([`until_pending`]).
async fn accept(
    listener: &TcpListener,
    failures: &mut AcceptFailures,
    stop: &CancellationToken,
) -> Accepted {
    if failures.in_spell() {
        tokio::select! {
            () = stop.cancelled() => return Accepted::Stopped,
            () = until_pending(listener) => {}
        }
    }
    tokio::select! {
        () = stop.cancelled() => Accepted::Stopped,
        accepted = listener.accept() => match accepted {
            Ok(pair) => {
                failures.accepted();
                Accepted::Connection(pair)
            }
            Err(err) => {
                if failures.failed(&err) == Next::Pause {
                    tokio::select! {
                        () = stop.cancelled() => return Accepted::Stopped,
                        () = tokio::time::sleep(ACCEPT_ERROR_PAUSE) => {}
                    }
                }
                Accepted::Failed
            }
        },
    }
}

/// Serves `router` on `listener` until `stop` is cancelled, then waits for open
/// connections to finish their current request and close. The caller bounds the
/// whole by its drain deadline. A failed accept is `failures`' to count, log
/// and wait out (`accept_failures.rs`).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    policy_now: ConnectionPolicyNow,
    stats: Arc<ConnectionStats>,
    mut failures: AcceptFailures,
    stop: CancellationToken,
) {
    stats.watch(&listener);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let per_address = limits.per_address.map(PerAddress::new);
    // hyper's own header timeout is off (its default without a timer): each
    // connection keeps its own (`head_deadline.rs` says why).
    let http = hyper::server::conn::http1::Builder::new();
    loop {
        let (stream, peer) = match accept(&listener, &mut failures, &stop).await {
            Accepted::Connection(pair) => pair,
            Accepted::Failed => continue,
            Accepted::Stopped => break,
        };
        stats.saw_accept();
        let address_slot = per_address.as_ref().map(|counts| counts.take(peer.ip()));
        if let Some(None) = address_slot {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(refuse(stream, over_the_address_limit(peer, limits)));
            continue;
        }
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            if limits.metered {
                metrics::counter!(m::CONNECTIONS_REFUSED).increment(1);
            }
            tokio::spawn(refuse(stream, over_the_limit(limits)));
            continue;
        };
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        stats.open.fetch_add(1, Ordering::Relaxed);
        if limits.metered {
            metrics::counter!(m::CONNECTIONS_ACCEPTED).increment(1);
        }
        let ways = policy_now();
        at_accept(&stream, &ways, &stats);
        let head = Arc::new(HeadDeadline::new(limits.header_read_timeout));
        let service = requests_of(
            router.clone(),
            peer,
            Arc::clone(&head),
            ways.reply_writes == ReplyWrites::Split,
        );
        let mut io = TimeoutWriter::new(CountedWrites::new(stream, Arc::clone(&stats.writes)));
        io.set_timeout(Some(limits.write_deadline));
        let connection = graceful.watch(http.serve_connection(TokioIo::new(Box::pin(io)), service));
        tokio::spawn(run_connection(
            connection,
            head,
            ways,
            Arc::clone(&stats),
            (slot, address_slot.flatten()),
            failures.reserve().cloned(),
        ));
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Returns once a connection waits on `listener` (at once where that cannot be
/// asked), looking every [`ACCEPT_ERROR_PAUSE`]: while accepts fail, an accept
/// with nothing to take would fail too (Linux takes the descriptor first), and
/// be counted.
async fn until_pending(listener: &TcpListener) {
    while listener::pending(listener) == Some(false) {
        tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
    }
}

/// What the connection policy in force does to a connection as it is
/// accepted: the listen backlog kept, Nagle on or off, and the handshake's CPU
/// spent here when the policy puts it in the accept loop.
fn at_accept(stream: &TcpStream, ways: &ConnectionPolicy, stats: &ConnectionStats) {
    if let Some(backlog) = ways.backlog {
        stats.keep_backlog(backlog);
    }
    // Replies are small and the clients wait for each: unless told otherwise,
    // do not let Nagle hold them.
    let _ = stream.set_nodelay(ways.nodelay);
    if ways.handshake_on == HandshakeOn::AcceptLoop {
        handshake::spend(ways.handshake_cpu);
    }
}

/// A connection's service: each request to `router`, its head's deadline kept
/// (`head`), the peer's address where the admin guard reads it, and with
/// `split` each reply's head in a write of its own.
fn requests_of(
    router: Router,
    peer: std::net::SocketAddr,
    head: Arc<HeadDeadline>,
    split: bool,
) -> impl hyper::service::Service<
    hyper::Request<Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future: Send,
> + Clone {
    hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        head.head_arrived();
        let replied = Arc::clone(&head);
        // What axum's `into_make_service_with_connect_info` would insert: the
        // admin guard reads the peer from it. Not for the requests, which
        // never read it: the map of extensions it would make was ~0.3 us a
        // request (issue 62).
        if request.uri().path() != "/requests" {
            request.extensions_mut().insert(ConnectInfo(peer));
        }
        let reply = router.clone().oneshot(request);
        async move {
            let reply = replied.reply_ends(reply.await?);
            Ok::<_, std::convert::Infallible>(if split {
                reply.map(|body| axum::body::Body::new(HeadFirst::new(body)))
            } else {
                reply
            })
        }
    })
}

/// One connection served to its end (the client's close, an error, or no head
/// within `header_read_timeout`), then its slot given back.
async fn run_connection<E: std::fmt::Display>(
    connection: impl Future<Output = Result<(), E>>,
    head: Arc<HeadDeadline>,
    ways: ConnectionPolicy,
    stats: Arc<ConnectionStats>,
    slot: (OwnedSemaphorePermit, Option<AddressSlot>),
    reserve: Option<Arc<DescriptorReserve>>,
) {
    if ways.handshake_on == HandshakeOn::Connection {
        handshake::spend(ways.handshake_cpu);
    }
    tokio::select! {
        biased;
        ended = connection => if let Err(err) = ended {
            // Malformed requests and resets: the client's doing, and
            // hyper has already answered what could be answered.
            tracing::debug!(%err, "connection ended with an error");
        },
        // Dropping the connection closes it.
        () = head.passed() => tracing::debug!("no request head within header_read_timeout: closed"),
    }
    stats.open.fetch_sub(1, Ordering::Relaxed);
    drop(slot);
    // Its descriptor is closed: if it was lent from the reserve, take it back.
    if let Some(reserve) = reserve {
        reserve.refill();
    }
}

/// Why a connection past the listener's limit is refused.
fn over_the_limit(limits: Limits) -> String {
    let (max, name) = (limits.max_connections, limits.limit_name);
    format!(
        "this listener already has {max} connections open ({name}); retry later{}",
        if limits.metered {
            " or raise --max-connections"
        } else {
            ""
        }
    )
}

/// Why a connection past its address's limit is refused.
fn over_the_address_limit(peer: std::net::SocketAddr, limits: Limits) -> String {
    format!(
        "{} already has {} connections open to this listener, the most one address may; \
         close some and retry",
        peer.ip(),
        limits.per_address.unwrap_or_default()
    )
}

/// Answers a refused connection with a JSON 503 saying `why` and closes it.
async fn refuse(mut stream: TcpStream, why: String) {
    let body = ErrorBody {
        error: "unavailable".to_owned(),
        message: why,
    };
    // Two strings cannot fail to serialise.
    let body = serde_json::to_string(&body).unwrap_or_default();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\nretry-after: 1\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await?;
        // Drain what the client sent until it closes, so our close is not a reset.
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<_, std::io::Error>(())
    })
    .await;
}

#[cfg(test)]
#[path = "connections_tests.rs"]
mod tests;
