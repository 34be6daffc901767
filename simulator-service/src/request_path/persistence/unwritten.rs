//! Writes acknowledged and not yet made: elements whose request is answered
//! while the store has not taken their write (the original's asynchronous
//! persistence: the reply leaves at the hand-off). Whatever setting lets them
//! pile up (a gate wider than the store, a permit given back at the hand-off, a
//! queue in front of the workers), the pile is here: memory that a crash loses
//! and a longer incident outgrows. A check holds its peak to what the store's
//! own slots hold (`workshop/check/`), so a write-behind buffer does not pass
//! for a cure.
//!
//! An element is owed from its hand-off, once it is known that its request will
//! not wait for the write (not `durable`), until its persist-done or its drop
//! from the queue: an [`Owed`] travels with the element and gives its place back
//! when dropped, so no path that ends an element forgets it. A persist the store
//! ends at once (the zero-cost benchmarks' world) runs to its end inside the
//! hand-off, before the reply, and owes nothing, so the serving path does not
//! pay for the count where there is nothing to count. The peak is the largest
//! over the last second ([`RecentPeak`]), seen at each new element owed: the
//! count only rises there, so a reader every half second misses no peak.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::observe::recent_peak::RecentPeak;

/// The count and its recent peak, shared by every persistence strategy.
#[derive(Debug, Default)]
pub struct Unwritten {
    now: AtomicU64,
    peak: RecentPeak,
}

/// One element owed: counted while it lives.
#[derive(Debug)]
pub struct Owed(Arc<Unwritten>);

impl Unwritten {
    /// Counts one more element owed until what it returns is dropped.
    pub fn owe(self: &Arc<Self>) -> Owed {
        let now = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.see(u32::try_from(now).unwrap_or(u32::MAX));
        Owed(Arc::clone(self))
    }

    /// Elements owed right now.
    pub fn now(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }

    /// The most owed at once over the last second (1.0-1.1 s), now included.
    pub fn recent_peak(&self) -> u64 {
        u64::from(self.peak.peak()).max(self.now())
    }
}

impl Drop for Owed {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use simulator_api::settings::PersistenceKind;
    use simulator_api::{Delay, Settings};

    use super::*;
    use crate::request_path::{DataProcessor, Element};

    /// Six requests at once into a store of 2 slots whose writes take 100 ms.
    fn store_of_two(persistence: PersistenceKind) -> Settings {
        Settings {
            persistence,
            permits: 4,
            persist_workers: 3,
            persist_queue: 16,
            store_concurrency: 2,
            persist_latency: Delay::fixed(Duration::from_millis(100)),
            network_delay: Delay::fixed(Duration::ZERO),
            ..Settings::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_count_is_what_persistence_holds_for_answered_requests() {
        // Task per element: the gate's 4 are handed on and answered, 2 wait at
        // the gate unanswered. Pool: the gate's 4 are queued or with a worker,
        // all answered. Either way, what persistence holds.
        for kind in [PersistenceKind::TaskPerElement, PersistenceKind::Pool] {
            let processor = DataProcessor::new(&store_of_two(kind)).unwrap();
            let requests: Vec<_> = (0..6)
                .map(|_| tokio::spawn(processor.submit(Element::Synthetic(100), 0)))
                .collect();
            tokio::time::sleep(Duration::from_millis(10)).await;
            let counts = processor.counts();
            let figures = processor.figures();
            let (now, peak) = (figures.acked_unwritten, figures.acked_unwritten_peak);
            assert_eq!(now, 4, "{kind:?}");
            assert_eq!(
                now,
                counts.persists_in_flight() + counts.queued(),
                "{kind:?}: the store's own count of writes started and queued"
            );
            assert_eq!(peak, 4, "{kind:?}");
            for request in requests {
                request.await.unwrap().unwrap();
            }
            // Six writes two at a time: 300 ms; then nothing is owed, and the
            // peak is kept (its second is the real clock's, not paused).
            tokio::time::sleep(Duration::from_millis(400)).await;
            assert_eq!(processor.counts().persists_done, 6, "{kind:?}");
            let figures = processor.figures();
            assert_eq!(figures.acked_unwritten, 0, "{kind:?}");
            assert_eq!(figures.acked_unwritten_peak, 4, "{kind:?}");
        }
    }

    #[test]
    fn an_element_is_owed_while_it_lives_and_the_peak_stays_a_second() {
        let unwritten = Arc::new(Unwritten::default());
        let owed: Vec<Owed> = (0..5).map(|_| unwritten.owe()).collect();
        assert_eq!((unwritten.now(), unwritten.recent_peak()), (5, 5));
        drop(owed);
        assert_eq!(unwritten.now(), 0);
        assert_eq!(unwritten.recent_peak(), 5, "the peak outlives the pile");
    }
}
