//! The elements answered and not yet written over a check's window, as the
//! server counts them, read twice a second: their most at once
//! (`/stats.acked_unwritten_peak`, the largest over the server's last 1.0-1.1 s,
//! so consecutive reads overlap and no peak falls between two of them, however
//! late a read comes back on a busy machine, up to half a second; the count only
//! rises when an element is handed on, and each such moment lies in some read's
//! second), and how fast the pile grew at the window's end ([`growth_per_s`]).
//! The same reads keep the cache's hits and the server's open descriptors,
//! whose growth is judged from the window's first second on ([`slope_from`]).

use std::time::Duration;

use simulator_api::client;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Where the open descriptors' growth is judged from, into the window.
pub const DESCRIPTORS_FROM_S: f64 = 1.0;

/// How often the window's reads come.
pub const EVERY: Duration = Duration::from_millis(500);

/// Reads the server's recent peak until [`Watch::finish`].
#[derive(Debug)]
pub struct Watch {
    stop: CancellationToken,
    task: JoinHandle<Watched>,
}

/// What the reads saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Watched {
    /// The largest recent peak any read gave.
    pub peak: u64,
    /// Each read's seconds since the watch began and the count then.
    pub reads: Vec<(f64, u64)>,
    /// Each read's seconds since the watch began and the cache's reads then
    /// (`cache_reads`: those that hit a fresh entry, and the others).
    pub cache: Vec<(f64, u64, u64)>,
    /// Each read's seconds since the watch began and the server's open
    /// descriptors then (none where the OS gives no count).
    pub descriptors: Vec<(f64, u64)>,
    /// Each read's seconds since the watch began and the server's resident
    /// memory then, bytes (none where the OS will not say).
    pub resident: Vec<(f64, u64)>,
    /// Reads that got no answer: the window's peak is then a lower bound.
    pub missed: u64,
}

/// How fast the pile grew over the second half of a window of `window_s`,
/// elements a second: the least-squares slope of the reads from its middle on.
/// A pile held by something bounded (a queue that refuses, workers) stops
/// growing once full, however fast it filled at the start; one that nothing
/// bounds grows at the load's excess over the store's capacity to the end.
/// NaN with fewer than three reads there (NaN fails every bound).
pub fn growth_per_s(reads: &[(f64, u64)], window_s: f64) -> f64 {
    slope_from(reads, window_s / 2.0)
}

/// The least-squares slope a second of the reads from `from_s` on; NaN with
/// fewer than three reads there (NaN fails every bound). Open descriptors are
/// judged from the window's first second on ([`DESCRIPTORS_FROM_S`]): what
/// the load holds at once settles within it, and in a 6 s window the longer
/// run of reads about halves the slope's noise against the second half's.
pub fn slope_from(reads: &[(f64, u64)], from_s: f64) -> f64 {
    let late: Vec<(f64, u64)> = reads
        .iter()
        .filter(|(t, _)| *t >= from_s)
        .copied()
        .collect();
    simulator_service::parts::slope(&late)
}

/// The cache's reads that hit a fresh entry, and the others: misses, and
/// reads answered with a stale entry (`stale_reads = serve`), which a cache
/// that has warmed again no longer needs.
pub fn cache_reads(counts: &simulator_api::Counts) -> (u64, u64) {
    (
        counts.cache_hits,
        counts.cache_misses + counts.cache_stale_hits,
    )
}

/// The share of reads that hit a fresh entry over the last `last_s` of a window of
/// `window_s`: from the first read at or after its start to `end` (the hits
/// and misses after the window). NaN without a read in it.
pub fn late_hit_ratio(
    reads: &[(f64, u64, u64)],
    window_s: f64,
    last_s: f64,
    end: (u64, u64),
) -> f64 {
    let Some(&(_, hits, misses)) = reads.iter().find(|(t, _, _)| *t >= window_s - last_s) else {
        return f64::NAN;
    };
    let (hit, missed) = (end.0.saturating_sub(hits), end.1.saturating_sub(misses));
    match hit + missed {
        0 => f64::NAN,
        all => hit as f64 / all as f64,
    }
}

impl Watch {
    pub fn start(target: &str) -> Watch {
        let stop = CancellationToken::new();
        let (target, until) = (target.to_owned(), stop.clone());
        let task = tokio::spawn(async move {
            let began = tokio::time::Instant::now();
            let mut seen = Watched::default();
            let mut every = tokio::time::interval(EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            loop {
                tokio::select! {
                    () = until.cancelled() => return seen,
                    _ = every.tick() => {}
                }
                match client::stats(&target).await {
                    Ok(stats) => {
                        seen.peak = seen.peak.max(stats.acked_unwritten_peak);
                        let at = began.elapsed().as_secs_f64();
                        seen.reads.push((at, stats.acked_unwritten));
                        let (hit, other) = cache_reads(&stats.counts);
                        seen.cache.push((at, hit, other));
                        if let Some(d) = stats.descriptors {
                            seen.descriptors.push((at, d.open));
                        }
                        if let Some(m) = stats.memory {
                            seen.resident.push((at, m.resident_bytes));
                        }
                    }
                    Err(_) => seen.missed += 1,
                }
            }
        });
        Watch { stop, task }
    }

    /// Stops reading; what was seen. One last read after the window (the
    /// check's own `/stats` after it) covers its last second.
    pub async fn finish(self) -> Watched {
        self.stop.cancel();
        self.task.await.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_the_slope_of_the_second_half() {
        let reads = |f: fn(f64) -> u64| -> Vec<(f64, u64)> {
            (0..20).map(|i| i as f64 * 0.5).map(|t| (t, f(t))).collect()
        };
        // Filled fast, then full: no growth at the end.
        let bounded = reads(|t| (t * 133.0).min(272.0) as u64);
        assert!(growth_per_s(&bounded, 10.0).abs() < 1e-9);
        // Nothing bounds it: the load's excess to the end.
        let unbounded = reads(|t| (t * 133.0) as u64);
        assert!((growth_per_s(&unbounded, 10.0) - 133.0).abs() < 1.0);
        // Too few reads in the second half to say.
        assert!(growth_per_s(&unbounded[..11], 10.0).is_nan());
    }
}
