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

use simulator_api::Stats;

pub const REQUESTS_STARTED: &str = "isim_requests_started_total";
pub const REQUESTS_DONE: &str = "isim_requests_done_total";
pub const REQUESTS_BLOCKED: &str = "isim_requests_blocked_total";
pub const REQUESTS_NONBLOCKED: &str = "isim_requests_nonblocked_total";
pub const REQUESTS_SHED: &str = "isim_requests_shed_total";
pub const PERSISTS_STARTED: &str = "isim_persists_started_total";
pub const PERSISTS_DONE: &str = "isim_persists_done_total";
pub const PERSISTS_FAILED: &str = "isim_persists_failed_total";
pub const PERSISTS_TIMED_OUT: &str = "isim_persists_timed_out_total";
pub const PERSISTS_HEDGED: &str = "isim_persists_hedged_total";
pub const QUEUE_ENQUEUED: &str = "isim_queue_enqueued_total";
pub const QUEUE_DEQUEUED: &str = "isim_queue_dequeued_total";
pub const QUEUE_REFUSED: &str = "isim_queue_refused_total";
pub const QUEUE_DROPPED: &str = "isim_queue_dropped_total";
pub const QUEUE_WAIT: &str = "isim_queue_wait_seconds";
pub const WORK_STARTED: &str = "isim_work_started_total";
pub const WORK_DONE: &str = "isim_work_done_total";
pub const WORK_TIME: &str = "isim_work_seconds";
pub const WORK_WAIT: &str = "isim_work_wait_seconds";
pub const TIMER_LATENESS: &str = "isim_runtime_timer_lateness_seconds";
const RUNTIME_WORKERS: &str = "isim_runtime_workers";
const RUNTIME_ALIVE_TASKS: &str = "isim_runtime_alive_tasks";
const RUNTIME_GLOBAL_QUEUE: &str = "isim_runtime_global_queue_depth";
const RUNTIME_BUSY: &str = "isim_runtime_busy_seconds_total";
const WORK_IN_FLIGHT: &str = "isim_work_in_flight";
pub const CONNECTIONS_ACCEPTED: &str = "isim_connections_accepted_total";
pub const CONNECTIONS_REFUSED: &str = "isim_connections_refused_total";
pub const REQUEST_LIFETIME: &str = "isim_request_lifetime_seconds";
pub const PERMIT_WAIT: &str = "isim_permit_wait_seconds";
pub const PERSIST_LATENCY: &str = "isim_persist_latency_seconds";
const PERMITS_AVAILABLE: &str = "isim_permits_available";
const PERMITS_CAPACITY: &str = "isim_permits_capacity";
const PERSISTS_IN_FLIGHT: &str = "isim_persists_in_flight";
const REQUESTS_IN_FLIGHT: &str = "isim_requests_in_flight";
const PERSISTS_QUEUED: &str = "isim_persists_queued";

/// Histogram buckets in seconds: 100 us to 60 s, dense around the default 1-100 ms
/// so the 60 ms persist and the ~3.5 ms request lifetime both resolve.
const BUCKETS: [f64; 20] = [
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

/// The handles the event path records into, looked up once. The `counter!` and
/// `histogram!` macros look their name up in the recorder's registry on every
/// call; on the serving path that was about 2 % of the CPU (`docs/performance.md`).
#[derive(Debug)]
pub struct Handles {
    pub persists_done: Counter,
    pub persists_failed: Counter,
    pub persists_hedged: Counter,
    pub persists_started: Counter,
    pub persists_timed_out: Counter,
    pub queue_dequeued: Counter,
    pub queue_dropped: Counter,
    pub queue_enqueued: Counter,
    pub queue_refused: Counter,
    pub requests_blocked: Counter,
    pub requests_done: Counter,
    pub requests_nonblocked: Counter,
    pub requests_shed: Counter,
    pub requests_started: Counter,
    pub work_done: Counter,
    pub work_started: Counter,
    pub permit_wait: Histogram,
    pub persist_latency: Histogram,
    pub queue_wait: Histogram,
    pub request_lifetime: Histogram,
    pub timer_lateness: Histogram,
    pub work_time: Histogram,
    pub work_wait: Histogram,
}

static HANDLES: OnceLock<Handles> = OnceLock::new();

/// The event path's handles, registered with this process's recorder (installed
/// first, so they are never the no-op handles of a recorder not there yet).
pub fn handles() -> &'static Handles {
    HANDLES.get_or_init(|| {
        if let Err(err) = handle() {
            tracing::warn!("metrics recorder not installed: {err}");
        }
        Handles {
            persists_done: metrics::counter!(PERSISTS_DONE),
            persists_failed: metrics::counter!(PERSISTS_FAILED),
            persists_hedged: metrics::counter!(PERSISTS_HEDGED),
            persists_started: metrics::counter!(PERSISTS_STARTED),
            persists_timed_out: metrics::counter!(PERSISTS_TIMED_OUT),
            queue_dequeued: metrics::counter!(QUEUE_DEQUEUED),
            queue_dropped: metrics::counter!(QUEUE_DROPPED),
            queue_enqueued: metrics::counter!(QUEUE_ENQUEUED),
            queue_refused: metrics::counter!(QUEUE_REFUSED),
            requests_blocked: metrics::counter!(REQUESTS_BLOCKED),
            requests_done: metrics::counter!(REQUESTS_DONE),
            requests_nonblocked: metrics::counter!(REQUESTS_NONBLOCKED),
            requests_shed: metrics::counter!(REQUESTS_SHED),
            requests_started: metrics::counter!(REQUESTS_STARTED),
            work_done: metrics::counter!(WORK_DONE),
            work_started: metrics::counter!(WORK_STARTED),
            permit_wait: metrics::histogram!(PERMIT_WAIT),
            persist_latency: metrics::histogram!(PERSIST_LATENCY),
            queue_wait: metrics::histogram!(QUEUE_WAIT),
            request_lifetime: metrics::histogram!(REQUEST_LIFETIME),
            timer_lateness: metrics::histogram!(TIMER_LATENESS),
            work_time: metrics::histogram!(WORK_TIME),
            work_wait: metrics::histogram!(WORK_WAIT),
        }
    })
}

