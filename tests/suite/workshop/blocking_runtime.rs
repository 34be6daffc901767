//! blocking-runtime (seed 001) on a real server and real threads: the symptom is
//! about the runtime itself, so virtual time cannot show it. The server binary runs
//! the scenario under its documented load (sim-clients' own engine, in this
//! process); the test measures the server's timer canary (`/stats.runtime`) and
//! its own `/healthz` round trips, applies each fix live through
//! `PUT /admin/config`, measures again, and switches the scenario back before the
//! next fix, all on one server so the phases compete for the cores with nothing
//! but each other.
//!
//! Bounds: before, the canary's p99 over the scenario's `[[check]]` bound with its
//! p50 under 5 ms, the workers busy at least a quarter of the time and a /healthz
//! p99 of at least 10 ms; after each fix, the scenario's own win condition (canary
//! p99 and busy share under its `[[check]]` bounds, /healthz p99 under the
//! canary's bound) and at least half the works done before. The work costs 35 ms
//! of CPU on any machine (`work_cpu`, calibrated by the server at start), so the
//! load is the same everywhere. Measured on 2-vCPU VMs: 30-40 ms p99 before, 2-8
//! ms after (this test's load runs in the test process, beside a debug server).
//!
//! The works' ratio is not 0.8: a fix runs the work on one thread (a limit of
//! one, the cores less one), so it gets through the same load only while the
//! machine's other core is free; with a release build beside it, the rayon pool
//! did 14.99 works/s against 19.3 before (0.78) and failed a bound of 0.8. Half
//! is what a fix that stalls the work (a pool with no thread, a limit of zero)
//! cannot reach and a fix beside a build does. The canary's bound is the check's
//! 20 ms: before 30-40 ms here (1.5x over), after 2-8 ms (2.5x under); /healthz
//! likewise. The ratios are to the same run's "before", so a slower machine moves
//! both sides; this test runs on the whole machine, and tests/suite/workshop/exercises.rs
//! holds the same win condition with the server on one core and at half a core.
//!
//! Tier C (the full suite only): 30 s of load judged by the CPU it gets, so it
//! runs alone. Run with: `tools/test -E 'test(/^blocking_runtime::/)'`.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::Value;
use simulator_clients::LoadPlan;
use simulator_service::scenario::Scenario;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A fresh window: the canary's window is 5 s, so 6 s after a change it holds
/// nothing from before it.
const SETTLE: Duration = Duration::from_secs(6);

#[derive(Debug)]
struct Phase {
    canary_p50_us: u64,
    canary_p99_us: u64,
    busy_share: f64,
    healthz_p99: Duration,
    works_per_s: f64,
}

/// Lets the load run for [`SETTLE`] while timing `/healthz` every 20 ms, then
/// reads the canary's window.
async fn measure(client: &HttpClient, operator: &str) -> Phase {
    let works_before = stats(client, operator).await["work_done"].as_u64().unwrap();
    let started = Instant::now();
    let mut healthz = Vec::new();
    while started.elapsed() < SETTLE {
        let sent = Instant::now();
        let answer = get(client, &format!("{operator}/healthz")).await;
        assert_eq!(answer.status, 200);
        // The first second may still be the old configuration's.
        if started.elapsed() > Duration::from_secs(1) {
            healthz.push(sent.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let now = stats(client, operator).await;
    let runtime = &now["runtime"];
    healthz.sort();
    let at = |v: &Value, key: &str| v[key].as_u64().unwrap();
    Phase {
        canary_p50_us: at(runtime, "late_p50_us"),
        canary_p99_us: at(runtime, "late_p99_us"),
        busy_share: runtime["busy_share"].as_f64().unwrap(),
        healthz_p99: healthz[healthz.len() * 99 / 100],
        works_per_s: (at(&now, "work_done") - works_before) as f64
            / started.elapsed().as_secs_f64(),
    }
}

fn assert_stalled(phase: &Phase) {
    let canary_ms = bound(
        &Scenario::load("blocking-runtime").unwrap(),
        "canary_p99_ms",
    );
    assert!(
        phase.canary_p99_us as f64 >= canary_ms * 1e3 && phase.canary_p50_us < 5_000,
        "the canary's tail, not its middle, is late (p99 over {canary_ms} ms): {phase:?}"
    );
    assert!(phase.busy_share >= 0.25, "workers busy: {phase:?}");
    assert!(
        phase.healthz_p99 >= Duration::from_millis(10),
        "/healthz waits behind the compression: {phase:?}"
    );
}

/// The bound of the scenario's win condition on `metric`.
fn bound(scenario: &Scenario, metric: &str) -> f64 {
    scenario
        .check
        .iter()
        .find(|c| c.metric == metric)
        .and_then(|c| c.below)
        .unwrap_or_else(|| panic!("blocking-runtime's check bounds {metric:?} from above"))
}

fn assert_cured(scenario: &Scenario, fix: &str, phase: &Phase, before: &Phase) {
    let canary_ms = bound(scenario, "canary_p99_ms");
    assert!(
        (phase.canary_p99_us as f64) < canary_ms * 1e3,
        "{fix}: the canary is on time again (< {canary_ms} ms): {phase:?}"
    );
    assert!(
        phase.healthz_p99.as_secs_f64() * 1e3 < canary_ms,
        "{fix}: /healthz is answered at once (< {canary_ms} ms): {phase:?}"
    );
    let busy = bound(scenario, "busy_share");
    assert!(
        phase.busy_share < busy,
        "{fix}: the async workers no longer do the work (< {busy}): {phase:?}"
    );
    assert!(
        phase.works_per_s >= before.works_per_s * 0.5,
        "{fix}: the same load gets through: {phase:?} vs {before:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 30 s of CPU-bound load judged by timing; runs alone"]
async fn blocking_runtime_is_cured_by_each_fix_and_returns_without_it_alone() {
    common::runs_alone();
    let scenario = Scenario::load("blocking-runtime").unwrap();
    let server = Server::start(&["--scenario", "blocking-runtime"]);
    let operator = server.operator_url.clone().unwrap();
    let client = client();

    // The scenario's own load, until the test stops it.
    let plan = LoadPlan::running_for(&scenario.load, &server.url, None);
    let stop = CancellationToken::new();
    let load = tokio::spawn({
        let stop = stop.clone();
        async move { simulator_clients::run(&plan, stop, false).await }
    });

    for fix in &scenario.fixes {
        let before = measure(&client, &operator).await;
        assert_stalled(&before);
        let body = serde_json::to_string(&fix.config).unwrap();
        let applied = put_json(&client, &format!("{operator}/admin/config"), &body).await;
        assert_eq!(applied.status, 200, "{}", applied.body);
        let after = measure(&client, &operator).await;
        assert_cured(&scenario, &fix.name, &after, &before);
        let back = put_json(
            &client,
            &format!("{operator}/admin/config"),
            r#"{"scenario": "blocking-runtime"}"#,
        )
        .await;
        assert_eq!(back.status, 200, "{}", back.body);
    }
    // And without a fix the stall is back.
    assert_stalled(&measure(&client, &operator).await);
    stop.cancel();
    let report = load.await.unwrap().unwrap();
    assert!(report.requests_completed > 0 && report.errors == 0);
}
