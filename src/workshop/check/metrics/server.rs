//! What the server counted over the window (its `/stats` around it): the
//! requests that waited for a permit, its persists, compactions and journal,
//! its index, and the world's neighbour beside it.
//!
//! What the check asks of a world's neighbour (exercise 14) is that it keeps
//! a share of the work it does alone, so that killing it, stopping it or
//! starving it is no fix. Its rate alone is the server's measure of its first
//! second, taken as the world started and before the server listened
//! (`/stats.neighbour.alone_per_s`, `neighbour/beside.rs`): no fix applied
//! since can shrink that yardstick with the neighbour. Its rate under the load
//! is its work between the reads of `/stats` around the window over the time
//! between them.

use simulator_api::NeighbourStats;

use super::{Metric, SoFar, Window};

/// Share of admitted requests that waited for a permit.
pub struct BlockedShare;

impl Metric for BlockedShare {
    fn name(&self) -> &'static str {
        "blocked_share"
    }
    fn label(&self) -> &'static str {
        "blocked share"
    }
    fn measure(&self, w: &Window) -> f64 {
        w.server.blocked_share()
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        Some(s.since.blocked_share())
    }
}

/// Persists completed a second.
pub struct PersistsPerS;

impl Metric for PersistsPerS {
    fn name(&self) -> &'static str {
        "persists_per_s"
    }
    fn label(&self) -> &'static str {
        "persists a second"
    }
    fn measure(&self, w: &Window) -> f64 {
        w.per_s(w.server.persists_done)
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        Some(s.per_s(s.since.persists_done as f64))
    }
}

/// Compactions of the index completed a second.
pub struct CompactionsPerS;

impl Metric for CompactionsPerS {
    fn name(&self) -> &'static str {
        "compactions_per_s"
    }
    fn label(&self) -> &'static str {
        "compactions of the index a second"
    }
    fn measure(&self, w: &Window) -> f64 {
        w.per_s(w.server.compactions_done)
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        Some(s.per_s(s.since.compactions_done as f64))
    }
}

/// Entries in the server's index at the window's end: only compactions drop
/// them.
pub struct IndexEntries;

impl Metric for IndexEntries {
    fn name(&self) -> &'static str {
        "index_entries"
    }
    fn label(&self) -> &'static str {
        "entries in the index"
    }
    fn measure(&self, w: &Window) -> f64 {
        w.after.index_entries as f64
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        Some(s.now.index_entries as f64)
    }
}

/// Persists journalled over the window per persist started in it
/// (`/stats.journal_entries` against `persists_started`): 1 while every
/// write's intent is on record, 0 for a service that stopped journalling; NaN
/// without a persist.
pub struct JournalledShare;

impl Metric for JournalledShare {
    fn name(&self) -> &'static str {
        "journalled_share"
    }
    fn label(&self) -> &'static str {
        "persists journalled"
    }
    fn measure(&self, w: &Window) -> f64 {
        let journalled = w
            .after
            .journal_entries
            .saturating_sub(w.before.journal_entries);
        let started = w.after.counts.persists_started;
        match started.saturating_sub(w.before.counts.persists_started) {
            0 => f64::NAN,
            persists => journalled as f64 / persists as f64,
        }
    }
}

/// The world's neighbour's work a second in the window over its work a second
/// alone (above): a fix that kills or stops it keeps none; NaN (fails)
/// without a neighbour, or one stopped before the window.
pub struct NeighbourShare;

impl Metric for NeighbourShare {
    fn name(&self) -> &'static str {
        "neighbour_share"
    }
    fn label(&self) -> &'static str {
        "the neighbour's work, share of it alone"
    }
    fn measure(&self, w: &Window) -> f64 {
        match (&w.before.neighbour, &w.after.neighbour) {
            (Some(before), Some(after)) => neighbour_share(before, after, w.between_reads_s),
            _ => f64::NAN,
        }
    }
}

/// Its rate between two reads `seconds` apart over its rate alone; 0 once it
/// stopped running (its last report is its last work).
fn neighbour_share(before: &NeighbourStats, after: &NeighbourStats, seconds: f64) -> f64 {
    let Some(alone) = before.alone_per_s.filter(|&a| a > 0) else {
        return f64::NAN;
    };
    if !after.running {
        return 0.0;
    }
    let per_s = after.work.saturating_sub(before.work) as f64 / seconds.max(1e-9);
    per_s / alone as f64
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Parts;
    use super::*;

    #[test]
    fn blocked_share_is_the_servers_over_the_window_and_so_far() {
        let mut parts = Parts::new();
        (
            parts.server.requests_nonblocked,
            parts.server.requests_blocked,
        ) = (75, 25);
        assert_eq!(BlockedShare.measure(&parts.window()), 0.25);
        (
            parts.after.counts.requests_nonblocked,
            parts.after.counts.requests_blocked,
        ) = (5, 5);
        assert_eq!(BlockedShare.so_far(&parts.so_far()), Some(0.5));
    }

    #[test]
    fn persists_per_s_and_compactions_per_s_are_a_seconds_worth() {
        let mut parts = Parts::new();
        (parts.server.persists_done, parts.server.compactions_done) = (500, 4);
        let w = parts.window();
        assert_eq!(PersistsPerS.measure(&w), 50.0);
        assert_eq!(CompactionsPerS.measure(&w), 0.4);
        parts.after.counts.persists_done = 100;
        assert_eq!(PersistsPerS.so_far(&parts.so_far()), Some(20.0), "5 s in");
    }

    #[test]
    fn compactions_per_s_so_far_counts_since_the_window_began() {
        let mut parts = Parts::new();
        parts.before.counts.compactions_done = 7;
        parts.after.counts.compactions_done = 9;
        assert_eq!(CompactionsPerS.so_far(&parts.so_far()), Some(0.4));
    }

    #[test]
    fn index_entries_are_the_ones_left_at_the_end() {
        let mut parts = Parts::new();
        parts.before.index_entries = 10;
        parts.after.index_entries = 4_000;
        assert_eq!(IndexEntries.measure(&parts.window()), 4_000.0);
    }

    #[test]
    fn journalled_share_is_entries_per_persist_started_and_nan_without_one() {
        let mut parts = Parts::new();
        assert!(JournalledShare.measure(&parts.window()).is_nan());
        (
            parts.before.journal_entries,
            parts.before.counts.persists_started,
        ) = (50, 50);
        (
            parts.after.journal_entries,
            parts.after.counts.persists_started,
        ) = (90, 150);
        assert_eq!(JournalledShare.measure(&parts.window()), 0.4);
    }

    #[test]
    fn neighbour_share_is_the_rate_under_load_over_the_rate_alone_and_a_stopped_one_keeps_none() {
        let mut parts = Parts::new();
        assert!(
            NeighbourShare.measure(&parts.window()).is_nan(),
            "a world without one"
        );
        let neighbour = |work, running, alone| NeighbourStats {
            work,
            running,
            alone_per_s: Some(alone),
            ..NeighbourStats::default()
        };
        parts.before.neighbour = Some(neighbour(1_000, true, 10_000));
        parts.after.neighbour = Some(neighbour(61_000, true, 10_000));
        assert_eq!(NeighbourShare.measure(&parts.window()), 0.6);
        // Killed in the window: its last report is its last work.
        parts.after.neighbour = Some(neighbour(2_000, false, 10_000));
        assert_eq!(NeighbourShare.measure(&parts.window()), 0.0);
        // Stopped (SIGSTOP) before the check: no rate alone.
        parts.before.neighbour = Some(neighbour(1_000, true, 0));
        assert!(NeighbourShare.measure(&parts.window()).is_nan());
    }
}
