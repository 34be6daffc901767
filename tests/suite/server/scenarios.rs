//! Every bundled scenario shows its symptom under the load it documents, and every
//! fix it lists, applied live through `PUT /admin/config`, cures it.
//!
//! Virtual time (the symptoms here are about time, not about the runtime): the
//! clients are tasks running the scenario's closed loop against the processor, the
//! fixes go through the real router, and every figure is read from the counters
//! over a window after the load has settled. The bounds are stated beside each
//! assertion and in docs/scenarios.md; none holds when a fix does nothing.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::connect_info::MockConnectInfo;
use axum::http::{Request, StatusCode};
use rand::rngs::StdRng;
use rand::SeedableRng;
use simulator_api::{Counts, Stats};
use simulator_clients::{LoadPlan, Pacing};
use simulator_service::parts::app;
use simulator_service::parts::AppState;
use simulator_service::parts::{DataProcessor, Element};
use simulator_service::scenario::Scenario;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// A scenario running under its own load, with the router that serves it.
struct Running {
    processor: DataProcessor,
    router: axum::Router,
    stop: CancellationToken,
    /// The most persists in flight and elements queued seen, sampled every 1 ms.
    most: Arc<std::sync::Mutex<(u64, u64)>>,
    seen: Arc<Lifetimes>,
}

/// What a window of the load did.
#[derive(Debug)]
struct Window {
    counts: Counts,
    seconds: f64,
    most_in_flight: u64,
    most_queued: u64,
    longest_request: Duration,
    /// The 99th percentile lifetime of small elements (under [`SMALL_BYTES`]).
    small_p99: Duration,
}

impl Window {
    fn persists_per_s(&self) -> f64 {
        self.counts.persists_done as f64 / self.seconds
    }
}

