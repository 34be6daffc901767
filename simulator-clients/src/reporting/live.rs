//! `--metrics-listen ADDR`: the driver's own Prometheus endpoint, so one
//! Prometheus server scraping every shard sees the whole load live:
//! `sum(rate(sim_clients_requests_completed_total[10s]))` and
//! `histogram_quantile(0.99, sum by (le) (rate(sim_clients_latency_seconds_bucket[10s])))`.
//!
//! The latency buckets are the fixed [`LATENCY_BUCKETS_S`] on every shard, so
//! their counts add across shards; a PromQL quantile over them is an estimate
//! (linear within a bucket), the merged HDR histograms of `merge` are exact. The
//! metrics live in a recorder of their own (metrics-exporter-prometheus, not
//! installed globally), so a driver running inside the server's process (the demo,
//! the workshop) never mixes its figures into the server's `/metrics`. Without the
//! flag nothing is recorded: every handle is a no-op.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use metrics::{Counter, Histogram, Key, Label, Metadata, Recorder as _, Unit};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::plan::shard::Shard;
use crate::reporting::figures::PerFigure;
use crate::reporting::lag::Lag;
use crate::reporting::outcome::Failure;
use simulator_api::Reply;

/// Upper bounds of the latency buckets, in seconds: the same on every shard and
/// every run, from 100 us (a loopback round trip) to a minute (a stalled server).
pub const LATENCY_BUCKETS_S: [f64; 22] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.075,
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The driver's live counters and histograms.
#[derive(Debug)]
pub struct LiveMetrics {
    handle: Option<PrometheusHandle>,
    sent: Counter,
    completed: Counter,
    blocked: Counter,
    unanswered: Counter,
    late: Counter,
    missed: Counter,
    retries: Counter,
    given_up: Counter,
    /// By kind, in [`Failure`]'s order: connect, connect_timeout, file_limit,
    /// timeout, http_status, io.
    errors: [Counter; 6],
    /// A handle per declared figure (`figures.rs`); a no-op for a figure that is
    /// not recorded live.
    histograms: PerFigure<Histogram>,
}

const ERROR_KINDS: [&str; 6] = [
    "connect",
    "connect_timeout",
    "file_limit",
    "timeout",
    "http_status",
    "io",
];

impl LiveMetrics {
    /// Handles that record nothing, for a run without `--metrics-listen`.
    pub fn off() -> Self {
        Self {
            handle: None,
            sent: Counter::noop(),
            completed: Counter::noop(),
            blocked: Counter::noop(),
            unanswered: Counter::noop(),
            late: Counter::noop(),
            missed: Counter::noop(),
            retries: Counter::noop(),
            given_up: Counter::noop(),
            errors: std::array::from_fn(|_| Counter::noop()),
            histograms: PerFigure::from_fn(|_| Histogram::noop()),
        }
    }

    /// Metrics labelled with the shard (and the run, when it has an id).
    pub fn new(shard: Shard, run_id: Option<&str>) -> Self {
        let mut builder = PrometheusBuilder::new()
            .add_global_label("shard", shard.index.to_string())
            .add_global_label("shards", shard.count.to_string());
        if let Some(run) = run_id {
            builder = builder.add_global_label("run", run);
        }
        let recorder = builder
            .set_buckets(&LATENCY_BUCKETS_S)
            .expect("static buckets are valid")
            .build_recorder();
        let counter = |name: &'static str, about: &'static str| {
            recorder.describe_counter(name.into(), Some(Unit::Count), about.into());
            recorder.register_counter(&Key::from_static_name(name), &metadata())
        };
        let histograms = PerFigure::from_fn(|figure| match figure.live {
            Some(live) => {
                recorder.describe_histogram(
                    live.name.into(),
                    Some(Unit::Seconds),
                    live.help.into(),
                );
                recorder.register_histogram(&Key::from_static_name(live.name), &metadata())
            }
            None => Histogram::noop(),
        });
        let errors = ERROR_KINDS.map(|kind| {
            let key = Key::from_parts("sim_clients_errors_total", vec![Label::new("kind", kind)]);
            recorder.register_counter(&key, &metadata())
        });
        recorder.describe_counter(
            "sim_clients_errors_total".into(),
            Some(Unit::Count),
            "requests that failed, by kind".into(),
        );
        Self {
            sent: counter("sim_clients_requests_sent_total", "requests sent"),
            completed: counter(
                "sim_clients_requests_completed_total",
                "replies received (2xx), including those after the planned duration",
            ),
            blocked: counter(
                "sim_clients_requests_blocked_total",
                "replies saying the request waited for a permit",
            ),
            unanswered: counter(
                "sim_clients_requests_unanswered_total",
                "requests given up on at the drain limit",
            ),
            late: counter(
                "sim_clients_sends_late_total",
                "sends that left later than --late-after behind schedule",
            ),
            missed: counter(
                "sim_clients_sends_missed_total",
                "open loop: sends due in the window that could not leave before it closed",
            ),
            retries: counter(
                "sim_clients_retries_total",
                "attempts that retried a failed one (--retries); in requests_sent too",
            ),
            given_up: counter(
                "sim_clients_requests_given_up_total",
                "requests that ended without a success: every attempt they were allowed failed",
            ),
            errors,
            histograms,
            // The storage lives behind the handle; the recorder itself can go.
            handle: Some(recorder.handle()),
        }
    }

