//! The tap's ring (`tap.rs`): one bounded ring of events that every sender writes
//! without a lock and every subscriber reads at its own cursor; a reader that
//! falls a ring behind loses the oldest events and is told how many.
//!
//! By hand, because the crates made for it cost the request path what this saves.
//! `tokio::sync::broadcast` (the tap's first ring) takes a mutex that every
//! sender shares, a write lock on the slot and a walk of its waiter list on every
//! send. Under one subscriber on every event at a flat-out load it was most of
//! the send's cost, and this ring takes the whole send to under half of what it
//! was (docs/performance.md, "The probe tap", has the profiles and the command).
//! crossbeam's `ArrayQueue` is consumed once, so each subscriber would need a
//! queue of its own, found by the senders behind a reclamation scheme. Here a send is a `fetch_add` claiming a
//! position and one cache line written under a sequence number (a seqlock per
//! slot): the slot's `seq` is `2 * pos + 1` while position `pos` is written there
//! and `2 * pos + 2` once it is, so a reader knows a slot's event is the one it
//! wants, not written yet, or a lap ahead (lost), and a read torn by a writer
//! lapping it is seen and counted as lost. Everything is atomics; no `unsafe`.
//!
//! Each slot has one writer at a time: a sender claims its slot with a
//! compare-and-swap from a resting mark older than its own, and gives its event
//! up (a loss its readers count) when the slot is still being written a lap
//! earlier or already holds a newer lap. Without that, a sender stopped between
//! its claim and its last word for a whole lap wrote its remaining words over
//! the newer event and published its own number, and a reader took the mix for
//! an event. `loom_model.rs` runs the ring under the loom model checker (two
//! senders a lap apart on one slot, a reader at either lap, a reader arming its
//! wait): it finds that mix in the send without the claim, and nothing in this
//! one. The ring is in `ring.rs`, which both include: std's atomics here, loom's
//! there.
//!
//! A reader with nothing to read waits on a `Notify`: it raises `waiting` and
//! looks again (`Ring::arm`); a sender that publishes and then sees the flag
//! lowers it and wakes every waiting reader (a fence on each side, so one of them
//! sees the other's write). Senders with nobody waiting pay one load for it.

use tokio::sync::Notify;

mod seqlock {
    use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};

    include!("ring.rs");
}
#[cfg(test)]
mod loom_model;

pub use seqlock::{Read, TapEvent};

/// The ring and its wake-up: a reader with nothing to read awaits the next event.
#[derive(Debug)]
pub struct EventRing {
    ring: seqlock::Ring,
    wake: Notify,
}

impl EventRing {
    /// A ring of `capacity` events, a power of two.
    pub fn new(capacity: usize) -> Self {
        EventRing {
            ring: seqlock::Ring::new(capacity),
            wake: Notify::new(),
        }
    }

    /// The position the next event will take: a new reader's cursor.
    pub fn tail(&self) -> u64 {
        self.ring.tail()
    }

    /// Puts `event` after every event claimed before it (or gives it up, a loss
    /// its readers count), waking the readers waiting for one; never waits.
    pub fn send(&self, event: TapEvent) {
        if self.ring.send(event) {
            self.wake.notify_waiters();
        }
    }

    /// The event at `*cursor`, moving the cursor past it (or past what was lost).
    pub fn read(&self, cursor: &mut u64) -> Read {
        self.ring.read(cursor)
    }

    /// Events claimed past `cursor`: what a reader there has to read, about.
    pub fn behind(&self, cursor: u64) -> u64 {
        self.ring.behind(cursor)
    }