/// One request of `bytes` and its lifetime: the longest so far, and among the
/// small elements' lifetimes when it is one.
async fn one_request(p: &DataProcessor, bytes: u64, seen: &Lifetimes) {
    let sent = Instant::now();
    let _ = p.handle(Element::Synthetic(bytes)).await;
    let took = sent.elapsed();
    seen.longest.fetch_max(
        u64::try_from(took.as_nanos()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
    if bytes < SMALL_BYTES {
        seen.small.lock().unwrap().push(took);
    }
}

/// Elements under this are "small" for the size-variance figures (size.d's class).
const SMALL_BYTES: u64 = 64 << 10;

/// Request lifetimes seen since the window began.
#[derive(Default)]
struct Lifetimes {
    /// The longest, in ns, answered or refused.
    longest: AtomicU64,
    small: std::sync::Mutex<Vec<Duration>>,
}

/// Runs the scenario's documented load (its `load`, as sim-clients reads it) as
/// tasks of this test: its clients and think time, or its rate, and its sizes.
fn start(name: &str) -> Running {
    let scenario = Scenario::load(name).unwrap();
    let load = LoadPlan::running_for(&scenario.load, "http://127.0.0.1:9", None);
    let processor = DataProcessor::new(&scenario.settings()).unwrap();
    let router = app(AppState::new(processor.clone(), scenario))
        .layer(MockConnectInfo(SocketAddr::from(([127, 0, 0, 1], 9))));
    let stop = CancellationToken::new();
    let seen = Arc::new(Lifetimes::default());
    let sizes = Arc::new(std::sync::Mutex::new(StdRng::seed_from_u64(3)));
    let size = move || load.load.payload.sample(&mut *sizes.lock().unwrap());
    match load.load.pacing {
        Pacing::Closed { think_time, .. } => {
            for _ in 0..load.load.clients {
                let (p, stop, seen, size) = (
                    processor.clone(),
                    stop.clone(),
                    Arc::clone(&seen),
                    size.clone(),
                );
                tokio::spawn(async move {
                    while !stop.is_cancelled() {
                        one_request(&p, size(), &seen).await;
                        tokio::time::sleep(think_time).await;
                    }
                });
            }
        }
        Pacing::Open { rate, .. } => {
            let (p, stop, seen) = (processor.clone(), stop.clone(), Arc::clone(&seen));
            tokio::spawn(async move {
                let mut schedule = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
                while !stop.is_cancelled() {
                    schedule.tick().await;
                    let (p, seen, bytes) = (p.clone(), Arc::clone(&seen), size());
                    tokio::spawn(async move { one_request(&p, bytes, &seen).await });
                }
            });
        }
    }
    let most = Arc::new(std::sync::Mutex::new((0, 0)));
    tokio::spawn({
        let (p, stop, most) = (processor.clone(), stop.clone(), Arc::clone(&most));
        async move {
            while !stop.is_cancelled() {
                let c = p.counts();
                {
                    let mut m = most.lock().unwrap();
                    *m = (m.0.max(c.persists_in_flight()), m.1.max(c.queued()));
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    });
    Running {
        processor,
        router,
        stop,
        most,
        seen,
    }
}

impl Running {
    /// Lets the load settle for `settle`, then measures it for `measure`.
    async fn window(&self, settle: Duration, measure: Duration) -> Window {
        tokio::time::sleep(settle).await;
        *self.most.lock().unwrap() = (0, 0);
        self.seen.longest.store(0, Ordering::Relaxed);
        self.seen.small.lock().unwrap().clear();
        let before = self.processor.counts();
        let t0 = Instant::now();
        tokio::time::sleep(measure).await;
        let (most_in_flight, most_queued) = *self.most.lock().unwrap();
        Window {
            counts: self.processor.counts().since(&before),
            seconds: t0.elapsed().as_secs_f64(),
            most_in_flight,
            most_queued,
            longest_request: Duration::from_nanos(self.seen.longest.load(Ordering::Relaxed)),
            small_p99: {
                let mut small = self.seen.small.lock().unwrap();
                small.sort();
                small
                    .get(small.len() * 99 / 100)
                    .copied()
                    .unwrap_or_default()
            },
        }
    }

    async fn call(&self, request: Request<Body>) -> (StatusCode, serde_json::Value) {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    async fn stats(&self) -> Stats {
        let (status, body) = self
            .call(Request::get("/stats").body(Body::empty()).unwrap())
            .await;
        assert_eq!(status, StatusCode::OK);
        serde_json::from_value(body).unwrap()
    }

    /// Applies the scenario's fix `name` as its listing gives it, through the router.
    async fn apply_fix(&self, scenario: &Scenario, name: &str) {
        let fix = scenario.fixes.iter().find(|f| f.name == name).unwrap();
        let body = fix.config_for(scenario.load.clients).unwrap();
        let request = Request::put("/admin/config")
            .header("content-type", "application/json")
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap();
        let (status, answer) = self.call(request).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The original under its load, measured: (the window, the gate's capacity).
async fn starving(run: &Running) -> (Window, f64) {
    let capacity = run.stats().await.model.capacity_per_s.unwrap();
    let before = run
        .window(Duration::from_secs(5), Duration::from_secs(30))
        .await;
    // 135 clients a second against 8 / 60 ms = 133/s: the gate is the limit.
    assert!(
        before.persists_per_s() <= capacity * 1.03,
        "{:.1}/s through a gate of {capacity:.1}/s",
        before.persists_per_s()
    );
    assert_eq!(before.most_in_flight, 8, "every permit held");
    // Most requests find every permit taken. Not "more than 90 %": the load is
    // only about 1 % over the gate now that a persist lasts its 60 ms exactly
    // (delay.rs): six runs measured 0.910 to 0.924, one CI run 0.900.
    // The seed's 0.999 came from a slower real store.
    assert!(
        before.counts.blocked_share() > 0.8,
        "blocked share {:.3}",
        before.counts.blocked_share()
    );
    assert!(
        before.longest_request > Duration::from_millis(20),
        "requests wait for permits: the longest took {:?}",
        before.longest_request
    );
    (before, capacity)
}

#[tokio::test(start_paused = true)]
async fn semaphore_starvation_cured_by_permits_per_client() {
    let scenario = Scenario::load("semaphore-starvation").unwrap();
    let run = start("semaphore-starvation");
    starving(&run).await;
    run.apply_fix(&scenario, "permits-per-client").await;
    let after = run
        .window(Duration::from_secs(5), Duration::from_secs(30))
        .await;
    assert_eq!(
        after.counts.requests_blocked, 0,
        "nothing waits for a permit"
    );
    assert!(
        after.most_in_flight > 8,
        "more persists at once than the old gate allowed"
    );
    assert!(
        after.longest_request < Duration::from_millis(10),
        "{:?}",
        after.longest_request
    );
}

#[tokio::test(start_paused = true)]
async fn semaphore_starvation_shedding_keeps_the_served_fast() {
    let scenario = Scenario::load("semaphore-starvation").unwrap();
    let run = start("semaphore-starvation");
    let (_, capacity) = starving(&run).await;
    run.apply_fix(&scenario, "shed").await;
    let after = run
        .window(Duration::from_secs(5), Duration::from_secs(30))
        .await;
    let c = &after.counts;
    assert_eq!(
        c.requests_blocked, c.requests_shed,
        "every request without a permit was refused, none waited"
    );
    assert!(
        c.requests_shed > 0,
        "at the gate's edge some requests are shed"
    );
    // Nothing waits: every request, served or refused, takes about its two traverses.
    assert!(
        after.longest_request < Duration::from_millis(10),
        "{:?}",
        after.longest_request
    );
    assert!(
        after.persists_per_s() <= capacity * 1.03,
        "still the gate's capacity"
    );
}

#[tokio::test(start_paused = true)]
async fn semaphore_starvation_cured_by_a_permit_for_the_hand_off_only() {
    let scenario = Scenario::load("semaphore-starvation").unwrap();
    let run = start("semaphore-starvation");
    starving(&run).await;
    run.apply_fix(&scenario, "hand-off").await;
    let after = run
        .window(Duration::from_secs(5), Duration::from_secs(30))
        .await;
    assert_eq!(
        after.counts.requests_blocked, 0,
        "permits come back at the hand-off"
    );
    assert!(
        after.most_in_flight > 8 && after.most_in_flight <= 16,
        "the 16 workers, not the 8 permits: {}",
        after.most_in_flight
    );
    assert!(
        after.longest_request < Duration::from_millis(10),
        "{:?}",
        after.longest_request
    );
}

#[tokio::test(start_paused = true)]
async fn sequential_persist_drains_one_at_a_time_and_bounded_parallelism_cures_it() {
    let scenario = Scenario::load("sequential-persist").unwrap();
    let run = start("sequential-persist");
    let stats = run.stats().await;
    let capacity = stats.model.capacity_per_s.unwrap();
    assert!(
        (capacity - 1.0 / 0.060).abs() < 0.01,
        "the model: 1 / 60 ms"
    );
    let before = run
        .window(Duration::from_secs(10), Duration::from_secs(30))
        .await;
    // Symptom: 1 / persist time, one persist at a time, a full queue.
    let rate = before.persists_per_s();
    assert!(
        (rate - capacity).abs() / capacity < 0.05,
        "{rate:.2}/s against 1 / 60 ms = {capacity:.2}/s"
    );
    assert_eq!(
        before.most_in_flight, 1,
        "never more than one persist in flight"
    );
    assert_eq!(before.most_queued, 100, "the queue full: the backlog");
    assert_eq!(
        before.counts.requests_blocked, 0,
        "the permits are not the limit"
    );

    run.apply_fix(&scenario, "bounded-parallel").await;
    let after = run
        .window(Duration::from_secs(10), Duration::from_secs(30))
        .await;
    // Cure: 20 clients every ~103 ms offer ~190/s, under 32 / 60 ms = 533/s.
    assert!(
        after.persists_per_s() > 10.0 * rate,
        "{:.1}/s after the fix, {rate:.1}/s before",
        after.persists_per_s()
    );
    assert!(after.most_in_flight > 1 && after.most_in_flight <= 32);
    assert!(
        after.most_queued < 32,
        "the backlog is gone: {}",
        after.most_queued
    );
}

/// The slow backend under its load: (the window, the model's capacity).
async fn slow(run: &Running) -> (Window, f64) {
    let capacity = run.stats().await.model.capacity_per_s.unwrap();
    assert!(
        (capacity - 8.0 / 0.049_46).abs() < 0.5,
        "the model: 8 / 49.5 ms, got {capacity}"
    );
    let before = run
        .window(Duration::from_secs(5), Duration::from_secs(30))
        .await;
    // Symptom: permits / mean latency, every permit held, nearly all blocked.
    let rate = before.persists_per_s();
    assert!(
        (rate - capacity).abs() / capacity < 0.08,
        "{rate:.1}/s against {capacity:.1}/s"
    );
    assert_eq!(before.most_in_flight, 8);
    assert!(
        before.counts.blocked_share() > 0.8,
        "{:.3}",
        before.counts.blocked_share()
    );
    assert!(before.counts.persists_failed > 0, "1 % throttled");
    (before, rate)
}

#[tokio::test(start_paused = true)]
async fn slow_backend_cured_by_concurrency_sized_by_littles_law() {
    let scenario = Scenario::load("slow-backend").unwrap();
    let run = start("slow-backend");
    let (_, before) = slow(&run).await;
    run.apply_fix(&scenario, "little-law-concurrency").await;
    let after = run
        .window(Duration::from_secs(5), Duration::from_secs(30))
        .await;
    // 30 clients every ~103 ms offer ~290/s, under 32 / 49.5 ms = 647/s.
    assert!(
        after.persists_per_s() > 1.5 * before,
        "{:.1}/s after, {before:.1}/s before",
        after.persists_per_s()
    );
    assert!(
        after.counts.blocked_share() < 0.05,
        "{:.3}",
        after.counts.blocked_share()
    );
}

#[tokio::test(start_paused = true)]
async fn slow_backend_hedging_cuts_the_tail_and_raises_throughput() {
    let scenario = Scenario::load("slow-backend").unwrap();
    let run = start("slow-backend");
    let (before, rate) = slow(&run).await;
    assert_eq!(before.counts.persists_hedged, 0);
    run.apply_fix(&scenario, "hedge-the-slowest").await;
    let after = run
        .window(Duration::from_secs(5), Duration::from_secs(30))
        .await;
    let c = &after.counts;
    // About 12 % of writes outlive 100 ms and are hedged; the mean persist falls
    // from 49.5 ms to about 40, so the same 8 permits pass about a fifth more.
    assert!(
        c.persists_hedged > c.persists_done / 20,
        "{} of {} hedged",
        c.persists_hedged,
        c.persists_done
    );
    assert!(
        after.persists_per_s() > 1.1 * rate,
        "{:.1}/s after, {rate:.1}/s before",
        after.persists_per_s()
    );
    assert_eq!(after.most_in_flight, 8, "the same permits");
    // Over a window, started - done is the change in persists in flight between
    // its edges, at most the 8 permits either way; a second persist-done for
    // each of the hundreds of hedged writes would be far outside it.
    assert!(
        c.persists_started.abs_diff(c.persists_done) <= 8,
        "one persist-done per element: {} started, {} done",
        c.persists_started,
        c.persists_done
    );
}

/// spawn-per-request under its open-loop 400/s: (the window, the model's capacity).
async fn piling_up(run: &Running) -> (Window, f64) {
    let capacity = run.stats().await.model.capacity_per_s.unwrap();
    assert!(
        (capacity - 16.0 / 0.060).abs() < 0.5,
        "the model: the store's 16 writes / 60 ms, got {capacity}"
    );
    let before = run
        .window(Duration::from_secs(5), Duration::from_secs(10))
        .await;
    // Symptom: the store passes its 267/s and the other ~133/s pile up inside it.
    let rate = before.persists_per_s();
    assert!(
        (rate - capacity).abs() / capacity < 0.05,
        "{rate:.1}/s against {capacity:.1}/s"
    );
    let growth = before.counts.persists_in_flight() as f64 / before.seconds;
    assert!(
        growth > 100.0,
        "persists in flight grow {growth:.0}/s, about 400 - 267"
    );
    assert!(before.most_in_flight > 1000, "{}", before.most_in_flight);
    assert_eq!(before.counts.requests_blocked, 0, "nothing blocks");
    assert!(
        before.longest_request < Duration::from_millis(10),
        "every reply stays fast: {:?}",
        before.longest_request
    );
    (before, capacity)
}

/// After a fix: the backlog of the unbounded tasks drained, then a window in
/// which nothing piles up.
async fn bounded(run: &Running, capacity: f64) -> Window {
    let after = run
        .window(Duration::from_secs(40), Duration::from_secs(10))
        .await;
    assert!(
        after.most_in_flight <= 16,
        "the 16 workers bound the persists: {}",
        after.most_in_flight
    );
    assert!(
        after.counts.persists_in_flight() <= 16,
        "no growth: {} more in flight at the end",
        after.counts.persists_in_flight()
    );
    assert!(
        after.persists_per_s() > 0.95 * capacity,
        "the store still passes its capacity: {:.1}/s",
        after.persists_per_s()
    );
    after
}

#[tokio::test(start_paused = true)]
async fn spawn_per_request_is_bounded_by_a_queue_that_refuses_when_full() {
    let scenario = Scenario::load("spawn-per-request").unwrap();
    let run = start("spawn-per-request");
    let (_, capacity) = piling_up(&run).await;
    run.apply_fix(&scenario, "bounded-queue-shed").await;
    let after = bounded(&run, capacity).await;
    let c = &after.counts;
    assert!(after.most_queued <= 256, "{}", after.most_queued);
    let refused = c.queue_refused as f64 / after.seconds;
    assert!(
        (100.0..170.0).contains(&refused),
        "the overflow, ~133/s, refused with 503: {refused:.0}/s"
    );
    assert_eq!(c.queue_dropped, 0);
}

#[tokio::test(start_paused = true)]
async fn spawn_per_request_is_bounded_by_a_queue_wait_limit() {
    let scenario = Scenario::load("spawn-per-request").unwrap();
    let run = start("spawn-per-request");
    let (_, capacity) = piling_up(&run).await;
    run.apply_fix(&scenario, "queue-wait-limit").await;
    let after = bounded(&run, capacity).await;
    let c = &after.counts;
    // Nothing waits much over 100 ms, so at 400/s the queue holds about 40.
    assert!(after.most_queued <= 80, "{}", after.most_queued);
    let dropped = c.queue_dropped as f64 / after.seconds;
    assert!(
        (100.0..170.0).contains(&dropped),
        "the overflow, ~133/s, dropped for waiting too long: {dropped:.0}/s"
    );
    assert_eq!(c.queue_refused, 0, "nothing refused: the queue has room");
}

/// size-variance under its load: small elements wait behind large ones.
async fn size_varied(run: &Running) -> Window {
    let before = run
        .window(Duration::from_secs(5), Duration::from_secs(30))
        .await;
    // Symptom: a small element's request takes ~4 ms unblocked; at p99 it waits
    // for permits held by large ones, and a quarter of all requests block.
    assert!(
        before.small_p99 >= Duration::from_millis(30),
        "small elements wait behind large ones: p99 {:?}",
        before.small_p99
    );
    assert!(
        before.counts.blocked_share() > 0.15,
        "{:.3}",
        before.counts.blocked_share()
    );
    before
}

/// A fresh size-variance server, the symptom, then `fix`: the small elements'
/// p99 under `small_p99_below`, under a third as many requests blocked at the
/// gate, and the same load through.
async fn size_variance_cured_by(fix: &str, small_p99_below: Duration) {
    let scenario = Scenario::load("size-variance").unwrap();
    let run = start("size-variance");
    let before = size_varied(&run).await;
    run.apply_fix(&scenario, fix).await;
    let after = run
        .window(Duration::from_secs(5), Duration::from_secs(30))
        .await;
    assert!(
        after.small_p99 < before.small_p99.min(small_p99_below),
        "{fix}: small p99 {:?} after, {:?} before",
        after.small_p99,
        before.small_p99
    );
    assert!(
        after.counts.blocked_share() < before.counts.blocked_share() / 3.0,
        "{fix}: {:.3} blocked, {:.3} before",
        after.counts.blocked_share(),
        before.counts.blocked_share()
    );
    assert!(
        after.persists_per_s() >= before.persists_per_s() * 0.98,
        "{fix}: {:.1}/s after, {:.1}/s before",
        after.persists_per_s(),
        before.persists_per_s()
    );
}

/// Multipart cures the blocking at the gate, but in a store of 16 slots a
/// large element's 8 parts take half of it: two at once fill it, and a small
/// element waits there for a slot. Its p99 falls from about 50 ms to about 30
/// (28-37 ms with 1 to 8 parts at once in this model), not to its own 4 ms as
/// the other two fixes bring it.
#[tokio::test(start_paused = true)]
async fn size_variance_cured_at_the_gate_by_multipart_writes_and_the_store_still_queues() {
    size_variance_cured_by("multipart", Duration::from_millis(42)).await;
}

#[tokio::test(start_paused = true)]
async fn size_variance_cured_by_a_lane_for_small_elements() {
    size_variance_cured_by("size-lanes", Duration::from_millis(15)).await;
}

/// A gate of 16 permits in front of the store's 16 slots (4 ms at p99 in
/// this model, nothing blocked).
#[tokio::test(start_paused = true)]
async fn size_variance_cured_by_a_gate_as_wide_as_the_store() {
    size_variance_cured_by("gate-to-the-store", Duration::from_millis(15)).await;
}

#[tokio::test(start_paused = true)]
async fn byte_weighted_admission_blocks_fewer_but_leaves_the_small_elements_tail() {
    // The contrast docs/scenarios.md shows: 64 permits of 256 KiB let many small
    // elements through at once, so far fewer block; but a FIFO gate holds every
    // small element behind a large one collecting its permits, so their tail is
    // not cured (the fixes' bound is a third of the tail; this stays above half).
    let run = start("size-variance");
    let before = size_varied(&run).await;
    let (status, body) = run
        .call(
            Request::put("/admin/config")
                .header("content-type", "application/json")
                .body(Body::from(r#"{"permits": 64, "permit_bytes": "256KiB"}"#))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let after = run
        .window(Duration::from_secs(5), Duration::from_secs(30))
        .await;
    assert!(
        after.counts.blocked_share() < before.counts.blocked_share() / 2.0,
        "{:.3} blocked weighted, {:.3} counted",
        after.counts.blocked_share(),
        before.counts.blocked_share()
    );
    assert!(
        after.small_p99 > before.small_p99 / 2,
        "small p99 {:?} weighted, {:?} counted",
        after.small_p99,
        before.small_p99
    );
}
