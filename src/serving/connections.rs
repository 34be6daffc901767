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
//!   opening or of its last reply, or hyper closes it (this also bounds how long an
//!   idle keep-alive connection holds its slot);
//! - at shutdown each connection finishes the request it is on and closes.
//!
//! Request bodies are timed by the router (`body.rs`), where the JSON 408 is made.
//! HTTP/2 is not offered: the clients and the seed speak HTTP/1.1.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use simulator_api::{ConnectionCounts, ErrorBody};

use crate::observe::metrics as m;

/// The connection limits `serve` enforces (see docs/limits.md).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    /// Which setting sets `max_connections`, for the refusal's message.
    pub limit_name: &'static str,
    /// Count connections in `isim_connections_*` (the data port only).
    pub metered: bool,
}

/// Connections the operator's listener holds at once: a few dashboards, scrapers
/// and curl sessions, never a load.
pub const OPERATOR_MAX_CONNECTIONS: usize = 64;

/// Live connection counts for `/stats`.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    open: AtomicU64,
    accepted: AtomicU64,
    refused: AtomicU64,
}

impl ConnectionStats {
    pub fn snapshot(&self) -> ConnectionCounts {
        ConnectionCounts {
            open: self.open.load(Ordering::Relaxed),
            accepted: self.accepted.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}

/// How long a refused connection may take to read our 503 before we close it:
/// closing with its request unread would reset the connection and lose the reply.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// After an accept error (most often EMFILE: out of file descriptors), wait this
/// long before accepting again, so the loop does not spin while nothing can change.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` until `stop` is cancelled, then waits for open
/// connections to finish their current request and close. The caller bounds the
/// whole by its drain deadline.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    stats: Arc<ConnectionStats>,
    stop: CancellationToken,
) {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    loop {
        let (stream, peer) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    tracing::warn!(%err, "accept failed");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            if limits.metered {
                metrics::counter!(m::CONNECTIONS_REFUSED).increment(1);
            }
            tokio::spawn(refuse(stream, limits));
            continue;
        };
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        stats.open.fetch_add(1, Ordering::Relaxed);
        if limits.metered {
            metrics::counter!(m::CONNECTIONS_ACCEPTED).increment(1);
        }
        // Replies are small and the clients wait for each: do not let Nagle hold them.
        let _ = stream.set_nodelay(true);

        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            // What axum's `into_make_service_with_connect_info` would insert: the
            // admin guard reads the peer from it.
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request)
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        let stats = Arc::clone(&stats);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                // Timeouts, malformed requests and resets: the client's doing, and
                // hyper has already answered what could be answered.
                tracing::debug!(%err, "connection ended with an error");
            }
            stats.open.fetch_sub(1, Ordering::Relaxed);
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Answers a connection over the limit with a JSON 503 and closes it.
async fn refuse(mut stream: TcpStream, limits: Limits) {
    let (max, name) = (limits.max_connections, limits.limit_name);
    let body = ErrorBody {
        error: "unavailable".to_owned(),
        message: format!(
            "this listener already has {max} connections open ({name}); retry later{}",
            if limits.metered {
                " or raise --max-connections"
            } else {
                ""
            }
        ),
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