fn describe() {
    for (name, help) in [
        (
            REQUESTS_STARTED,
            "Requests that entered the data processor (probe request-start).",
        ),
        (REQUESTS_DONE, "Requests answered (probe request-done)."),
        (
            REQUESTS_BLOCKED,
            "Requests that found no free permit and waited (probe request-block).",
        ),
        (
            REQUESTS_NONBLOCKED,
            "Requests that got a permit at once (probe request-nonblock).",
        ),
        (
            REQUESTS_SHED,
            "Blocked requests refused at once with 503 (probe request-shed).",
        ),
        (
            PERSISTS_STARTED,
            "Persists handed to the store (probe persist-start).",
        ),
        (
            PERSISTS_DONE,
            "Persists that ended, successfully or not (probe persist-done).",
        ),
        (PERSISTS_FAILED, "Persists that ended in failure."),
        (
            PERSISTS_TIMED_OUT,
            "Failed persists that persist_timeout ended (a stalled store).",
        ),
        (
            PERSISTS_HEDGED,
            "Persists that outlived hedge_after and got a second attempt (probe persist-hedge).",
        ),
        (
            QUEUE_ENQUEUED,
            "Elements put in the persistence queue (probe queue-enqueue).",
        ),
        (
            QUEUE_DEQUEUED,
            "Elements a worker took from the persistence queue (probe queue-dequeue).",
        ),
        (
            QUEUE_REFUSED,
            "Requests refused with 503 because the persistence queue was full (probe queue-refuse).",
        ),
        (
            QUEUE_DROPPED,
            "Elements dropped unpersisted after waiting past queue_wait_limit (probe queue-drop).",
        ),
        (WORK_STARTED, "Works begun on elements (probe work-start)."),
        (WORK_DONE, "Works finished (probe work-done)."),
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
    describe_histogram!(
        REQUEST_LIFETIME,
        Unit::Seconds,
        "From request-start to request-done, network traverses included."
    );
    describe_histogram!(
        PERMIT_WAIT,
        Unit::Seconds,
        "How long blocked requests waited for a permit."
    );
    describe_histogram!(
        PERSIST_LATENCY,
        Unit::Seconds,
        "From persist-start to persist-done."
    );
    describe_histogram!(
        QUEUE_WAIT,
        Unit::Seconds,
        "How long elements waited in the persistence queue for a worker."
    );
    describe_histogram!(
        WORK_TIME,
        Unit::Seconds,
        "How long each element's CPU work ran."
    );
    describe_histogram!(
        WORK_WAIT,
        Unit::Seconds,
        "How long work waited for a slot (work_limit) or a thread before it ran."
    );
    describe_histogram!(
        TIMER_LATENESS,
        Unit::Seconds,
        "How much later than asked the runtime's canary sleep woke (probe canary-tick)."
    );
    describe_gauge!(RUNTIME_WORKERS, "The runtime's async worker threads.");
    describe_gauge!(RUNTIME_ALIVE_TASKS, "Tasks alive in the runtime.");
    describe_gauge!(
        RUNTIME_GLOBAL_QUEUE,
        "Tasks waiting in the runtime's global queue for a worker."
    );
    describe_gauge!(WORK_IN_FLIGHT, "Works begun and not finished.");
    describe_gauge!(PERMITS_AVAILABLE, "Permits free right now.");
    describe_gauge!(PERMITS_CAPACITY, "The gate's configured capacity.");
    describe_gauge!(PERSISTS_IN_FLIGHT, "Persists started and not yet done.");
    describe_gauge!(REQUESTS_IN_FLIGHT, "Requests started and not yet done.");
    describe_gauge!(
        PERSISTS_QUEUED,
        "Elements waiting in the persistence queue (persistence = pool)."
    );
}

/// The text exposition, gauges set first from the same snapshot `/stats` shows.
pub fn render(handle: &PrometheusHandle, now: &Stats) -> String {
    gauge!(PERMITS_AVAILABLE).set(now.permits_available as f64);
    gauge!(PERMITS_CAPACITY).set(now.permits_total as f64);
    gauge!(PERSISTS_IN_FLIGHT).set(now.persists_in_flight as f64);
    gauge!(REQUESTS_IN_FLIGHT).set(now.requests_in_flight as f64);
    gauge!(PERSISTS_QUEUED).set(now.persists_queued as f64);
    gauge!(RUNTIME_WORKERS).set(now.runtime.workers as f64);
    gauge!(RUNTIME_ALIVE_TASKS).set(now.runtime.alive_tasks as f64);
    gauge!(RUNTIME_GLOBAL_QUEUE).set(now.runtime.global_queue_depth as f64);
    gauge!(WORK_IN_FLIGHT).set(now.runtime.work_in_flight as f64);
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
    text
}
