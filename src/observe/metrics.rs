//! Prometheus metrics: names, buckets, the process-wide recorder and `/metrics`.
//!
//! Beside the server's own `isim_*` metrics, `/metrics` carries the standard
//! process metrics (`process.rs`), read afresh at every scrape, so a dashboard can
//! put the server's CPU and memory beside its request rates as the seed's
//! cpu-usage script did.
//!
//! Counters here are Prometheus counters: they only grow, and `POST /admin/reset`
//! does not touch them (rate() over them stays correct); `/stats` is the resettable
//! window. Gauges are not updated on every event but set from a consistent snapshot
//! just before each scrape, so they never disagree with one another.

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{describe_counter, describe_gauge, describe_histogram, gauge, Unit};
use metrics::{Counter, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use simulator_api::events::{pairs, EVENTS};
use simulator_api::Stats;

const RUNTIME_WORKERS: &str = "isim_runtime_workers";
const RUNTIME_ALIVE_TASKS: &str = "isim_runtime_alive_tasks";
const RUNTIME_GLOBAL_QUEUE: &str = "isim_runtime_global_queue_depth";
const RUNTIME_BUSY: &str = "isim_runtime_busy_seconds_total";
pub const CONNECTIONS_ACCEPTED: &str = "isim_connections_accepted_total";
pub const CONNECTIONS_REFUSED: &str = "isim_connections_refused_total";
const PERMITS_AVAILABLE: &str = "isim_permits_available";
const PERMITS_CAPACITY: &str = "isim_permits_capacity";

/// Histogram buckets in seconds: 100 us to 60 s, dense around the default 1-100 ms
/// so the 60 ms persist and the ~3.5 ms request lifetime both resolve.
pub const BUCKETS: [f64; 20] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.02, 0.035, 0.05, 0.06,
    0.075, 0.1, 0.25, 0.5, 1.0, 5.0, 60.0,
];

/// How often histogram samples are folded in when nobody scrapes, so memory stays flat.
pub const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();

/// The recorder for this process, installed on first use. One per process because
/// the `metrics` macros write to a global recorder; several servers in one test
/// process share it, which is why `/stats`, not `/metrics`, is per server.
pub fn handle() -> Result<&'static PrometheusHandle, &'static str> {
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &BUCKETS)
                .and_then(|b| b.install_recorder())
                .map_err(|e| e.to_string())?;
            describe();
            Ok(handle)
        })
        .as_ref()
        .map_err(String::as_str)
}

/// The handles the event path records into, looked up once, one field a counter
/// and a histogram of `simulator_api::with_events!`. The `counter!` and
/// `histogram!` macros look their name up in the recorder's registry on every
/// call; on the serving path that was about 2 % of the CPU (`docs/performance.md`).
macro_rules! define_handles {
    ($(
        $probe:ident $name:literal $when:literal
        ( $( $arg:ident : $meaning:literal ),* $(,)? )
        counters [ $(
            $counter:ident $cmetric:literal $chelp:literal
            $( (pair $pair:ident until $closer:ident $gauge:literal $ghelp:literal) )?
        ),* ]
        histograms [ $( $hist:ident $hmetric:literal $hhelp:literal ),* ];
    )*) => {
        #[derive(Debug)]
        pub struct Handles {
            $( $( pub $counter: Counter, )* $( pub $hist: Histogram, )* )*
        }

        impl Handles {
            fn register() -> Self {
                Handles {
                    $(
                        $( $counter: metrics::counter!($cmetric), )*
                        $( $hist: metrics::histogram!($hmetric), )*
                    )*
                }
            }
        }
    };
}

simulator_api::with_events!(define_handles);

static HANDLES: OnceLock<Handles> = OnceLock::new();

/// The event path's handles, registered with this process's recorder (installed
/// first, so they are never the no-op handles of a recorder not there yet).
pub fn handles() -> &'static Handles {
    HANDLES.get_or_init(|| {
        if let Err(err) = handle() {
            tracing::warn!("metrics recorder not installed: {err}");
        }
        Handles::register()
    })
}

