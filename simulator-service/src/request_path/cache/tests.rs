//! The cache's reads and fills through the data processor, on tokio's paused
//! clock: a store of `SLOTS` slots, each read 50 ms, no network delay.

use std::time::Duration;

use simulator_api::settings::{AbandonedFills, CacheFills, StaleReads};
use simulator_api::{Counts, Settings, SettingsUpdate};

use crate::request_path::{DataProcessor, RequestError};

const SLOTS: usize = 1;
const READ: Duration = Duration::from_millis(50);

fn settings(entries: usize) -> Settings {
    Settings {
        cache_entries: entries,
        store_concurrency: SLOTS,
        persist_latency: "50ms".parse().unwrap(),
        network_delay: "0s".parse().unwrap(),
        ..Settings::default()
    }
}

fn counts(p: &DataProcessor) -> Counts {
    p.counts()
}

/// Lets every spawned fill run to its end on the paused clock.
async fn settle() {
    tokio::time::sleep(Duration::from_secs(5)).await;
}

#[tokio::test(start_paused = true)]
async fn a_warm_cache_hits_its_keys_and_a_miss_fills_it() {
    let p = DataProcessor::new(&settings(10)).unwrap();
    assert_eq!(p.figures().cache_held, 10, "keys 0 to 9 at start");
    p.submit_read(3, 0).await.unwrap();
    p.submit_read(42, 0).await.unwrap();
    p.submit_read(42, 0).await.unwrap();
    let c = counts(&p);
    assert_eq!((c.cache_hits, c.cache_misses), (2, 1), "{c:?}");
    assert_eq!((c.cache_fills_started, c.cache_fills_done), (1, 1));
    assert_eq!(
        p.figures().cache_held,
        10,
        "the least recently used went out"
    );
    assert_eq!(c.requests_started, c.requests_done);
}

#[tokio::test(start_paused = true)]
async fn a_fill_whose_client_left_is_abandoned_and_fills_nothing() {
    let p = DataProcessor::new(&settings(10)).unwrap();
    // One slot: the first miss reads for 50 ms, the second waits behind it.
    let first = tokio::spawn(p.submit_read(100, 0));
    tokio::task::yield_now().await;
    let second = tokio::time::timeout(READ / 2, p.submit_read(101, 0)).await;
    assert!(second.is_err(), "its client gave up while it waited");
    first.await.unwrap().unwrap();
    settle().await;
    let c = counts(&p);
    assert_eq!(c.cache_fills_done, 1, "{c:?}");
    assert_eq!(c.cache_fills_abandoned, 1, "{c:?}");
    assert_eq!(
        c.cache_fills_wasted, 0,
        "it gave up before the store read it"
    );
    assert_eq!(
        c.requests_cancelled, 1,
        "its request ended when its client left"
    );
    p.submit_read(101, 0).await.unwrap();
    assert_eq!(counts(&p).cache_misses, 3, "key 101 never went in");

    // Left while the store was reading it: the read is made, and wasted.
    let gone = tokio::time::timeout(READ / 2, p.submit_read(102, 0)).await;
    assert!(gone.is_err());
    settle().await;
    let c = counts(&p);
    assert_eq!(
        (c.cache_fills_abandoned, c.cache_fills_wasted),
        (2, 1),
        "{c:?}"
    );
    assert_eq!(c.cache_fills_started, c.cache_fills_ended);
}

#[tokio::test(start_paused = true)]
async fn kept_fills_fill_the_cache_after_their_client_left() {
    let p = DataProcessor::new(&Settings {
        abandoned_fills: AbandonedFills::Keep,
        ..settings(10)
    })
    .unwrap();
    let gone = tokio::time::timeout(READ / 2, p.submit_read(200, 0)).await;
    assert!(gone.is_err());
    settle().await;
    p.submit_read(200, 0).await.unwrap();
    let c = counts(&p);
    assert_eq!((c.cache_hits, c.cache_fills_done), (1, 1), "{c:?}");
}

#[tokio::test(start_paused = true)]
async fn coalesced_misses_of_one_key_share_one_fill() {
    let p = DataProcessor::new(&Settings {
        cache_fills: CacheFills::Coalesced,
        ..settings(10)
    })
    .unwrap();
    let reads: Vec<_> = (0..20)
        .map(|_| tokio::spawn(p.submit_read(300, 0)))
        .collect();
    for read in reads {
        read.await.unwrap().unwrap();
    }
    let c = counts(&p);
    assert_eq!(c.cache_misses, 20, "{c:?}");
    assert_eq!((c.cache_fills_started, c.cache_fills_done), (1, 1), "{c:?}");
    // A shared fill belongs to no client: all of them leaving does not stop it.
    let gone = tokio::time::timeout(READ / 2, p.submit_read(301, 0)).await;
    assert!(gone.is_err());
    settle().await;
    p.submit_read(301, 0).await.unwrap();
    assert_eq!(counts(&p).cache_fills_done, 2);
}

