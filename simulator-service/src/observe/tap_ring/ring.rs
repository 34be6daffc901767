// The ring itself, without its wake-up: included twice (`include!`), by `mod.rs`
// with std's atomics, which the server runs, and by `loom_model.rs` with loom's,
// which the model checker runs. So this file names no atomics' crate: whoever
// includes it brings `AtomicBool`, `AtomicU64`, `Ordering` and `fence` into
// scope. (loom's types stand in for std's only where a build says so; a cfg of
// our own would build every dependency a second time to run the model.)

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
    /// This many events went past unread: the ring lapped the reader, or their
    /// senders gave them up (a slot still being written a lap earlier).
    Lost(u64),
    /// Nothing new (or the next event's sender is still writing it).
    Empty,
}

/// A slot: its sequence number and the event in 7 words (the probe in the top
/// byte of the time), one cache line.
#[derive(Debug)]
#[repr(align(64))]
struct Slot {
    seq: AtomicU64,
    words: [AtomicU64; 7],
}

/// The claim counter on cache lines of its own: every sender writes it.
#[derive(Debug)]
#[repr(align(128))]
struct Tail(AtomicU64);

/// The ring of slots, the claim counter and the waiting readers' flag.
#[derive(Debug)]
pub struct Ring {
    tail: Tail,
    slots: Box<[Slot]>,
    waiting: AtomicBool,
}

const PROBE_SHIFT: u32 = 56;
/// The bits of an event's first word that hold its time.
pub const TIME_MASK: u64 = (1 << PROBE_SHIFT) - 1;

impl Ring {
    /// A ring of `capacity` events, a power of two.
    pub fn new(capacity: usize) -> Self {
        assert!(
            capacity.is_power_of_two(),
            "a ring's capacity is a power of two"
        );
        let slot = || Slot {
            seq: AtomicU64::new(0),
            words: std::array::from_fn(|_| AtomicU64::new(0)),
        };
        Ring {
            tail: Tail(AtomicU64::new(0)),
            slots: (0..capacity).map(|_| slot()).collect(),
            waiting: AtomicBool::new(false),
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

    /// Puts `event` after every event claimed before it, or gives it up; never
    /// waits. True when a reader waits to be woken (`arm`).
    #[must_use = "a waiting reader is woken only by whoever sees this"]
    pub fn send(&self, event: TapEvent) -> bool {
        let pos = self.tail.0.fetch_add(1, Ordering::Relaxed);
        if self.claim(pos) {
            let slot = self.slot(pos);
            // The busy mark is seen before any of the new words (the seqlock's
            // writer side).
            fence(Ordering::Release);
            let first = (u64::from(event.probe) << PROBE_SHIFT) | (event.at_ns & TIME_MASK);
            slot.words[0].store(first, Ordering::Relaxed);
            for (word, arg) in slot.words[1..].iter().zip(event.args) {
                word.store(arg, Ordering::Relaxed);
            }
            slot.seq.store(2 * pos + 2, Ordering::Release);
        }
        // Pairs with the fence in `arm`: either that reader sees this event (or
        // this position given up, as lapped) or this sender sees its flag.
        fence(Ordering::SeqCst);
        self.waiting.load(Ordering::Relaxed) && self.waiting.swap(false, Ordering::AcqRel)
    }

    /// Marks the slot of `pos` busy with it (`2 * pos + 1`), so that no other
    /// sender writes a word there until this one has published. Only a slot at
    /// rest with an older event is claimed: one still being written (an odd
    /// mark: its sender was stopped between its claim and its last word, for as
    /// long as the ring took to come round) or already holding a newer position
    /// (this sender was stopped before its claim) is left alone, and this event
    /// is given up: its readers find the position never written and count it
    /// lost once the ring passes it. Two senders on one slot a lap apart would
    /// otherwise both write its words, and a reader could take the mix of the
    /// two for either event.
    fn claim(&self, pos: u64) -> bool {
        let slot = self.slot(pos);
        let busy = 2 * pos + 1;
        let mut seen = slot.seq.load(Ordering::Relaxed);
        loop {
            if seen % 2 == 1 || seen >= busy {
                return false;
            }
            // Acquire: the words of the event a lap older, published with a
            // Release, come before this sender's in every word's order. (Relaxed,
            // the model checker found a word of the older event read after the
            // newer one's publication: nothing ordered the two senders' stores.)
            match slot
                .seq
                .compare_exchange_weak(seen, busy, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => seen = now,
            }
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
            // its write for a whole lap, or one that gave its event up, must not
            // hold this reader forever.)
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

    /// A reader about to wait for the slot at `cursor`: raises the waiting flag,
    /// then looks. True when there is something to read already; false when the
    /// next `send` that finds the flag up returns true (its caller wakes the
    /// reader).
    pub fn arm(&self, cursor: u64) -> bool {
        self.waiting.store(true, Ordering::Relaxed);
        // Pairs with the fence in `send`.
        fence(Ordering::SeqCst);
        self.readable(cursor)
    }

    /// Whether the slot at `cursor` holds something to read (an event, or a
    /// lap's worth of loss).
    pub fn readable(&self, cursor: u64) -> bool {
        self.slot(cursor).seq.load(Ordering::Acquire) >= 2 * cursor + 2
            || self.tail() > cursor + self.capacity()
    }

    /// A sender's claim of the next position, and nothing written there: a
    /// sender stopped between the two, for the tests.
    #[cfg(test)]
    pub fn claim_without_writing(&self) {
        self.tail.0.fetch_add(1, Ordering::Relaxed);
    }
}
