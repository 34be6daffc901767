//! The server's live event counters (`LiveCounts`), the ones `GET /stats` reports ([`Counts`] is
//! declared in `simulator-api`, where the clients read it too).
//!
//! Every counter moves exactly when its probe fires (see `events.rs`), so a count
//! script and `/stats` agree. Each thread records into a part of its own and a
//! snapshot adds the parts up with all of them locked (`shards.rs`), so a
//! snapshot is consistent: `requests_started = requests_done + requests_in_flight`,
//! `persists_started = persists_done + persists_in_flight` and
//! `queue_enqueued = queue_dequeued + queued` hold in every snapshot, not just on
//! average, and recording never waits on another core. Each change also moves the
//! process's lifetime counts, which `/metrics` reports and a reset leaves alone
//! (`metrics.rs`).

use simulator_api::Counts;

use super::lifetime::{self, Histograms};
use super::shards::Shards;

/// The live counters.
#[derive(Debug, Default)]
pub struct LiveCounts {
    window: Shards<Counts>,
}

impl LiveCounts {
    pub fn snapshot(&self) -> Counts {
        sum(&self.window.all())
    }

    /// Applies one event's change to these counts and to the process's lifetime
    /// counts.
    #[inline]
    pub fn record(&self, change: impl Fn(&mut Counts)) {
        self.window.with(&change);
        lifetime::parts().with(|l| change(&mut l.counts));
    }

    /// [`record`](Self::record), and the event's histogram samples in the same
    /// hold of the lifetime part.
    #[inline]
    pub fn record_and_observe(
        &self,
        change: impl Fn(&mut Counts),
        observe: impl FnOnce(&mut Histograms),
    ) {
        self.window.with(&change);
        lifetime::parts().with(|l| {
            change(&mut l.counts);
            observe(&mut l.histograms);
        });
    }

    /// Zeroes the window. What is in flight (every pair the events declare:
    /// requests, persists, queue entries, works) is carried into the new window as
    /// started, so the balance above still holds when it finishes; the counters
    /// that only ever grow (blocked, failed, ...) start again from zero. The pairs
    /// come from the declaration: a hand-kept list here once forgot the works, and
    /// `work_done` outgrew `work_started` after a reset under load.
    pub fn reset(&self) {
        let mut parts = self.window.all();
        let carried = sum(&parts).carried_over();
        for part in parts.iter_mut() {
            **part = Counts::default();
        }
        *parts[0] = carried;
    }
}

/// The parts added up.
fn sum(parts: &[std::sync::MutexGuard<'_, Counts>]) -> Counts {
    parts
        .iter()
        .fold(Counts::default(), |sum, part| sum.plus(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_keeps_the_balance_for_work_in_flight() {
        let stats = LiveCounts::default();
        stats.record(|c| {
            c.requests_started += 10;
            c.requests_done += 7;
            c.requests_blocked += 4;
            c.persists_started += 7;
            c.persists_done += 5;
            c.queue_enqueued += 9;
            c.queue_dequeued += 5;
            c.work_started += 6;
            c.work_done += 4;
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

    #[test]
    fn a_snapshot_balances_while_other_threads_start_and_end_work() {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        use std::sync::mpsc::sync_channel;

        let stats = &LiveCounts::default();
        let running = &AtomicBool::new(true);
        // Things start on one thread and end on another, as a request can move
        // between tokio's workers. Threads get their parts in the order they
        // first record: requests end on a thread numbered after the one that
        // starts them, persists on one numbered before, so a read that took the
        // parts one at a time, in either order, would see some end unstarted.
        let (request_started, requests) = sync_channel::<()>(1024);
        let (persist_started, persists) = sync_channel::<()>(1024);
        let (ender_ready, ready) = sync_channel::<()>(1);
        let mut unbalanced = None;
        std::thread::scope(|s| {
            s.spawn(move || {
                while running.load(Relaxed) {
                    stats.record(|c| c.requests_started += 1);
                    if request_started.send(()).is_err() {
                        break;
                    }
                }
            });
            s.spawn(move || {
                while requests.recv().is_ok() {
                    stats.record(|c| c.requests_done += 1);
                }
            });
            s.spawn(move || {
                stats.record(|_| {});
                ender_ready.send(()).unwrap();
                while persists.recv().is_ok() {
                    stats.record(|c| c.persists_done += 1);
                }
            });
            ready.recv().unwrap();
            s.spawn(move || {
                while running.load(Relaxed) {
                    stats.record(|c| c.persists_started += 1);
                    if persist_started.send(()).is_err() {
                        break;
                    }
                }
            });
            // Read while they run, until 20,000 of each have ended.
            loop {
                let now = stats.snapshot();
                if now.requests_done > now.requests_started
                    || now.persists_done > now.persists_started
                {
                    unbalanced = Some(now);
                    break;
                }
                if now.requests_done.min(now.persists_done) >= 20_000 {
                    break;
                }
            }
            running.store(false, Relaxed);
        });
        assert_eq!(unbalanced, None, "ended before started");
        let end = stats.snapshot();
        assert_eq!(end.requests_started, end.requests_done);
        assert_eq!(end.persists_started, end.persists_done);
    }
}
