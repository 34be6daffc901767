//! The tap's ring (`tap.rs`): one bounded ring of events that every sender writes
//! without a lock and every subscriber reads at its own cursor; a reader that
//! falls a ring behind loses the oldest events and is told how many.
//!
//! By hand, because the crates made for it cost the request path what this saves.
//! `tokio::sync::broadcast` (the tap's ring until 2026-11-27) takes a mutex that
//! every sender shares, a write lock on the slot and a walk of its waiter list on
//! every send: under one subscriber on every event at a flat-out load, 2.8 % of
//! the server's CPU of the whole send's 4.1 % (perf, 2026-11-27); with this ring
//! the whole send (the clock and the probe's figures included) is 1.8 %.
//! crossbeam's `ArrayQueue` is consumed once, so each subscriber would need a
//! queue of its own, found by the senders behind a reclamation scheme. Here a send is a `fetch_add` claiming a
//! position and one cache line written under a sequence number (a seqlock per
//! slot): the slot's `seq` is `2 * pos + 1` while position `pos` is written there
//! and `2 * pos + 2` once it is, so a reader knows a slot's event is the one it
//! wants, not written yet, or a lap ahead (lost), and a read torn by a writer
//! lapping it is seen and counted as lost. Everything is atomics; no `unsafe`.
//!
//! A reader with nothing to read waits on a `Notify`: it raises `waiting` and
//! looks again; a sender that publishes and then sees the flag lowers it and wakes
//! every waiting reader (a fence on each side, so one of them sees the other's
//! write). Senders with nobody waiting pay one load for it.

use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};

use tokio::sync::Notify;

/// One event as the tap carries it: its probe (its place in
/// `simulator_api::events::EVENTS`, or the tap's end mark), when it fired,
/// and the probe's arguments, unused ones zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TapEvent {
    pub probe: u8,
    /// Ns since the ring's clock began; below 2^56 (2.2 years).
    pub at_ns: u64,
    pub args: [u64; 6],
}

/// What a reader's cursor finds.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    Event(TapEvent),
    /// This many events went past unread: the ring lapped the reader.
    Lost(u64),
    /// Nothing new (or the next event's sender is still writing it).
    Empty,
}

/// A slot: its sequence number and the event in 7 words (the probe in the top
/// byte of the time), one cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Slot {
    seq: AtomicU64,
    words: [AtomicU64; 7],
}

/// The claim counter on cache lines of its own: every sender writes it.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Tail(AtomicU64);

#[derive(Debug)]
pub struct EventRing {
    tail: Tail,
    slots: Box<[Slot]>,
    waiting: AtomicBool,
    wake: Notify,
}

const PROBE_SHIFT: u32 = 56;
const TIME_MASK: u64 = (1 << PROBE_SHIFT) - 1;

impl EventRing {
    /// A ring of `capacity` events, a power of two.
    pub fn new(capacity: usize) -> Self {
        assert!(
            capacity.is_power_of_two(),
            "a ring's capacity is a power of two"
        );
        EventRing {
            tail: Tail::default(),
            slots: (0..capacity).map(|_| Slot::default()).collect(),
            waiting: AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    fn capacity(&self) -> u64 {
        self.slots.len() as u64
    }

    fn slot(&self, pos: u64) -> &Slot {
        &self.slots[(pos & (self.capacity() - 1)) as usize]
    }

    /// The position the next event will take: a new reader's cursor.
    pub fn tail(&self) -> u64 {
        self.tail.0.load(Ordering::Acquire)
    }

    /// Puts `event` after every event claimed before it; never waits.
    pub fn send(&self, event: TapEvent) {
        let pos = self.tail.0.fetch_add(1, Ordering::Relaxed);
        let slot = self.slot(pos);
        slot.seq.store(2 * pos + 1, Ordering::Relaxed);
        // The busy mark is seen before any of the new words (the seqlock's writer side).
        fence(Ordering::Release);
        let first = (u64::from(event.probe) << PROBE_SHIFT) | (event.at_ns & TIME_MASK);
        slot.words[0].store(first, Ordering::Relaxed);
        for (word, arg) in slot.words[1..].iter().zip(event.args) {
            word.store(arg, Ordering::Relaxed);
        }
        slot.seq.store(2 * pos + 2, Ordering::Release);
        // Pairs with the fence in `wait`: either that reader sees this event or
        // this sender sees its flag.
        fence(Ordering::SeqCst);
        if self.waiting.load(Ordering::Relaxed) && self.waiting.swap(false, Ordering::AcqRel) {
            self.wake.notify_waiters();
        }
    }

    /// The event at `*cursor`, moving the cursor past it (or past what was lost).
    pub fn read(&self, cursor: &mut u64) -> Read {
        let pos = *cursor;
        let slot = self.slot(pos);
        let ready = 2 * pos + 2;
        let seq = slot.seq.load(Ordering::Acquire);
        if seq == ready {
            let first = slot.words[0].load(Ordering::Relaxed);
            let mut args = [0; 6];
            for (arg, word) in args.iter_mut().zip(&slot.words[1..]) {
                *arg = word.load(Ordering::Relaxed);
            }
            // The words were read before the sequence is read again (the seqlock's
            // reader side): unchanged means no writer touched them meanwhile.
            fence(Ordering::Acquire);
            if slot.seq.load(Ordering::Relaxed) == ready {
                *cursor = pos + 1;
                return Read::Event(TapEvent {
                    probe: (first >> PROBE_SHIFT) as u8,
                    at_ns: first & TIME_MASK,
                    args,
                });
            }
        } else if seq < ready && self.tail() <= pos + self.capacity() {
            // Not written yet, or its sender is writing it now. (Lapped already
            // when the tail is a ring ahead: a sender stalled between its claim and
            // its write for a whole lap must not hold this reader forever.)
            return Read::Empty;
        }
        // Lapped: go on from the oldest event the ring still holds.
        let oldest = self.tail().saturating_sub(self.capacity());
        let next = oldest.max(pos + 1);
        *cursor = next;
        Read::Lost(next - pos)
    }

    /// Events claimed past `cursor`: what a reader there has to read, about.
    pub fn behind(&self, cursor: u64) -> u64 {
        self.tail().saturating_sub(cursor)
    }

    /// Returns once the slot at `cursor` holds something to read (an event, or a
    /// lap's worth of loss).
    pub async fn wait(&self, cursor: u64) {
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            self.waiting.store(true, Ordering::Relaxed);
            // Pairs with the fence in `send`.
            fence(Ordering::SeqCst);
            if self.readable(cursor) {
                return;
            }
            notified.await;
            if self.readable(cursor) {
                return;
            }
        }
    }

    fn readable(&self, cursor: u64) -> bool {
        self.slot(cursor).seq.load(Ordering::Acquire) >= 2 * cursor + 2
            || self.tail() > cursor + self.capacity()
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
            at_ns: TIME_MASK,
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
        ring.tail.0.fetch_add(1, Ordering::Relaxed);
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
