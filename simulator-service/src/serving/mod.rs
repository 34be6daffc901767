//! Serving: HTTP over our own accept loop, the admin routes, and shutdown.
//!
//! `http.rs` holds the routes and `admin.rs` the admin ones (`same_machine.rs`:
//! whom they trust without a token), `live/` the live
//! view (`GET /live`), `tap.rs` the probe tap's stream (`GET /admin/tap`), `trail/` what the operator looked at and changed (`GET /admin/trail`), `body.rs` reads request
//! bodies, `state.rs` what the handlers share, `connections.rs` the accept loop,
//! its limits and how it treats each connection (`head_first.rs`: a reply in two
//! writes; `handshake.rs`: a new connection's CPU and where it is spent), what it
//! does when accept fails (`accept_failures.rs`), the kernel's figures of the listening socket (`platform/listener.rs`),
//! `shutdown.rs` the signals and the final report, `error.rs` the
//! one place an error becomes a status. This file runs them: bind, serve, and
//! shut down without losing count.
//!
//! [`run`] takes the listener and the shutdown trigger from its caller (the binary
//! passes a bound socket and the signal future; tests pass `127.0.0.1:0` and a
//! oneshot), so it never chooses a port or installs a signal handler itself.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use simulator_api::Settings;

use crate::observe::metrics;
use crate::platform::descriptor_reserve::{DescriptorReserve, OPERATOR_RESERVE};
use crate::request_path::{DataProcessor, DrainReport, StartError};
use crate::scenario::Scenario;
use accept_failures::AcceptFailures;
use answers::Answers;
use connections::{ConnectionPolicy, Limits, OPERATOR_MAX_CONNECTIONS};
use http::{app, operator_app};
use incidents::IncidentMode;
use state::AppState;

pub mod accept_failures;
pub mod admin;
pub mod answers;
pub mod body;
pub mod connections;
pub mod counted_writes;
pub mod error;
pub mod handshake;
pub mod head_deadline;
pub mod head_first;
pub mod http;
pub mod incidents;
pub mod live;
pub mod per_address;
pub mod same_machine;
pub mod shutdown;
pub mod state;
#[cfg(feature = "probes")]
pub mod tap;
pub mod trail;

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Start(#[from] StartError),
    #[error("metrics recorder: {0}")]
    Metrics(String),
    #[error("HTTP server: {0}")]
    Io(#[from] std::io::Error),
}

/// Binds `addr` for [`run`] with an accept queue of `backlog` (the data port's
/// `listen_backlog`; the operator's listener takes the default). Linux caps it
/// at `net.core.somaxconn`.
pub fn bind(addr: SocketAddr, backlog: usize) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // A restarted server must not wait out the old one's TIME_WAIT sockets.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    // The setting keeps it within 65,535.
    socket.listen(u32::try_from(backlog).unwrap_or(u32::MAX))
}

/// The operator's own listener, beside the data port's: its own connection
/// limit, no metering, plain replies. Not awaited at shutdown: nothing on it
/// holds a request of the data path.
fn serve_operator(
    operator: TcpListener,
    state: &AppState,
    limits: Limits,
    stop: CancellationToken,
) {
    let limits = Limits {
        max_connections: OPERATOR_MAX_CONNECTIONS,
        limit_name: "the operator listener's limit",
        metered: false,
        ..limits
    };
    let reserve = Arc::new(DescriptorReserve::new(OPERATOR_RESERVE));
    tokio::spawn(connections::serve(
        operator,
        operator_app(state.clone()),
        limits,
        Arc::new(|| ConnectionPolicy::PLAIN),
        Arc::default(),
        AcceptFailures::operator(state.processor.events().clone(), reserve),
        stop,
    ));
}

/// After the drain deadline, how long connections get to write the replies of
/// requests that were cut short before they are dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Serves `scenario` with `settings` (the scenario's, with a file and flags laid
/// over them) until `shutdown` completes, then drains within `drain_timeout`;
/// begins the scenario's incident by itself with [`IncidentMode::Loop`].
/// `operator` is the operator's own listener (`admin_listen`), when there is one.
pub async fn run(
    listener: TcpListener,
    operator: Option<TcpListener>,
    settings: Settings,
    scenario: Scenario,
    answers: Answers,
    incident_mode: IncidentMode,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<DrainReport, ServeError> {
    let processor = DataProcessor::new(&settings)?;
    // Installed before the first request, so connections are counted from the start.
    metrics::handle().map_err(|e| ServeError::Metrics(e.to_owned()))?;

    let drain_timeout = settings.drain_timeout;
    let limits = Limits {
        max_connections: settings.max_connections,
        header_read_timeout: settings.header_read_timeout,
        limit_name: "max_connections",
        metered: true,
        write_deadline: connections::WRITE_DEADLINE,
        per_address: None,
    };
    let state = AppState::new(processor.clone(), scenario).with_answers(answers);
    let stats = Arc::clone(&state.connections);
    let stop_accepting = CancellationToken::new();
    // The canary stops when accepting does: the drain is no time to measure.
    state.runtime.start(stop_accepting.clone());
    tokio::spawn(live::sampler::run(state.clone(), stop_accepting.clone()));
    let live = Arc::clone(&state.live);
    if incident_mode == IncidentMode::Loop {
        let (incidents, state) = (state.incidents.clone(), state.clone());
        let stop = stop_accepting.clone();
        tokio::spawn(async move {
            incidents
                .run_loop(|| state.scenario().incident.first().cloned(), stop)
                .await
        });
    }
    if let Some(operator) = operator {
        serve_operator(operator, &state, limits, stop_accepting.clone());
    }
    let router = app(state);
    let settings_now = processor.clone();
    let policy_now: connections::ConnectionPolicyNow =
        Arc::new(move || ConnectionPolicy::of(&settings_now.settings()));
    let connections = tokio::spawn(connections::serve(
        listener,
        router,
        limits,
        policy_now,
        stats,
        AcceptFailures::data_port(processor.events().clone()),
        stop_accepting.clone(),
    ));

    shutdown.await;
    stop_accepting.cancel();
    live.close();
    let deadline = Instant::now() + drain_timeout;
    // Connections finish the request they are on and close, while the processor
    // drains; at the deadline it cuts short what is left, so those requests are
    // answered (503) and their connections can close too.
    let (report, closed) = tokio::join!(
        processor.drain(deadline),
        tokio::time::timeout_at(deadline + CLOSE_GRACE, connections),
    );
    if closed.is_err() {
        tracing::warn!("connections still open at the drain deadline were dropped");
    }
    Ok(report)
}
