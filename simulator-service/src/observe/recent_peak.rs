//! The largest of a value's samples over the last second: the accept queue's
//! longest as the accept loop sees it at each accept, which a reader could not
//! catch by reading the queue itself (a herd fills it and the loop empties it
//! within a tenth of a second); and the writes acknowledged and not yet made at
//! each new one (`request_path/persistence/unwritten.rs`), whose peak a check
//! reads twice a second and never misses.
//!
//! Time is cut into slots of [`SLOT`]; the last [`SLOTS`] are kept in a ring,
//! each an atomic holding its slot's number and its largest sample, so a sample
//! costs a load and usually no write, and [`RecentPeak::peak`] is the largest
//! over the last second and the slot now begun (1.0-1.1 s). A second, not a
//! tenth: a reader on a saturated machine reads late (under four spinning
//! processes on two CPUs a twin reading ten times a second found 14-59 of a
//! queue that reached 65 at every herd when the window was 100-200 ms), and the
//! live view reads once a second. By hand: the crates for windowed maxima keep a
//! lock or a history; this needs a word a slot.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a slot lasts.
pub const SLOT: Duration = Duration::from_millis(100);
/// Slots kept: a second's and the one now being filled.
pub const SLOTS: usize = 11;

#[derive(Debug)]
pub struct RecentPeak {
    began: Instant,
    /// `slot number << 32 | largest sample`, slot `n` at `n % SLOTS`.
    slots: [AtomicU64; SLOTS],
}

impl Default for RecentPeak {
    fn default() -> Self {
        RecentPeak {
            began: Instant::now(),
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

fn pack(slot: u64, value: u32) -> u64 {
    (slot << 32) | u64::from(value)
}

fn unpack(word: u64) -> (u64, u32) {
    (word >> 32, word as u32)
}

impl RecentPeak {
    /// The slot `at` falls in, counted from 1 (0 marks a slot never written).
    fn slot_of(&self, at: Instant) -> u64 {
        (at.saturating_duration_since(self.began).as_millis() / SLOT.as_millis()) as u64 + 1
    }

    pub fn see(&self, value: u32) {
        self.see_at(value, Instant::now());
    }

    fn see_at(&self, value: u32, at: Instant) {
        let slot = self.slot_of(at);
        let cell = &self.slots[(slot % SLOTS as u64) as usize];
        let mut word = cell.load(Ordering::Relaxed);
        loop {
            let (held, largest) = unpack(word);
            let newer = match held.cmp(&slot) {
                std::cmp::Ordering::Less => pack(slot, value),
                std::cmp::Ordering::Equal if value > largest => pack(slot, value),
                // A larger sample of this slot is in, or a later slot's.
                _ => return,
            };
            match cell.compare_exchange_weak(word, newer, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => word = now,
            }
        }
    }

    /// The largest sample of the last second and the slot now begun (0: none).
    pub fn peak(&self) -> u32 {
        self.peak_at(Instant::now())
    }

    fn peak_at(&self, at: Instant) -> u32 {
        let slot = self.slot_of(at);
        let oldest = slot.saturating_sub(SLOTS as u64 - 1);
        self.slots
            .iter()
            .map(|cell| unpack(cell.load(Ordering::Relaxed)))
            .filter(|&(held, _)| (oldest..=slot).contains(&held))
            .map(|(_, largest)| largest)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_covers_the_last_second_and_then_forgets() {
        let p = RecentPeak::default();
        let t = p.began;
        let ms = Duration::from_millis;
        assert_eq!(p.peak_at(t), 0);
        p.see_at(3, t);
        p.see_at(65, t + ms(10));
        p.see_at(7, t + ms(20));
        assert_eq!(p.peak_at(t + ms(30)), 65);
        // A slot later, and a second later, the peak is still there.
        p.see_at(2, t + SLOT + ms(5));
        assert_eq!(p.peak_at(t + SLOT + ms(50)), 65);
        assert_eq!(p.peak_at(t + ms(1050)), 65);
        // Past a second and a slot it is forgotten; the later sample remains
        // until its own second has passed.
        assert_eq!(p.peak_at(t + ms(1100)), 2);
        assert_eq!(p.peak_at(t + ms(1199)), 2);
        assert_eq!(p.peak_at(t + ms(1200)), 0);
        // A slot's cell taken by a later slot (the ring came round) holds the later.
        p.see_at(9, t + ms(1150));
        p.see_at(4, t + ms(2250));
        assert_eq!(p.peak_at(t + ms(2260)), 4);
    }

    #[test]
    fn samples_from_many_threads_keep_the_largest() {
        let p = std::sync::Arc::new(RecentPeak::default());
        let threads: Vec<_> = (0..4)
            .map(|k| {
                let p = std::sync::Arc::clone(&p);
                std::thread::spawn(move || {
                    let at = p.began;
                    for v in 0..1000 {
                        p.see_at(v * 4 + k, at);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(p.peak_at(p.began), 3999);
    }
}
