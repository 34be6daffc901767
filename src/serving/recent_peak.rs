//! The largest of a value's samples over the last moment: the accept queue's
//! longest as the accept loop sees it at each accept, which a reader a few times
//! a second could not catch by reading the queue itself (a herd fills it and
//! the loop empties it within a tenth of a second).
//!
//! Time is cut into slots of [`SLOT`]; two slots are kept (the current and the
//! one before), each an atomic holding its slot's number and its largest sample,
//! so a sample costs a load and usually no write, and [`RecentPeak::peak`] is
//! the largest over the last one to two slots: a reader every [`SLOT`] misses no
//! sample. By hand: the crates for windowed maxima keep a lock or a history,
//! this needs two words.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a slot lasts.
pub const SLOT: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub struct RecentPeak {
    began: Instant,
    /// `slot number << 32 | largest sample`, for the slots of even and odd numbers.
    slots: [AtomicU64; 2],
}

impl Default for RecentPeak {
    fn default() -> Self {
        RecentPeak {
            began: Instant::now(),
            slots: [AtomicU64::new(0), AtomicU64::new(0)],
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
        let cell = &self.slots[(slot % 2) as usize];
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

    /// The largest sample of this slot and the one before (0: none).
    pub fn peak(&self) -> u32 {
        self.peak_at(Instant::now())
    }

    fn peak_at(&self, at: Instant) -> u32 {
        let slot = self.slot_of(at);
        self.slots
            .iter()
            .map(|cell| unpack(cell.load(Ordering::Relaxed)))
            .filter(|&(held, _)| held == slot || held + 1 == slot)
            .map(|(_, largest)| largest)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_covers_this_slot_and_the_last_and_then_forgets() {
        let p = RecentPeak::default();
        let t = p.began;
        assert_eq!(p.peak_at(t), 0);
        p.see_at(3, t);
        p.see_at(65, t + Duration::from_millis(10));
        p.see_at(7, t + Duration::from_millis(20));
        assert_eq!(p.peak_at(t + Duration::from_millis(30)), 65);
        // The next slot still sees the last one's peak.
        p.see_at(2, t + SLOT + Duration::from_millis(5));
        assert_eq!(p.peak_at(t + SLOT + Duration::from_millis(50)), 65);
        // Two slots on, only the slot before remains.
        assert_eq!(p.peak_at(t + 2 * SLOT + Duration::from_millis(1)), 2);
        assert_eq!(p.peak_at(t + 4 * SLOT), 0);
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
