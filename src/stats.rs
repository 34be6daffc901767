//! The server's own event counters, the ones `GET /stats` reports.
//!
//! Every counter moves exactly when its probe fires (see `events.rs`), so a count
//! script and `/stats` agree. The counters live under one lock so a snapshot is
//! consistent: `requests_started = requests_done + requests_in_flight` and
//! `persists_started = persists_done + persists_in_flight` hold in every snapshot,
//! not just on average. At a few hundred thousand events a second the lock is not a
//! bottleneck worth a lock-free design that would lose that guarantee.

use std::sync::{Mutex, MutexGuard};

use serde::Serialize;

/// The seed's count.d labels and the `/stats` field each one equals, in the seed's
/// order: the demo, the sweep tests and the script tests all compare by this list.
pub const SEED_COUNT_FIELDS: [(&str, &str); 6] = [
    ("requests started", "requests_started"),
    ("requests done", "requests_done"),
    ("blocked requests", "requests_blocked"),
    ("non blocked requests", "requests_nonblocked"),
    ("persistent writes started", "persists_started"),
    ("persistent writes done", "persists_done"),
];

/// Cumulative counts since start or the last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub requests_started: u64,
    pub requests_done: u64,
    pub requests_blocked: u64,
    pub requests_nonblocked: u64,
    pub persists_started: u64,
    pub persists_done: u64,
    pub persists_failed: u64,
    /// Failed persists that `persist_timeout` ended (a subset of `persists_failed`).
    pub persists_timed_out: u64,
}

impl Counts {
    pub fn requests_in_flight(&self) -> u64 {
        self.requests_started - self.requests_done
    }

    pub fn persists_in_flight(&self) -> u64 {
        self.persists_started - self.persists_done
    }

    /// The lines of the seed's count.d output, in its words, for the shutdown report.
    pub fn seed_labels(&self) -> [(&'static str, u64); 7] {
        [
            ("requests started", self.requests_started),
            ("requests done", self.requests_done),
            ("blocked requests", self.requests_blocked),
            ("non blocked requests", self.requests_nonblocked),
            ("persistent writes started", self.persists_started),
            ("persistent writes done", self.persists_done),
            ("persistent writes failed", self.persists_failed),
        ]
    }
}

/// The live counters.
#[derive(Debug, Default)]
pub struct Stats {
    counts: Mutex<Counts>,
}

impl Stats {
    pub fn snapshot(&self) -> Counts {
        *self.lock()
    }

    /// Applies one event's change and returns the counts just after it, so a probe
    /// can carry a figure (persists in flight) consistent with the counters.
    pub fn record(&self, change: impl FnOnce(&mut Counts)) -> Counts {
        let mut counts = self.lock();
        change(&mut counts);
        *counts
    }

    /// Zeroes the window. Requests and persists already in flight are carried into
    /// the new window as started, so the balance above still holds when they finish;
    /// the counters that only ever grow (blocked, failed, ...) start again from zero.
    pub fn reset(&self) {
        let mut counts = self.lock();
        *counts = Counts {
            requests_started: counts.requests_in_flight(),
            persists_started: counts.persists_in_flight(),
            ..Counts::default()
        };
    }

    fn lock(&self) -> MutexGuard<'_, Counts> {
        // Nothing under this lock can panic; a poisoned guard still holds valid counts.
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_keeps_the_balance_for_work_in_flight() {
        let stats = Stats::default();
        stats.record(|c| {
            c.requests_started = 10;
            c.requests_done = 7;
            c.requests_blocked = 4;
            c.persists_started = 7;
            c.persists_done = 5;
        });
        stats.reset();
        let after = stats.snapshot();
        assert_eq!(after.requests_in_flight(), 3);
        assert_eq!(after.persists_in_flight(), 2);
        assert_eq!(after.requests_blocked, 0);
        stats.record(|c| c.requests_done += 3);
        assert_eq!(stats.snapshot().requests_in_flight(), 0);
    }
}
