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
use simulator_api::{Counts, Stats};
use system_simulator::request_path::{DataProcessor, Element};
use system_simulator::scenario::Scenario;
use system_simulator::serving::http::app;
use system_simulator::serving::state::AppState;
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
    /// The longest request lifetime seen, in ns, answered or refused.
    longest: Arc<AtomicU64>,
}

/// What a window of the load did.
#[derive(Debug)]
struct Window {
    counts: Counts,
    seconds: f64,
    most_in_flight: u64,
    most_queued: u64,
    longest_request: Duration,
}

impl Window {
    fn persists_per_s(&self) -> f64 {
        self.counts.persists_done as f64 / self.seconds
    }
}

/// `--n` and `--think-time` of the scenario's documented load.
fn load_of(scenario: &Scenario) -> (usize, Duration) {
    assert!(
        scenario.load_value("--n").is_some() && scenario.load_value("--think-time").is_some(),
        "{}: its load names --n and --think-time",
        scenario.name
    );
    (scenario.clients(), scenario.think_time())
}

fn start(name: &str) -> Running {
    let scenario = Scenario::load(name).unwrap();
    let (clients, think) = load_of(&scenario);
    let processor = DataProcessor::new(&scenario.settings()).unwrap();
    let router = app(AppState::new(processor.clone(), scenario))
        .layer(MockConnectInfo(SocketAddr::from(([127, 0, 0, 1], 9))));
    let stop = CancellationToken::new();
    let longest = Arc::new(AtomicU64::new(0));
    for _ in 0..clients {
        let (p, stop, longest) = (processor.clone(), stop.clone(), Arc::clone(&longest));
        tokio::spawn(async move {
            while !stop.is_cancelled() {
                let sent = Instant::now();
                let _ = p.handle(Element::Synthetic(1024)).await;
                let took = u64::try_from(sent.elapsed().as_nanos()).unwrap_or(u64::MAX);
                longest.fetch_max(took, Ordering::Relaxed);
                tokio::time::sleep(think).await;
            }
        });
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
        longest,
    }
}

impl Running {
    /// Lets the load settle for `settle`, then measures it for `measure`.
    async fn window(&self, settle: Duration, measure: Duration) -> Window {
        tokio::time::sleep(settle).await;
        *self.most.lock().unwrap() = (0, 0);
        self.longest.store(0, Ordering::Relaxed);
        let before = self.processor.counts();
        let t0 = Instant::now();
        tokio::time::sleep(measure).await;
        let (most_in_flight, most_queued) = *self.most.lock().unwrap();
        Window {
            counts: self.processor.counts().since(&before),
            seconds: t0.elapsed().as_secs_f64(),
            most_in_flight,
            most_queued,
            longest_request: Duration::from_nanos(self.longest.load(Ordering::Relaxed)),
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
        let body = fix.config_for(load_of(scenario).0).unwrap();
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
    assert!(
        before.counts.blocked_share() > 0.9,
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
    assert_eq!(
        c.persists_started,
        c.persists_done + after.counts.persists_in_flight().min(8) - c.persists_in_flight().min(8),
        "one persist-done per element"
    );
}
