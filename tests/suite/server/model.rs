//! The original simulator's model, and the persistence pool, proved on virtual time.
//!
//! Every test runs with tokio's clock paused: sleeps complete instantly in real time
//! but in order and with exact virtual durations, so "1,000 requests take 7.5 s" is
//! checked to the millisecond without waiting 7.5 s or depending on machine load.
//! The one exception runs real zstd work on the blocking pool (virtual time cannot
//! stand in for CPU) and asserts only balances, never durations.

use std::time::Duration;

use simulator_api::settings::PersistenceKind;
use simulator_api::{Delay, Settings, SettingsUpdate};
use simulator_service::parts::{DataProcessor, Element};
use tokio::task::JoinSet;
use tokio::time::Instant;

fn processor(permits: usize, persist: Duration) -> DataProcessor {
    DataProcessor::new(&Settings {
        permits,
        persist_latency: Delay::fixed(persist),
        network_delay: Delay::fixed(Duration::ZERO),
        ..Settings::default()
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
    assert_eq!(p.admission().available(), 0);
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
    p.update(&SettingsUpdate {
        persist_error_rate: Some(1.0),
        ..SettingsUpdate::default()
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
    assert_eq!(p.admission().available(), p.admission().total());
}

#[tokio::test(start_paused = true)]
async fn the_permit_comes_back_when_the_file_store_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let p = DataProcessor::new(&Settings {
        permits: 1,
        persist_dir: Some(dir.path().to_owned()),
        network_delay: Delay::fixed(Duration::ZERO),
        ..Settings::default()
    })
    .unwrap();
    // The directory vanishes under the running server (root ignores permissions).
    std::fs::remove_dir(dir.path()).unwrap();
    for _ in 0..3 {
        p.handle(element()).await.unwrap();
        drained(&p).await;
    }
    assert_eq!(p.counts().persists_failed, 3);
    assert_eq!(p.admission().available(), 1);
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
    p.update(&SettingsUpdate {
        permits: Some(8 * 1000),
        ..SettingsUpdate::default()
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
    let p = DataProcessor::new(&Settings {
        permits: 8,
        persist_latency: Delay::fixed(Duration::from_millis(60)),
        network_delay: Delay::fixed(Duration::from_millis(2)),
        ..Settings::default()
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
    p.update(&SettingsUpdate {
        permits: Some(2),
        ..SettingsUpdate::default()
    })
    .unwrap();
    set.join_all().await;
    drained(&p).await;
    assert_eq!((p.admission().available(), p.admission().total()), (2, 2));
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
    p.events().counts().reset();
    set.join_all().await;
    drained(&p).await;
    let c = p.counts();
    assert_eq!(c.requests_started, c.requests_done);
    assert_eq!(c.persists_started, c.persists_done);
    assert!(c.requests_done < 10, "the window starts at the reset");
}

/// A reset while works run: every in-flight pair (requests, persists, works)
/// balances once the load is done, so no gauge reads below zero or drifts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_under_cpu_work_keeps_every_pair_balanced() {
    use simulator_api::settings::{WorkKind, WorkOn};
    let p = DataProcessor::new(&Settings {
        permits: 1000,
        persist_latency: Delay::fixed(Duration::from_millis(1)),
        network_delay: Delay::fixed(Duration::ZERO),
        work: WorkKind::Zstd,
        work_bytes: 256 << 10,
        work_on: WorkOn::BlockingPool,
        work_limit: simulator_api::settings::PoolSize::Count(1),
        ..Settings::default()
    })
    .unwrap();
    let mut set = JoinSet::new();
    for _ in 0..20 {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    // One work at a time: wait (in real time, bounded) until works are under way
    // and some are done, then reset in the middle of them.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while p.counts().work_done < 2 || p.counts().work_in_flight() == 0 {
        assert!(std::time::Instant::now() < deadline, "{:?}", p.counts());
        tokio::task::yield_now().await;
    }
    p.events().counts().reset();
    assert!(
        p.counts().work_in_flight() > 0,
        "the reset carried the works in flight"
    );
    set.join_all().await;
    drained(&p).await;
    let c = p.counts();
    assert_eq!(c.requests_started, c.requests_done, "{c:?}");
    assert_eq!(c.persists_started, c.persists_done, "{c:?}");
    assert_eq!(c.work_started, c.work_done, "{c:?}");
    assert!(c.work_done < 20, "the window starts at the reset: {c:?}");
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

/// A pool of `workers` behind a queue big enough for every element, with admission
/// out of the way, so the pool alone sets the pace.
fn pool(workers: usize, persist: Duration) -> DataProcessor {
    DataProcessor::new(&Settings {
        permits: 100_000,
        persistence: PersistenceKind::Pool,
        persist_workers: workers,
        persist_queue: 100_000,
        persist_latency: Delay::fixed(persist),
        network_delay: Delay::fixed(Duration::ZERO),
        ..Settings::default()
    })
    .unwrap()
}

/// Sends `n` requests at once and waits until every persist has ended, sampling
/// persists in flight every virtual millisecond meanwhile; returns (time until the
/// last persist-done, most in flight seen).
async fn drain_pool(p: &DataProcessor, n: usize) -> (Duration, u64) {
    let t0 = Instant::now();
    let sampler = tokio::spawn({
        let p = p.clone();
        async move {
            let mut most = 0;
            loop {
                most = most.max(p.counts().persists_in_flight());
                if p.counts().persists_done == n as u64 {
                    return most;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    });
    let mut set = JoinSet::new();
    for _ in 0..n {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    set.join_all().await;
    drained(p).await;
    let took = t0.elapsed();
    (took, sampler.await.unwrap())
}

#[tokio::test(start_paused = true)]
async fn one_worker_drains_one_element_per_persist_time() {
    // Seed 000's sequential drain: 1 / 60 ms = 16.7 elements/s, whatever admission allows.
    let p = pool(1, Duration::from_millis(60));
    let (took, most) = drain_pool(&p, 100).await;
    assert_eq!(
        took,
        Duration::from_millis(6000),
        "100 x 60 ms, one at a time"
    );
    assert_eq!(most, 1, "never more than one persist in flight");
    assert_eq!(p.counts().persists_started, 100);
    assert_eq!(p.figures().queued, 0);
}

#[tokio::test(start_paused = true)]
async fn thirty_two_workers_drain_thirty_two_times_as_fast() {
    let p = pool(32, Duration::from_millis(60));
    let (took, most) = drain_pool(&p, 3200).await;
    assert_eq!(
        took,
        Duration::from_millis(6000),
        "32 x as many in the same time"
    );
    assert_eq!(most, 32);
}

#[tokio::test(start_paused = true)]
async fn the_queue_holds_what_the_workers_have_not_started() {
    let p = pool(1, Duration::from_millis(60));
    let mut set = JoinSet::new();
    for _ in 0..10 {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    set.join_all().await;
    tokio::time::sleep(Duration::from_millis(1)).await;
    // One started, nine waiting: persist-start fires when a worker takes an element.
    assert_eq!((p.counts().persists_started, p.figures().queued), (1, 9));
    drained(&p).await;
    assert_eq!((p.counts().persists_done, p.figures().queued), (10, 0));
}

#[tokio::test(start_paused = true)]
async fn switching_persistence_live_loses_nothing_and_takes_effect_for_new_elements() {
    let p = processor(1000, Duration::from_millis(60));
    let mut set = JoinSet::new();
    for _ in 0..50 {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    set.join_all().await;
    p.update(&SettingsUpdate {
        persistence: Some(PersistenceKind::Pool),
        persist_workers: Some(1),
        ..SettingsUpdate::default()
    })
    .unwrap();
    // The 50 already handed off finish in parallel; the next 5 go one at a time.
    tokio::time::sleep(Duration::from_millis(61)).await;
    assert_eq!(p.counts().persists_done, 50);
    let t0 = Instant::now();
    let mut set = JoinSet::new();
    for _ in 0..5 {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    set.join_all().await;
    drained(&p).await;
    assert_eq!(t0.elapsed(), Duration::from_millis(300));
    let c = p.counts();
    assert_eq!((c.persists_started, c.persists_done), (55, 55));
    assert_eq!(p.admission().available(), p.admission().total());
}

#[tokio::test(start_paused = true)]
async fn drain_reports_elements_still_queued_at_the_deadline() {
    let p = pool(1, Duration::from_secs(1));
    let mut set = JoinSet::new();
    for _ in 0..5 {
        let p = p.clone();
        set.spawn(async move { p.handle(element()).await.unwrap() });
    }
    set.join_all().await;
    let report = p.drain(Instant::now() + Duration::from_millis(2500)).await;
    // Two persisted, the third running at the deadline, two never started.
    assert_eq!(report.counts.persists_done, 2);
    assert_eq!(report.persists_abandoned, 1);
    assert_eq!(report.queued_abandoned, 2);
}