    /// Returns once the slot at `cursor` holds something to read (an event, or a
    /// lap's worth of loss).
    pub async fn wait(&self, cursor: u64) {
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.ring.arm(cursor) {
                return;
            }
            notified.await;
            if self.ring.readable(cursor) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn event(probe: u8, seq: u64) -> TapEvent {
        TapEvent {
            probe,
            at_ns: seq * 10,
            args: [seq, 1, 2, 3, 4, u64::MAX],
        }
    }

    #[test]
    fn a_reader_reads_what_was_sent_after_it_came_in_order() {
        let ring = EventRing::new(8);
        ring.send(event(1, 0));
        let mut cursor = ring.tail();
        assert_eq!(ring.read(&mut cursor), Read::Empty);
        for seq in 1..=5 {
            ring.send(event(seq as u8, seq));
        }
        assert_eq!(ring.behind(cursor), 5);
        for seq in 1..=5 {
            assert_eq!(ring.read(&mut cursor), Read::Event(event(seq as u8, seq)));
        }
        assert_eq!(ring.read(&mut cursor), Read::Empty);
    }

    #[test]
    fn the_probe_and_a_large_time_survive_the_packing() {
        let ring = EventRing::new(2);
        let mut cursor = ring.tail();
        let sent = TapEvent {
            probe: u8::MAX,
            at_ns: seqlock::TIME_MASK,
            args: [u64::MAX; 6],
        };
        ring.send(sent);
        assert_eq!(ring.read(&mut cursor), Read::Event(sent));
    }

    #[test]
    fn a_reader_lapped_loses_the_oldest_and_is_told_how_many() {
        let ring = EventRing::new(8);
        let mut cursor = ring.tail();
        for seq in 0..20 {
            ring.send(event(0, seq));
        }
        assert_eq!(ring.read(&mut cursor), Read::Lost(12));
        for seq in 12..20 {
            assert_eq!(ring.read(&mut cursor), Read::Event(event(0, seq)));
        }
        assert_eq!(ring.read(&mut cursor), Read::Empty);
    }

    #[test]
    fn a_claim_not_yet_written_holds_the_reader_until_a_lap_passes_it() {
        let ring = EventRing::new(4);
        let mut cursor = ring.tail();
        // A sender that claimed position 0 and stalled before writing it.
        ring.ring.claim_without_writing();
        ring.send(event(0, 1));
        assert_eq!(ring.read(&mut cursor), Read::Empty, "in order: wait for 0");
        for seq in 2..6 {
            ring.send(event(0, seq));
        }
        assert_eq!(
            ring.read(&mut cursor),
            Read::Lost(2),
            "a lap on: 0 and 1 lost"
        );
        assert_eq!(ring.read(&mut cursor), Read::Event(event(0, 2)));
    }

    #[test]
    fn every_event_of_four_threads_arrives_once_and_each_threads_in_its_order() {
        let ring = Arc::new(EventRing::new(1 << 16));
        let mut cursor = ring.tail();
        std::thread::scope(|s| {
            for thread in 0..4u8 {
                let ring = &ring;
                s.spawn(move || {
                    for seq in 0..10_000 {
                        ring.send(event(thread, seq));
                    }
                });
            }
        });
        let mut next = [0u64; 4];
        loop {
            match ring.read(&mut cursor) {
                Read::Event(e) => {
                    assert_eq!(e.args[0], next[usize::from(e.probe)]);
                    assert_eq!(e, event(e.probe, e.args[0]), "a torn event");
                    next[usize::from(e.probe)] += 1;
                }
                Read::Empty => break,
                Read::Lost(n) => panic!("lost {n} in a ring that holds them all"),
            }
        }
        assert_eq!(next, [10_000; 4]);
    }

    #[test]
    fn a_reader_beside_busy_senders_reads_whole_events_and_counts_the_rest() {
        let ring = EventRing::new(64);
        let sent = 200_000u64;
        let mut cursor = ring.tail();
        let (mut read, mut lost) = (0u64, 0u64);
        std::thread::scope(|s| {
            for thread in 0..2u8 {
                let ring = &ring;
                s.spawn(move || {
                    for seq in 0..sent / 2 {
                        ring.send(event(thread, seq));
                    }
                });
            }
            while read + lost < sent {
                match ring.read(&mut cursor) {
                    Read::Event(e) => {
                        assert_eq!(e, event(e.probe, e.args[0]), "a torn event");
                        read += 1;
                    }
                    Read::Lost(n) => lost += n,
                    Read::Empty => std::hint::spin_loop(),
                }
            }
        });
        assert_eq!(read + lost, sent, "every event read or counted lost");
    }

    #[tokio::test]
    async fn a_waiting_reader_wakes_for_the_next_event() {
        let ring = Arc::new(EventRing::new(8));
        let cursor = ring.tail();
        let waiter = tokio::spawn({
            let ring = ring.clone();
            async move { ring.wait(cursor).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        ring.send(event(3, 0));
        tokio::time::timeout(std::time::Duration::from_secs(10), waiter)
            .await
            .expect("woken")
            .unwrap();
        // Something there already: no wait at all.
        ring.wait(cursor).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reader_that_waits_between_events_misses_no_wake_up() {
        // Events one at a time from another thread, the reader waiting each time it
        // has read everything: a wake-up lost between its look and its wait would
        // leave it waiting for an event already there, and the timeout fails it.
        let ring = Arc::new(EventRing::new(1 << 16));
        let mut cursor = ring.tail();
        let sent = 20_000u64;
        let sender = std::thread::spawn({
            let ring = ring.clone();
            move || {
                for seq in 0..sent {
                    ring.send(event(0, seq));
                    if seq % 4 == 0 {
                        std::thread::yield_now();
                    }
                }
            }
        });
        let mut read = 0;
        let reading = async {
            while read < sent {
                ring.wait(cursor).await;
                while let Read::Event(e) = ring.read(&mut cursor) {
                    assert_eq!(e.args[0], read);
                    read += 1;
                }
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), reading)
            .await
            .expect("a wake-up was lost");
        sender.join().unwrap();
    }
}
