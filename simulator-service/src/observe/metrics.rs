//! Prometheus metrics: names, the process-wide recorder and `/metrics`.
//!
//! The event path's counters and histograms are the process's lifetime figures
//! (`lifetime.rs`), kept per thread and written into the text at each scrape; the
//! recorder holds the rest (connections, gauges). Beside the server's own
//! `isim_*` metrics, `/metrics` carries the standard process metrics
//! (`process.rs`), read afresh at every scrape, so a dashboard can put the
//! server's CPU and memory beside its request rates as the seed's cpu-usage
//! script did.
//!
//! Counters here are Prometheus counters: they only grow, and `POST /admin/reset`
//! does not touch them (rate() over them stays correct); `/stats` is the resettable
//! window. Gauges are not updated on every event but set from a consistent snapshot
//! just before each scrape, so they never disagree with one another.

use std::sync::OnceLock;

use metrics::{describe_counter, describe_gauge, gauge};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use simulator_api::events::pairs;
use simulator_api::Stats;

const RUNTIME_WORKERS: &str = "isim_runtime_workers";
const RUNTIME_ALIVE_TASKS: &str = "isim_runtime_alive_tasks";
const RUNTIME_GLOBAL_QUEUE: &str = "isim_runtime_global_queue_depth";
const RUNTIME_BUSY: &str = "isim_runtime_busy_seconds_total";
pub const CONNECTIONS_ACCEPTED: &str = "isim_connections_accepted_total";
pub const CONNECTIONS_REFUSED: &str = "isim_connections_refused_total";
const PERMITS_AVAILABLE: &str = "isim_permits_available";
const PERMITS_CAPACITY: &str = "isim_permits_capacity";
const ACKED_UNWRITTEN: &str = "isim_acked_unwritten";
const ACKED_UNWRITTEN_PEAK: &str = "isim_acked_unwritten_peak";

static HANDLE: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();

/// The recorder for this process, installed on first use. One per process because
/// the `metrics` macros write to a global recorder; several servers in one test
/// process share it, which is why `/stats`, not `/metrics`, is per server.
pub fn handle() -> Result<&'static PrometheusHandle, &'static str> {
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .install_recorder()
                .map_err(|e| e.to_string())?;
            describe();
            Ok(handle)
        })
        .as_ref()
        .map_err(String::as_str)
}

/// Help for the recorder's metrics: the in-flight gauges from the events'
/// declaration, then the rest. Every counter is registered at 0, so a scrape (and
/// promtool) sees each one before it first moves.
fn describe() {
    for pair in pairs() {
        describe_gauge!(pair.gauge.name, pair.gauge.help);
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
    describe_gauge!(
        ACKED_UNWRITTEN,
        "Elements answered while their write is not yet made (handed to persistence without durable, until persist-done or a drop from the queue)."
    );
    describe_gauge!(
        ACKED_UNWRITTEN_PEAK,
        "The most elements answered and not yet written at once over the last second."
    );
}

/// The text exposition, gauges set first from the same snapshot `/stats` shows.
pub fn render(handle: &PrometheusHandle, now: &Stats) -> String {
    gauge!(PERMITS_AVAILABLE).set(now.permits_available as f64);
    gauge!(PERMITS_CAPACITY).set(now.permits_total as f64);
    gauge!(ACKED_UNWRITTEN).set(now.acked_unwritten as f64);
    gauge!(ACKED_UNWRITTEN_PEAK).set(now.acked_unwritten_peak as f64);
    for pair in pairs() {
        gauge!(pair.gauge.name).set((pair.get)(&now.counts) as f64);
    }
    gauge!(RUNTIME_WORKERS).set(now.runtime.workers as f64);
    gauge!(RUNTIME_ALIVE_TASKS).set(now.runtime.alive_tasks as f64);
    gauge!(RUNTIME_GLOBAL_QUEUE).set(now.runtime.global_queue_depth as f64);
    let mut text = handle.render();
    super::lifetime::read().write(&mut text);
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
    if let Some(ns) = now.runqueue_wait_ns {
        super::process::write_family(
            &mut text,
            "isim_runqueue_wait_seconds_total",
            "counter",
            "Time the server's threads were runnable and waited for a CPU, summed over threads (schedstat): a CPU shared with someone else.",
            ns as f64 / 1e9,
        );
    }
    if let Some(rate) = now.memory.and_then(|m| m.resident_growth_bytes_per_s) {
        super::process::write_family(
            &mut text,
            "isim_resident_memory_growth_bytes_per_second",
            "gauge",
            "How fast the server's resident memory grew over the last 10 s (the least-squares slope of a reading a second): memory kept grows under a steady load, memory in use levels off.",
            rate,
        );
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
