//! Injected faults and shutdown, on virtual time: stalled and failing persists,
//! slow networks, hung-up clients and the drain deadline. Whatever happens, every
//! request-start gets its request-done and every permit comes back.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use simulator_api::Delay;
use simulator_api::{Settings, SettingsUpdate};
use simulator_service::parts::Element;
use simulator_service::parts::{DataProcessor, RequestError};
use tokio::task::JoinSet;
use tokio::time::Instant;

fn processor(config: Settings) -> DataProcessor {
    DataProcessor::new(&Settings {
        network_delay: Delay::fixed(Duration::ZERO),
        ..config
    })
    .unwrap()
}

fn element() -> Element {
    Element::Synthetic(100)
}

fn assert_settled(p: &DataProcessor) {
    let c = p.counts();
    assert_eq!(c.requests_started, c.requests_done, "{c:?}");
    assert_eq!(c.persists_started, c.persists_done, "{c:?}");
    assert_eq!(
        p.admission().available(),
        p.admission().total(),
        "every permit back"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stalled_persist_is_timed_out_and_its_permit_comes_back() {
    let p = processor(Settings {
        permits: 2,
        persist_stall_rate: 1.0,
        persist_timeout: Duration::from_millis(500),
        ..Settings::default()
    });
    let t0 = Instant::now();
    let mut set = JoinSet::new();
    for _ in 0..6 {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    let replies = set.join_all().await;
    // Two permits, each freed only by a 500 ms timeout: the last pair waits 1 s.
    assert_eq!(replies.iter().filter(|r| r.blocked).count(), 4);
    assert_eq!(t0.elapsed(), Duration::from_secs(1));
    p.drain(Instant::now() + Duration::from_secs(10)).await;
    assert_settled(&p);
    let c = p.counts();
    assert_eq!((c.persists_timed_out, c.persists_failed), (6, 6));
}

#[tokio::test(start_paused = true)]
async fn a_durable_request_waits_for_its_persist_and_reports_its_failure() {
    let dir = tempfile::tempdir().unwrap();
    let p = processor(Settings {
        permits: 1,
        persist_dir: Some(dir.path().to_owned()),
        durable: true,
        persist_error_rate: 1.0,
        ..Settings::default()
    });
    let outcome = p.handle(element()).await;
    assert!(
        matches!(&outcome, Err(RequestError::NotStored(reason)) if reason.contains("injected")),
        "{outcome:?}"
    );
    p.drain(Instant::now() + Duration::from_secs(10)).await;
    assert_settled(&p);
}

#[tokio::test(start_paused = true)]
async fn shutdown_cuts_short_the_waiters_and_reports_the_persists_left_running() {
    let p = processor(Settings {
        permits: 1,
        persist_latency: Delay::fixed(Duration::from_secs(600)),
        ..Settings::default()
    });
    let mut set = JoinSet::new();
    for _ in 0..5 {
        let p = p.clone();
        set.spawn(async move { p.submit(element(), 0).await });
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
    let t0 = Instant::now();
    let report = p.drain(t0 + Duration::from_secs(2)).await;
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(2),
        "the deadline, not later"
    );
    let outcomes = set.join_all().await;
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1);
    assert!(outcomes
        .iter()
        .filter(|o| o.is_err())
        .all(|o| *o == Err(RequestError::ShuttingDown)));
    assert_eq!(report.requests_cut_short, 4);
    assert_eq!(report.requests_abandoned, 0);
    assert_eq!(report.persists_abandoned, 1);
    let c = report.counts;
    assert_eq!(c.requests_started, c.requests_done, "started = done");
    assert_eq!(
        c.persists_started,
        c.persists_done + report.persists_abandoned
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_cuts_short_a_request_stuck_on_a_slow_network() {
    let p = DataProcessor::new(&Settings {
        network_delay: Delay::fixed(Duration::from_secs(3000)),
        ..Settings::default()
    })
    .unwrap();
    let request = tokio::spawn({
        let p = p.clone();
        async move { p.submit(element(), 0).await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let report = p.drain(Instant::now() + Duration::from_secs(1)).await;
    assert_eq!(request.await.unwrap(), Err(RequestError::ShuttingDown));
    assert_eq!(report.requests_cut_short, 1);
    assert_eq!(report.counts.requests_started, report.counts.requests_done);
    assert_eq!(
        report.counts.persists_started, 0,
        "it never reached the gate"
    );
}

/// Faults of every kind at once, clients that hang up at random and permits resized
/// under load: after the drain the books balance and the gate is whole.
#[tokio::test(start_paused = true)]
async fn every_permit_comes_back_whatever_goes_wrong() {
    let p = processor(Settings {
        permits: 4,
        persist_latency: "uniform(20ms, 80ms)".parse().unwrap(),
        persist_error_rate: 0.2,
        persist_stall_rate: 0.1,
        persist_timeout: Duration::from_millis(300),
        network_delay: Delay::fixed(Duration::from_millis(1)),
        ..Settings::default()
    });
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut set = JoinSet::new();
    for i in 0..600u64 {
        let p2 = p.clone();
        let give_up = Duration::from_millis(rng.random_range(1..400));
        // Through submit, as the HTTP handler does; a client that gives up drops it.
        set.spawn(async move {
            let _ = tokio::time::timeout(give_up, p2.submit(element(), 0)).await;
        });
        if i % 50 == 0 {
            let permits = rng.random_range(1..12);
            p.update(&SettingsUpdate {
                permits: Some(permits),
                ..SettingsUpdate::default()
            })
            .unwrap();
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..5))).await;
    }
    set.join_all().await;
    let report = p.drain(Instant::now() + Duration::from_secs(3600)).await;
    assert_eq!(report.requests_cut_short, 0);
    assert_settled(&p);
    let c = p.counts();
    assert_eq!(c.requests_started, 600);
    assert!(
        c.persists_timed_out > 10 && c.persists_failed > c.persists_timed_out + 30,
        "{c:?}"
    );
}