/// Help for every metric: the events' from their declaration, then the rest. Every
/// counter is registered at 0, so a scrape (and promtool) sees each one before it
/// first moves.
fn describe() {
    for event in EVENTS {
        for counter in event.counters {
            describe_counter!(counter.metric.name, counter.metric.help);
            metrics::counter!(counter.metric.name).absolute(0);
            if let Some(pair) = &counter.opens {
                describe_gauge!(pair.gauge.name, pair.gauge.help);
            }
        }
        for histogram in event.histograms {
            describe_histogram!(histogram.name, Unit::Seconds, histogram.help);
        }
    }
    for (name, help) in [
        (
            CONNECTIONS_ACCEPTED,
            "TCP connections served (within max_connections).",
        ),
        (
            CONNECTIONS_REFUSED,
            "TCP connections answered 503 because max_connections were open.",
        ),
    ] {
        describe_counter!(name, help);
        metrics::counter!(name).absolute(0);
    }
    describe_gauge!(RUNTIME_WORKERS, "The runtime's async worker threads.");
    describe_gauge!(RUNTIME_ALIVE_TASKS, "Tasks alive in the runtime.");
    describe_gauge!(
        RUNTIME_GLOBAL_QUEUE,
        "Tasks waiting in the runtime's global queue for a worker."
    );
    describe_gauge!(PERMITS_AVAILABLE, "Permits free right now.");
    describe_gauge!(PERMITS_CAPACITY, "The gate's configured capacity.");
}

/// The text exposition, gauges set first from the same snapshot `/stats` shows.
pub fn render(handle: &PrometheusHandle, now: &Stats) -> String {
    gauge!(PERMITS_AVAILABLE).set(now.permits_available as f64);
    gauge!(PERMITS_CAPACITY).set(now.permits_total as f64);
    for pair in pairs() {
        gauge!(pair.gauge.name).set((pair.get)(&now.counts) as f64);
    }
    gauge!(RUNTIME_WORKERS).set(now.runtime.workers as f64);
    gauge!(RUNTIME_ALIVE_TASKS).set(now.runtime.alive_tasks as f64);
    gauge!(RUNTIME_GLOBAL_QUEUE).set(now.runtime.global_queue_depth as f64);
    let mut text = handle.render();
    text.push_str(&super::process::exposition());
    // Fractional seconds: the `metrics` facade's counters are whole numbers.
    super::process::write_family(
        &mut text,
        RUNTIME_BUSY,
        "counter",
        "Time the runtime's async workers spent busy since start, summed over workers.",
        now.runtime.busy_ns as f64 / 1e9,
    );
    if let Some(group) = &now.cpu_cgroup {
        write_cpu_cgroup(&mut text, group);
    }
    write_listener(&mut text, &now.connections);
    text
}

/// The data port's listening socket as the kernel holds it (Linux only).
fn write_listener(text: &mut String, c: &simulator_api::ConnectionCounts) {
    let families: [(&str, &str, &str, Option<f64>); 3] = [
        (
            "isim_listen_drops_total",
            "counter",
            "Packets the data port's listening socket dropped (SO_MEMINFO): SYNs at a full accept queue, and the handshakes' last ACKs and the requests behind them it could not take; a dropped ACK counts twice here, so it runs above nstat's TcpExtListenOverflows.",
            c.listen_drops.map(|n| n as f64),
        ),
        (
            "isim_listen_queue",
            "gauge",
            "Connections completed and waiting for the server to accept them (ss -lnt Recv-Q).",
            c.listen_queue.map(f64::from),
        ),
        (
            "isim_listen_backlog",
            "gauge",
            "The accept queue's limit as the kernel applies it (ss -lnt Send-Q).",
            c.listen_backlog.map(f64::from),
        ),
    ];
    for (name, kind, help, value) in families {
        if let Some(value) = value {
            super::process::write_family(text, name, kind, help, value);
        }
    }
}

/// The server's cgroup's `cpu.stat`, as cAdvisor's `container_cpu_cfs_*` names
/// it for a container: counters from the group's start, so `rate()` gives the
/// throttled periods and seconds per second; and its quota as a gauge.
fn write_cpu_cgroup(text: &mut String, group: &simulator_api::CpuCgroup) {
    let families: [(&str, &str, &str, Option<f64>); 4] = [
        (
            "isim_cpu_cfs_periods_total",
            "counter",
            "Quota periods in which the server's cgroup had threads that wanted to run (cpu.stat nr_periods).",
            Some(group.periods as f64),
        ),
        (
            "isim_cpu_cfs_throttled_periods_total",
            "counter",
            "Periods in which the server's cgroup ran out of CPU quota (cpu.stat nr_throttled).",
            Some(group.throttled_periods as f64),
        ),
        (
            "isim_cpu_cfs_throttled_seconds_total",
            "counter",
            "Time the server's threads waited for the next quota period, summed over CPUs (cpu.stat throttled time).",
            Some(group.throttled_us as f64 / 1e6),
        ),
        (
            "isim_cpu_quota_cores",
            "gauge",
            "The tightest CPU quota over the server's cgroup and its parents, in cores (absent: none).",
            group.quota_cores,
        ),
    ];
    for (name, kind, help, value) in families {
        if let Some(value) = value {
            super::process::write_family(text, name, kind, help, value);
        }
    }
}
