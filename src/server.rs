//! Running the server: bind, serve, and shut down without losing count.
//!
//! [`run`] takes the listener and the shutdown trigger from its caller (the binary
//! passes a bound socket and the signal future; tests pass `127.0.0.1:0` and a
//! oneshot), so it never chooses a port or installs a signal handler itself.

use std::future::{Future, IntoFuture};
use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{ConfigError, ServerConfig};
use crate::http::{app, AppState};
use crate::metrics;
use crate::processor::{DataProcessor, DrainReport};

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("metrics recorder: {0}")]
    Metrics(String),
    #[error("persist_dir {path}: {source}")]
    PersistDir {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("HTTP server: {0}")]
    Io(#[from] std::io::Error),
}

/// The accept queue asked of the kernel (Linux caps it at `net.core.somaxconn`,
/// 4096 on current kernels). The seed's story starts with every client connecting
/// at once: tokio's default of 1024 overflows at a thousand clients, and each
/// dropped SYN costs its client a one-second retransmit that would show up as
/// server latency.
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds `addr` for [`run`] with [`LISTEN_BACKLOG`].
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // A restarted server must not wait out the old one's TIME_WAIT sockets.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves until `shutdown` completes, then drains within `config.drain_timeout`.
pub async fn run(
    listener: TcpListener,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<DrainReport, ServeError> {
    if let Some(dir) = &config.persist_dir {
        std::fs::create_dir_all(dir).map_err(|source| ServeError::PersistDir {
            path: dir.clone(),
            source,
        })?;
    }
    let processor = DataProcessor::new(&config)?;
    let handle = metrics::handle().map_err(|e| ServeError::Metrics(e.to_owned()))?;
    let upkeep = tokio::spawn(async move {
        let mut every = tokio::time::interval(metrics::UPKEEP_INTERVAL);
        loop {
            every.tick().await;
            handle.run_upkeep();
        }
    });

    let drain_timeout = config.drain_timeout;
    let router = app(AppState {
        processor: processor.clone(),
        config,
    });
    let stop_accepting = CancellationToken::new();
    let server = tokio::spawn(
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(stop_accepting.clone().cancelled_owned())
        .into_future(),
    );

    shutdown.await;
    stop_accepting.cancel();
    let deadline = Instant::now() + drain_timeout;
    // Open connections finish the request they are on; idle keep-alive ones close.
    match tokio::time::timeout_at(deadline, server).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(err))) => tracing::error!(%err, "HTTP server failed while shutting down"),
        Ok(Err(err)) => tracing::error!(%err, "HTTP server task failed"),
        Err(_) => tracing::warn!("connections still open at the drain deadline"),
    }
    let report = processor.drain(deadline).await;
    upkeep.abort();
    Ok(report)
}
