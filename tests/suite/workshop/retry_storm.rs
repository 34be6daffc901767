//! Exercise 7, retry-storm: the failure outlives its trigger, and a fix makes it
//! recover by itself. Two runs of the ticket's load at once, each on its own
//! server, each with the incident begun 5 s in (`PUT /admin/incident`, which the
//! server puts back 10 s later):
//!
//! - no fix: once the incident has ended the store is fast again, yet goodput
//!   stays under half the offered rate to the end while the server writes at its
//!   full capacity, most of it for clients that have gone (`persists_wasted`),
//!   and the clients send about 4x the offered rate; `/stats` showed the incident
//!   while it was in force and `/stats.model` says the retried load exceeds the
//!   capacity;
//! - `cancel-on-disconnect`: the same incident, and goodput is back within 15 s;
//!   requests are cancelled and every request-start still has its request-done.
//!
//! What it asks are counts the storm makes whatever CPU the servers get (a
//! slower server only deepens the storm; the cure's recovery took 0-1.3 s of its
//! 15 in the last CI runs' figures, on every confinement), so it runs beside the
//! shared tests, in the heavy group. The verdict of
//! every fix of the scenario (the client-side `--retry-budget 10%` among them,
//! given to `workshop check` as `--client-change` gives it), on the whole machine
//! and on one core and half a core, is `workshop figures`' in
//! tests/suite/workshop/exercises.rs; page 07's `workshop check --client-change` runs as
//! printed in tests/suite/guards/pages_run.rs. Tier C (the full suite only), 45 s:
//! `tools/test -E 'test(/^retry_storm::/)'`.

use crate::common;

use std::time::Duration;

use common::*;
use simulator_api::client;
use simulator_clients::{LoadPlan, Outputs, Report};
use simulator_service::scenario::Scenario;
use system_simulator::workshop::check;
use tokio_util::sync::CancellationToken;

const OFFERED: f64 = 112.0;

/// The ticket's load against `url` for the check's window, the incident begun
/// 5 s in; the report with its seconds, and `/stats` while the incident was on.
async fn stormed(url: &str) -> (Report, serde_json::Value) {
    let scenario = Scenario::load("retry-storm").unwrap();
    let window = check::window_for(&scenario, Duration::ZERO);
    let plan = LoadPlan::running_for(&scenario.load, url, Some(window));
    let incident = scenario.incident[0].clone();
    let target = url.to_owned();
    let during = tokio::spawn(async move {
        tokio::time::sleep(incident.at).await;
        client::begin_incident(&target, None).await.unwrap();
        tokio::time::sleep(incident.lasts / 2).await;
        stats(&client(), &target).await
    });
    let outputs = Outputs {
        seconds: true,
        ..Default::default()
    };
    let report = simulator_clients::run_with(&plan, CancellationToken::new(), outputs)
        .await
        .unwrap();
    (report, during.await.unwrap())
}

/// The goodput of every whole second that starts `from_s` or later into the run
/// (the last, shorter second left out).
fn goodput_from(report: &Report, from_s: f64) -> Vec<u64> {
    let mut previous = 0.0;
    let mut found = Vec::new();
    for second in &report.seconds {
        let (start, end) = (previous, second.line.t_s);
        previous = end;
        if end - start > 0.99 && start >= from_s {
            found.push(second.line.completed);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 45 s of load through a 10 s incident"]
async fn the_storm_outlives_its_trigger_and_a_fix_ends_it() {
    let bare = Server::start(&["--scenario", "retry-storm", "--admin-listen", "off"]);
    let cancel = Server::start(&[
        "--scenario",
        "retry-storm",
        "--admin-listen",
        "off",
        "--on-disconnect",
        "cancel",
    ]);
    let ((before, during), (after, _)) = tokio::join!(stormed(&bare.url), stormed(&cancel.url));

    // The incident, as /stats showed it while it was in force.
    assert_eq!(during["incident"]["seq"], 1, "{during}");
    assert_eq!(
        during["config"]["persist_latency"], "100ms",
        "{}",
        during["config"]
    );
    let model = &during["model"]["retried"];
    assert_eq!(model["retried_per_s"], 448.0, "{model}");
    assert_eq!(model["exceeds_capacity"], true, "{model}");

    // No fix: from 5 s after the incident's end (5 s + 10 s) to the end, goodput
    // stays under half the offered rate, though the store is fast again.
    let late = goodput_from(&before, 20.0);
    assert!(late.len() >= 15, "{late:?}");
    assert!(
        late.iter().all(|&good| (good as f64) < OFFERED / 2.0),
        "goodput came back by itself: {late:?}"
    );
    let client = client();
    let settled = stats(&client, &bare.url).await;
    assert_eq!(
        settled["incident"],
        serde_json::Value::Null,
        "ended: {settled}"
    );
    assert_eq!(settled["config"]["persist_latency"], "50ms", "put back");
    // The server is busy all the while: it writes at its capacity (160 a second)
    // and most of it for nobody.
    let server = before.server.as_ref().expect("the server's counts");
    let seconds = before.window_ns as f64 / 1e9;
    let writes_per_s = server.persists_done as f64 / seconds;
    assert!(writes_per_s > 120.0, "{writes_per_s} writes a second");
    assert!(
        server.persists_wasted * 2 > server.persists_done,
        "{} of {} writes wasted",
        server.persists_wasted,
        server.persists_done
    );
    assert!(
        before.attempts_per_s > 3.0 * OFFERED,
        "{}",
        before.attempts_per_s
    );

    // cancel-on-disconnect: back within 15 s of the end, and every request ended.
    let recovery = check::recovery_s(
        &after
            .seconds
            .iter()
            .map(|s| check::GoodputSecond::of(&s.line))
            .collect::<Vec<_>>(),
        15.0,
        check::RECOVERED_SHARE,
    );
    assert!(recovery < 15.0, "recovered after {recovery} s");
    let fixed = settled_stats(&client, &cancel.url).await;
    assert!(fixed["requests_cancelled"].as_u64().unwrap() > 0, "{fixed}");
    assert_eq!(fixed["requests_started"], fixed["requests_done"], "{fixed}");
}
