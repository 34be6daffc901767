//! Per-thread parts of the event path's counts, added up when read: each thread
//! that records an event writes to a part of its own, behind a lock no other
//! writer takes, so recording costs an uncontended lock on a cache line that
//! stays in this core's cache however many cores record at once; a reader locks
//! every part at once and adds them up.
//!
//! Locking every part before reading any keeps a read consistent, as one lock for
//! all was: while the reader holds them no event can move any count, so a request
//! started on one thread and done on another is either done in the sum or still
//! in flight, never done and not started. Writers take one part's lock and no
//! other; readers take them all in index order; so nobody waits on a cycle.
//!
//! By hand, in a few lines, because the crates made for per-thread values give up
//! exactly that: `thread_local::ThreadLocal` adds a thread's value wherever its
//! id falls, so a reader walking the values can miss one made behind it, and
//! `metrics-util`'s and HdrHistogram's sharded recorders are per metric, not a
//! struct of counters read together. The parts are a fixed number, about twice
//! the cores (at least 4, at most [`MAX_PARTS`]), handed to threads in turn; a
//! thread shares its part with another only past that many recording threads
//! (tokio's workers, the blocking pool, rayon's), which costs contention there,
//! never a wrong count.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The most parts a [`Shards`] has, whatever the cores.
pub const MAX_PARTS: usize = 64;

/// One value per part, each on cache lines of its own.
#[derive(Debug)]
pub struct Shards<T> {
    parts: Box<[Padded<Mutex<T>>]>,
}

/// Aligned past the 128 bytes that x86's adjacent-line prefetch pulls in together,
/// so two parts never share a line.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Padded<T>(T);

impl<T: Default> Default for Shards<T> {
    fn default() -> Self {
        Shards {
            parts: (0..parts()).map(|_| Padded(Mutex::default())).collect(),
        }
    }
}

impl<T> Shards<T> {
    /// `change` on this thread's part.
    #[inline]
    pub fn with<R>(&self, change: impl FnOnce(&mut T) -> R) -> R {
        change(&mut lock(&self.parts[this_thread() % self.parts.len()].0))
    }

    /// Every part, locked: nothing records until the guards are dropped.
    pub fn all(&self) -> Vec<MutexGuard<'_, T>> {
        self.parts.iter().map(|part| lock(&part.0)).collect()
    }
}

fn lock<T>(part: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing under these locks can panic; a poisoned guard still holds valid counts.
    part.lock().unwrap_or_else(|p| p.into_inner())
}

/// The parts every [`Shards`] of this process has.
fn parts() -> usize {
    static PARTS: OnceLock<usize> = OnceLock::new();
    *PARTS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        (2 * cores).next_power_of_two().clamp(4, MAX_PARTS)
    })
}

/// This thread's number, handed out in the order threads first record.
fn this_thread() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    MINE.with(|mine| {
        if mine.get() == usize::MAX {
            mine.set(NEXT.fetch_add(1, Ordering::Relaxed) % MAX_PARTS);
        }
        mine.get()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_records_into_its_own_part_and_a_read_sees_them_all() {
        let shards: Shards<u64> = Shards::default();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        shards.with(|n| *n += 1);
                    }
                });
            }
        });
        let parts = shards.all();
        assert_eq!(parts.iter().map(|n| **n).sum::<u64>(), 80_000);
        assert!(
            parts.iter().filter(|n| ***n > 0).count() >= 2.min(parts.len()),
            "the threads did not all share one part"
        );
    }

    #[test]
    fn a_thread_keeps_its_part() {
        let shards: Shards<u64> = Shards::default();
        shards.with(|n| *n += 1);
        shards.with(|n| *n += 1);
        assert_eq!(shards.all().iter().filter(|n| ***n == 2).count(), 1);
    }
}
