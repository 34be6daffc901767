//! The original simulator's model, proved on virtual time.
//!
//! Every test runs with tokio's clock paused: sleeps complete instantly in real time
//! but in order and with exact virtual durations, so "1,000 requests take 7.5 s" is
//! checked to the millisecond without waiting 7.5 s or depending on machine load.

use std::time::Duration;

use system_simulator::config::{ConfigUpdate, ServerConfig};
use system_simulator::delay::Delay;
use system_simulator::persist::Element;
use system_simulator::processor::DataProcessor;
use tokio::task::JoinSet;
use tokio::time::Instant;

fn processor(permits: usize, persist: Duration) -> DataProcessor {
    DataProcessor::new(&ServerConfig {
        permits,
        persist_latency: Delay::fixed(persist),
        network_delay: Delay::fixed(Duration::ZERO),
        ..ServerConfig::default()
    })
    .unwrap()
}

fn element() -> Element {
    Element::Synthetic(100)
}

/// Waits (in virtual time) until no persist is in flight.
async fn drained(p: &DataProcessor) {
    p.drain(Instant::now() + Duration::from_secs(3600)).await;
}

#[tokio::test(start_paused = true)]
async fn a_request_blocks_exactly_when_every_permit_is_held_by_a_persist() {
    let p = processor(2, Duration::from_millis(100));
    let t0 = Instant::now();

    // Two requests take both permits and return at once: the handler does not wait
    // for persistence, but the permits stay held for the whole 100 ms persist.
    for _ in 0..2 {
        let reply = p.handle(element()).await.unwrap();
        assert!(!reply.blocked);
    }
    assert_eq!(p.gate().available(), 0);
    assert_eq!(p.counts().persists_in_flight(), 2);

    let third = tokio::spawn({
        let p = p.clone();
        async move { p.handle(element()).await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !third.is_finished(),
        "no permit was free: the third request must wait"
    );
    assert_eq!(p.counts().requests_blocked, 1);

    let reply = third.await.unwrap();
    assert!(reply.blocked);
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(100),
        "granted the moment a persist ended"
    );
    assert_eq!(reply.permit_wait_ns, 100_000_000);

    drained(&p).await;
    let again = p.handle(element()).await.unwrap();
    assert!(!again.blocked, "after the persists end nothing blocks");
    let c = p.counts();
    assert_eq!((c.requests_nonblocked, c.requests_blocked), (3, 1));
}

#[tokio::test(start_paused = true)]
async fn the_permit_comes_back_when_persistence_fails() {
    let p = processor(1, Duration::from_millis(10));
    p.update(&ConfigUpdate {
        persist_error_rate: Some(1.0),
        ..ConfigUpdate::default()
    })
    .unwrap();
    let mut set = JoinSet::new();
    for _ in 0..5 {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    let blocked = set.join_all().await.iter().filter(|r| r.blocked).count();
    assert_eq!(blocked, 4, "one permit: all but the first wait");
    drained(&p).await;
    let c = p.counts();
    assert_eq!((c.persists_done, c.persists_failed), (5, 5));
    assert_eq!(p.gate().available(), p.gate().total());
}

#[tokio::test(start_paused = true)]
async fn the_permit_comes_back_when_the_file_store_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let p = DataProcessor::new(&ServerConfig {
        permits: 1,
        persist_dir: Some(dir.path().to_owned()),
        network_delay: Delay::fixed(Duration::ZERO),
        ..ServerConfig::default()
    })
    .unwrap();
    // The directory vanishes under the running server (root ignores permissions).
    std::fs::remove_dir(dir.path()).unwrap();
    for _ in 0..3 {
        p.handle(element()).await.unwrap();
        drained(&p).await;
    }
    assert_eq!(p.counts().persists_failed, 3);
    assert_eq!(p.gate().available(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_thousand_requests_at_once_take_permits_over_persist_time() {
    // 8 permits, 60 ms persists: capacity 8 / 60 ms = 133.3/s, so 1,000 requests
    // need 1000 / 133.3 = 7.5 s. Little's law, exactly, on virtual time.
    let p = processor(8, Duration::from_millis(60));
    let t0 = Instant::now();
    let mut set = JoinSet::new();
    for _ in 0..1000 {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    let replies = set.join_all().await;
    drained(&p).await;
    assert_eq!(t0.elapsed(), Duration::from_millis(7500));

    let blocked = replies.iter().filter(|r| r.blocked).count();
    assert_eq!(blocked, 992, "only the first 8 found a free permit");
    let longest_wait = replies.iter().map(|r| r.permit_wait_ns).max().unwrap();
    assert_eq!(
        longest_wait, 7_440_000_000,
        "the last waited 124 persist rounds"
    );
    let c = p.counts();
    assert_eq!(
        (c.requests_started, c.requests_done, c.persists_done),
        (1000, 1000, 1000)
    );
}

#[tokio::test(start_paused = true)]
async fn the_seeds_fix_removes_blocking() {
    let p = processor(8, Duration::from_millis(60));
    p.update(&ConfigUpdate {
        permits: Some(8 * 1000),
        ..ConfigUpdate::default()
    })
    .unwrap();
    let t0 = Instant::now();
    let mut set = JoinSet::new();
    for _ in 0..1000 {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    assert!(set.join_all().await.iter().all(|r| !r.blocked));
    drained(&p).await;
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(60),
        "all persist in parallel"
    );
}

#[tokio::test(start_paused = true)]
async fn the_request_lifetime_includes_both_network_traverses() {
    let p = DataProcessor::new(&ServerConfig {
        permits: 8,
        persist_latency: Delay::fixed(Duration::from_millis(60)),
        network_delay: Delay::fixed(Duration::from_millis(2)),
        ..ServerConfig::default()
    })
    .unwrap();
    let t0 = Instant::now();
    p.handle(element()).await.unwrap();
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(4),
        "in and out, not the persist"
    );
}

#[tokio::test(start_paused = true)]
async fn shrinking_permits_while_loaded_settles_to_the_new_capacity() {
    let p = processor(16, Duration::from_millis(60));
    let mut set = JoinSet::new();
    for _ in 0..100 {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    tokio::time::sleep(Duration::from_millis(30)).await;
    p.update(&ConfigUpdate {
        permits: Some(2),
        ..ConfigUpdate::default()
    })
    .unwrap();
    set.join_all().await;
    drained(&p).await;
    assert_eq!((p.gate().available(), p.gate().total()), (2, 2));
}

#[tokio::test(start_paused = true)]
async fn a_reset_in_flight_keeps_the_counts_balanced() {
    let p = processor(1, Duration::from_millis(60));
    let mut set = JoinSet::new();
    for _ in 0..10 {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    p.events().stats().reset();
    set.join_all().await;
    drained(&p).await;
    let c = p.counts();
    assert_eq!(c.requests_started, c.requests_done);
    assert_eq!(c.persists_started, c.persists_done);
    assert!(c.requests_done < 10, "the window starts at the reset");
}

#[tokio::test(start_paused = true)]
async fn drain_reports_what_the_deadline_abandoned() {
    let p = processor(1, Duration::from_secs(10));
    p.handle(element()).await.unwrap();
    let report = p.drain(Instant::now() + Duration::from_secs(1)).await;
    assert_eq!(report.persists_abandoned, 1);
    assert_eq!(
        report.counts.persists_started,
        report.counts.persists_done + report.persists_abandoned
    );
}