#[tokio::test(start_paused = true)]
async fn a_miss_beyond_the_fill_limit_is_refused() {
    let p = DataProcessor::new(&Settings {
        fill_limit: 1,
        ..settings(10)
    })
    .unwrap();
    let first = tokio::spawn(p.submit_read(400, 0));
    tokio::task::yield_now().await;
    assert_eq!(p.submit_read(401, 0).await, Err(RequestError::FillLimit));
    first.await.unwrap().unwrap();
    let c = counts(&p);
    assert_eq!((c.cache_fills_refused, c.cache_fills_done), (1, 1), "{c:?}");
    assert_eq!(c.requests_started, c.requests_done);
}

#[tokio::test(start_paused = true)]
async fn a_change_of_size_empties_the_cache_and_no_cache_misses_every_read() {
    let p = DataProcessor::new(&settings(10)).unwrap();
    let down = SettingsUpdate {
        cache_entries: Some(0),
        ..SettingsUpdate::default()
    };
    p.update(&down).unwrap();
    assert_eq!(p.figures().cache_held, 0);
    p.submit_read(1, 0).await.unwrap();
    p.submit_read(1, 0).await.unwrap();
    assert_eq!(counts(&p).cache_misses, 2, "no cache: nothing is kept");
    let back = SettingsUpdate {
        cache_entries: Some(10),
        ..SettingsUpdate::default()
    };
    p.update(&back).unwrap();
    assert_eq!(p.figures().cache_held, 0, "it comes back empty");
    p.submit_read(1, 0).await.unwrap();
    p.submit_read(1, 0).await.unwrap();
    let c = counts(&p);
    assert_eq!((c.cache_hits, c.cache_misses), (1, 3), "{c:?}");
}

fn reachable(p: &DataProcessor, yes: bool) {
    p.update(&SettingsUpdate {
        cache_reachable: Some(yes),
        ..SettingsUpdate::default()
    })
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_cache_misses_every_read_and_comes_back_stale() {
    let p = DataProcessor::new(&settings(10)).unwrap();
    reachable(&p, false);
    p.submit_read(1, 0).await.unwrap();
    p.submit_read(1, 0).await.unwrap();
    let c = counts(&p);
    assert_eq!((c.cache_hits, c.cache_misses), (0, 2), "{c:?}");
    assert_eq!(p.figures().cache_held, 10, "it keeps what it held");
    reachable(&p, true);
    // Key 1 is stale: a miss, whose fill makes it fresh; key 2 was never read.
    p.submit_read(1, 0).await.unwrap();
    p.submit_read(1, 0).await.unwrap();
    p.submit_read(2, 0).await.unwrap();
    let c = counts(&p);
    assert_eq!((c.cache_hits, c.cache_misses), (1, 4), "{c:?}");
    assert_eq!(c.cache_stale_hits, 0, "stale_reads = miss serves none");
    // Going unreachable and back again makes the fresh entry stale too.
    reachable(&p, false);
    reachable(&p, true);
    p.submit_read(1, 0).await.unwrap();
    assert_eq!(counts(&p).cache_misses, 5);
}

#[tokio::test(start_paused = true)]
async fn served_stale_reads_answer_at_once_and_refresh_each_key_once() {
    let p = DataProcessor::new(&Settings {
        stale_reads: StaleReads::Serve,
        ..settings(10)
    })
    .unwrap();
    reachable(&p, false);
    reachable(&p, true);
    let began = tokio::time::Instant::now();
    for _ in 0..5 {
        p.submit_read(3, 0).await.unwrap();
    }
    assert!(began.elapsed() < READ, "served without the store");
    let c = counts(&p);
    assert_eq!((c.cache_stale_hits, c.cache_misses), (5, 0), "{c:?}");
    assert_eq!(c.cache_fills_started, 1, "one refresh for five reads");
    settle().await;
    p.submit_read(3, 0).await.unwrap();
    let c = counts(&p);
    assert_eq!((c.cache_hits, c.cache_fills_done), (1, 1), "{c:?}");
    // A key that is not in the cache is still a miss that fills.
    p.submit_read(50, 0).await.unwrap();
    assert_eq!(counts(&p).cache_misses, 1);
}

#[tokio::test(start_paused = true)]
async fn at_the_fill_limit_a_stale_read_is_served_without_a_refresh() {
    let p = DataProcessor::new(&Settings {
        stale_reads: StaleReads::Serve,
        fill_limit: 1,
        ..settings(10)
    })
    .unwrap();
    reachable(&p, false);
    reachable(&p, true);
    let miss = tokio::spawn(p.submit_read(500, 0));
    tokio::task::yield_now().await;
    p.submit_read(4, 0).await.unwrap();
    miss.await.unwrap().unwrap();
    let c = counts(&p);
    assert_eq!((c.cache_stale_hits, c.cache_fills_refused), (1, 0), "{c:?}");
    assert_eq!(c.cache_fills_started, 1, "the miss's fill only");
    // The next read of it, below the limit, refreshes it.
    p.submit_read(4, 0).await.unwrap();
    settle().await;
    p.submit_read(4, 0).await.unwrap();
    assert_eq!(counts(&p).cache_hits, 1);
}
