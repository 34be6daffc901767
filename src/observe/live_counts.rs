//! The server's live event counters (`LiveCounts`), the ones `GET /stats` reports ([`Counts`] is
//! declared in `simulator-api`, where the clients read it too).
//!
//! Every counter moves exactly when its probe fires (see `events.rs`), so a count
//! script and `/stats` agree. The counters live under one lock so a snapshot is
//! consistent: `requests_started = requests_done + requests_in_flight`,
//! `persists_started = persists_done + persists_in_flight` and
//! `queue_enqueued = queue_dequeued + queued` hold in every snapshot,
//! not just on average. At a few hundred thousand events a second the lock is not a
//! bottleneck worth a lock-free design that would lose that guarantee.

use std::sync::{Mutex, MutexGuard};

use simulator_api::Counts;

/// The live counters.
#[derive(Debug, Default)]
pub struct LiveCounts {
    counts: Mutex<Counts>,
}

impl LiveCounts {
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

    /// Zeroes the window. What is in flight (every pair the events declare:
    /// requests, persists, queue entries, works) is carried into the new window as
    /// started, so the balance above still holds when it finishes; the counters
    /// that only ever grow (blocked, failed, ...) start again from zero. The pairs
    /// come from the declaration: a hand-kept list here once forgot the works, and
    /// `work_done` outgrew `work_started` after a reset under load.
    pub fn reset(&self) {
        let mut counts = self.lock();
        *counts = counts.carried_over();
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
        let stats = LiveCounts::default();
        stats.record(|c| {
            c.requests_started = 10;
            c.requests_done = 7;
            c.requests_blocked = 4;
            c.persists_started = 7;
            c.persists_done = 5;
            c.queue_enqueued = 9;
            c.queue_dequeued = 5;
            c.work_started = 6;
            c.work_done = 4;
        });
        stats.reset();
        let after = stats.snapshot();
        assert_eq!(after.requests_in_flight(), 3);
        assert_eq!(after.persists_in_flight(), 2);
        assert_eq!(after.queued(), 4);
        assert_eq!(after.work_in_flight(), 2);
        assert_eq!(after.requests_blocked, 0);
        stats.record(|c| {
            c.requests_done += 3;
            c.persists_done += 2;
            c.queue_dequeued += 4;
            c.work_done += 2;
        });
        let drained = stats.snapshot();
        assert_eq!(drained.requests_started, drained.requests_done);
        assert_eq!(drained.persists_started, drained.persists_done);
        assert_eq!(drained.queue_enqueued, drained.queue_dequeued);
        assert_eq!(drained.work_started, drained.work_done);
    }
}