    /// One attempt: its outcome, latency from its due time, lag, new
    /// connection's handshake, and whether it left late.
    pub fn record(
        &self,
        outcome: &Result<Reply, Failure>,
        from_due: Duration,
        lag: Option<Lag>,
        connect: Option<Duration>,
        late: bool,
    ) {
        self.sent.increment(1);
        if late {
            self.late.increment(1);
        }
        let h = &self.histograms;
        if let Some(connect) = connect {
            h.connect.record(connect.as_secs_f64());
        }
        if let Some(lag) = lag {
            h.schedule_lag.record(lag.total().as_secs_f64());
            h.schedule_lag_connection
                .record(lag.connection.as_secs_f64());
            h.schedule_lag_timer.record(lag.timer.as_secs_f64());
        }
        match outcome {
            Ok(reply) => {
                self.completed.increment(1);
                if reply.blocked {
                    self.blocked.increment(1);
                }
                h.latency.record(from_due.as_secs_f64());
            }
            Err(failure) => {
                let kind = match failure {
                    Failure::Connect => 0,
                    Failure::ConnectTimeout => 1,
                    Failure::FileLimit => 2,
                    Failure::Timeout => 3,
                    Failure::Status(_) => 4,
                    Failure::Io => 5,
                };
                self.errors[kind].increment(1);
            }
        }
    }

    pub fn missed(&self) {
        self.missed.increment(1);
    }

    pub fn retry(&self) {
        self.retries.increment(1);
    }

    pub fn gave_up(&self) {
        self.given_up.increment(1);
    }

    pub fn unanswered(&self) {
        self.sent.increment(1);
        self.unanswered.increment(1);
    }

    /// The text exposition format, or nothing when off.
    pub fn render(&self) -> String {
        self.handle.as_ref().map_or_else(String::new, |h| {
            h.run_upkeep();
            h.render()
        })
    }
}

fn metadata() -> Metadata<'static> {
    Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()))
}

/// Binds `addr` now, so a taken port fails before any load is sent, and serves
/// `GET /metrics` from `metrics` until `stop`.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<LiveMetrics>,
    stop: CancellationToken,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let metrics = Arc::clone(&metrics);
            async move {
                (
                    [("content-type", "text/plain; version=0.0.4")],
                    metrics.render(),
                )
            }
        }),
    );
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
        if let Err(err) = served {
            eprintln!("sim-clients: the metrics endpoint stopped: {err}");
        }
    });
    Ok((bound, task))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reporting::figures::FIGURES;

    #[test]
    fn counts_and_fixed_buckets_are_exposed_with_the_shard() {
        let live = LiveMetrics::new(Shard { index: 2, count: 4 }, Some("r1"));
        let ok = Ok(Reply {
            id: 1,
            blocked: true,
            permit_wait_ns: 0,
            digest: None,
        });
        live.record(
            &ok,
            Duration::from_millis(4),
            Some(Lag::timer(Duration::ZERO)),
            None,
            false,
        );
        live.record(
            &Err(Failure::Status(503)),
            Duration::ZERO,
            None,
            Some(Duration::from_millis(1_020)),
            true,
        );
        live.unanswered();
        let text = live.render();
        for line in [
            r#"sim_clients_requests_sent_total{shard="2",shards="4",run="r1"} 3"#,
            r#"sim_clients_requests_completed_total{shard="2",shards="4",run="r1"} 1"#,
            r#"sim_clients_requests_blocked_total{shard="2",shards="4",run="r1"} 1"#,
            r#"sim_clients_sends_late_total{shard="2",shards="4",run="r1"} 1"#,
            r#"sim_clients_errors_total{shard="2",shards="4",run="r1",kind="http_status"} 1"#,
            r#"sim_clients_latency_seconds_bucket{shard="2",shards="4",run="r1",le="0.003"} 0"#,
            r#"sim_clients_latency_seconds_bucket{shard="2",shards="4",run="r1",le="0.005"} 1"#,
            r#"sim_clients_latency_seconds_count{shard="2",shards="4",run="r1"} 1"#,
            // A failed attempt's handshake still counts: 1.02 s, a retransmitted SYN.
            r#"sim_clients_connect_seconds_bucket{shard="2",shards="4",run="r1",le="1"} 0"#,
            r#"sim_clients_connect_seconds_count{shard="2",shards="4",run="r1"} 1"#,
        ] {
            assert!(text.contains(line), "{line} not in\n{text}");
        }
        for live in FIGURES.iter().filter_map(|figure| figure.live) {
            let help = format!("# HELP {} {}", live.name, live.help);
            assert!(text.contains(&help), "{help} not in\n{text}");
        }
        assert_eq!(LiveMetrics::off().render(), "");
    }
}
