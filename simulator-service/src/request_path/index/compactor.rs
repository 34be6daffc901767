//! The compactor: a thread of its own that, `compaction_every` after the last
//! compaction ended, drops the index's expired entries and writes a snapshot of
//! what is left, holding the index's lock as `compaction` says.
//!
//! A compaction costs the same whichever way it holds the lock: compressing the
//! snapshot (`compaction_cpu` of CPU, zstd bytes measured at start) and writing
//! it (`snapshot_write`, the store's latency: a sleep, off the CPU, as a write
//! waits for a disk). What differs is who waits meanwhile:
//!
//! - `holding-the-lock`: every request that needs the index, for all of it;
//! - `build-and-swap`: the requests that come while the map is copied and while
//!   the rebuilt one is swapped in (the entries added meanwhile carried over),
//!   each a copy of an index of a few thousand entries: microseconds;
//! - `in-slices`: the requests that come during one slice, each slice a
//!   `compaction_slices`-th of the entries and of the compression; after each,
//!   the compactor pauses as long as the slice held the lock, so a request woken
//!   by the release takes the lock before the next slice does (std's mutex lets a
//!   thread that unlocks take it straight back), and the compaction uses at most
//!   half a core.
//!
//! Each function that holds the lock or waits is `#[inline(never)]`, so a stack
//! of the compactor names what it was doing.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use simulator_api::settings::Compaction;

use super::{lock, Map, Plan, Shared, ENTRY_LIFE};
use crate::request_path::work;

/// The thread's life: a compaction when one is due, until the index is dropped.
pub(super) fn run(shared: &Shared) {
    let mut seq = 0;
    while let Some(plan) = wait_for_next(shared) {
        seq += 1;
        compact(shared, &plan, seq);
    }
}

/// Waits until a compaction is due under the plan in force (a change of plan
/// wakes it, and counts from the same start); `None` when the index is dropped.
#[inline(never)]
fn wait_for_next(shared: &Shared) -> Option<Plan> {
    let since = Instant::now();
    let mut control = lock(&shared.plan);
    loop {
        if control.stop {
            return None;
        }
        let plan = control.plan;
        if !plan.on || plan.every.is_zero() {
            control = shared
                .changed
                .wait(control)
                .unwrap_or_else(|p| p.into_inner());
            continue;
        }
        let left = (since + plan.every).saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Some(plan);
        }
        control = shared
            .changed
            .wait_timeout(control, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

/// What one compaction did.
#[derive(Debug, Default)]
struct Outcome {
    entries: usize,
    dropped: usize,
    /// The longest it held the lock at once.
    held: Duration,
}

fn compact(shared: &Shared, plan: &Plan, seq: u64) {
    let events = &shared.events;
    let began = Instant::now();
    events.compaction_start(seq, shared.entries.load(Ordering::Relaxed));
    let outcome = match plan.how {
        Compaction::HoldingTheLock => holding_the_lock(shared, plan),
        Compaction::BuildAndSwap => build_and_swap(shared, plan),
        Compaction::InSlices => in_slices(shared, plan),
    };
    shared
        .entries
        .store(outcome.entries as u64, Ordering::Relaxed);
    // At least 1 ns, so a compaction that ended is never read as none.
    let held = crate::observe::nanos(outcome.held).max(1);
    shared.longest_hold_ns.fetch_max(held, Ordering::Relaxed);
    events.compaction_done(
        seq,
        outcome.entries as u64,
        outcome.dropped as u64,
        outcome.held,
        began.elapsed(),
    );
}

/// Everything under the lock, the snapshot's write included.
#[inline(never)]
fn holding_the_lock(shared: &Shared, plan: &Plan) -> Outcome {
    let mut map = lock(&shared.map);
    let taken = Instant::now();
    let dropped = drop_expired(&mut map);
    compress_snapshot(&map, plan.snapshot_bytes);
    write_snapshot(plan.write);
    Outcome {
        entries: map.len(),
        dropped,
        held: taken.elapsed(),
    }
}

/// A copy taken under the lock; the rest off it; the rebuilt map swapped in
/// with the entries added meanwhile.
#[inline(never)]
fn build_and_swap(shared: &Shared, plan: &Plan) -> Outcome {
    let (mut rebuilt, copying) = copy_of(shared);
    let last = rebuilt.last_key_value().map(|(id, _)| *id);
    let dropped = drop_expired(&mut rebuilt);
    compress_snapshot(&rebuilt, plan.snapshot_bytes);
    write_snapshot(plan.write);
    let (entries, swapping) = swap_in(shared, rebuilt, last);
    Outcome {
        entries,
        dropped,
        held: copying.max(swapping),
    }
}

/// The map, copied under the lock; how long the lock was held.
#[inline(never)]
fn copy_of(shared: &Shared) -> (Map, Duration) {
    let map = lock(&shared.map);
    let taken = Instant::now();
    (map.clone(), taken.elapsed())
}

/// Puts `rebuilt` (made from a copy whose last id was `last`) in the map's
/// place, with the entries added since the copy; the entries now and how long
/// the lock was held.
#[inline(never)]
fn swap_in(shared: &Shared, mut rebuilt: Map, last: Option<u64>) -> (usize, Duration) {
    let mut map = lock(&shared.map);
    let taken = Instant::now();
    let mut added = match last {
        Some(last) => map.split_off(&(last + 1)),
        None => std::mem::take(&mut *map),
    };
    rebuilt.append(&mut added);
    *map = rebuilt;
    (map.len(), taken.elapsed())
}

/// `compaction_slices` short holds, a pause after each; the write off the lock.
#[inline(never)]
fn in_slices(shared: &Shared, plan: &Plan) -> Outcome {
    let slices = plan.slices.max(1);
    let per_slice = (shared.entries.load(Ordering::Relaxed) as usize)
        .div_ceil(slices)
        .max(1);
    let mut outcome = Outcome::default();
    let mut from = Some(0);
    for _ in 0..slices {
        let (held, next) = one_slice(shared, plan, from, per_slice, &mut outcome);
        from = next;
        outcome.held = outcome.held.max(held);
        pause_between_slices(held);
    }
    write_snapshot(plan.write);
    outcome.entries = lock(&shared.map).len();
    outcome
}

/// One slice: the next `per_slice` entries from id `from` (none left: `None`)
/// and a slice's share of the compression, under the lock. How long it held the
/// lock, and where the next slice starts.
#[inline(never)]
fn one_slice(
    shared: &Shared,
    plan: &Plan,
    from: Option<u64>,
    per_slice: usize,
    outcome: &mut Outcome,
) -> (Duration, Option<u64>) {
    let mut map = lock(&shared.map);
    let taken = Instant::now();
    let next = from.and_then(|from| {
        let cutoff = Instant::now().checked_sub(ENTRY_LIFE);
        let mut range = map.range(from..);
        let expired: Vec<u64> = range
            .by_ref()
            .take(per_slice)
            .filter(|(_, e)| cutoff.is_some_and(|c| e.written < c))
            .map(|(id, _)| *id)
            .collect();
        let next = range.next().map(|(id, _)| *id);
        for id in &expired {
            map.remove(id);
        }
        outcome.dropped += expired.len();
        next
    });
    work::compress(plan.snapshot_bytes / plan.slices.max(1));
    shared.entries.store(map.len() as u64, Ordering::Relaxed);
    (taken.elapsed(), next)
}

/// As long as the slice held the lock (at least 100 us), off it.
#[inline(never)]
fn pause_between_slices(held: Duration) {
    std::thread::sleep(held.max(Duration::from_micros(100)));
}

/// Drops the entries older than [`ENTRY_LIFE`]; how many.
fn drop_expired(map: &mut Map) -> usize {
    let Some(cutoff) = Instant::now().checked_sub(ENTRY_LIFE) else {
        return 0;
    };
    let before = map.len();
    map.retain(|_, e| e.written >= cutoff);
    before - map.len()
}

/// The snapshot's CPU: the entries laid out as the file holds them, and
/// `bytes` of zstd (`compaction_cpu`'s worth).
#[inline(never)]
fn compress_snapshot(map: &Map, bytes: usize) {
    let laid_out: Vec<u8> = map
        .iter()
        .flat_map(|(id, e)| id.to_le_bytes().into_iter().chain(e.bytes.to_le_bytes()))
        .collect();
    std::hint::black_box(work::zstd_len(&laid_out));
    std::hint::black_box(work::compress(bytes));
}

/// The snapshot's write: the store's latency, off the CPU.
#[inline(never)]
fn write_snapshot(latency: Duration) {
    if !latency.is_zero() {
        std::thread::sleep(latency);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Entry, Index};
    use super::*;
    use crate::observe::Events;
    use simulator_api::Settings;

    /// The off-CPU graph leaves the compactor's wait between compactions out
    /// by this frame's name (`profile::folded::IDLE`): it must name this
    /// function where it is, or exercise 12's graph keeps an idle thread.
    #[test]
    fn the_off_cpu_graph_knows_the_wait_between_compactions_by_its_name() {
        let _still_here: fn(&Shared) -> Option<Plan> = wait_for_next;
        let frame = module_path!().trim_end_matches("::tests").to_owned() + "::wait_for_next";
        assert!(
            crate::profile::folded::IDLE.contains(&frame.as_str()),
            "{frame} is not in profile::folded::IDLE"
        );
    }

    /// An index with no compactor thread (`index = false`), entries 1..=6, the
    /// first three written longer ago than an entry lives.
    fn index_with_three_expired() -> Index {
        let index = Index::new(&Settings::default(), &Events::default());
        let now = Instant::now();
        let old = now.checked_sub(ENTRY_LIFE + Duration::from_secs(1));
        let mut map = lock(&index.shared.map);
        for id in 1..=6 {
            let written = match id <= 3 {
                true => old.unwrap_or(now),
                false => now,
            };
            map.insert(id, Entry { written, bytes: 10 });
        }
        drop(map);
        index
    }

    fn plan(how: Compaction) -> Plan {
        Plan::of(&Settings {
            compaction: how,
            compaction_slices: 4,
            ..Settings::default()
        })
    }

    fn ids(index: &Index) -> Vec<u64> {
        lock(&index.shared.map).keys().copied().collect()
    }

    #[test]
    fn every_way_drops_the_expired_entries_and_keeps_the_rest() {
        for how in [
            Compaction::HoldingTheLock,
            Compaction::BuildAndSwap,
            Compaction::InSlices,
        ] {
            let index = index_with_three_expired();
            let outcome = match how {
                Compaction::HoldingTheLock => holding_the_lock(&index.shared, &plan(how)),
                Compaction::BuildAndSwap => build_and_swap(&index.shared, &plan(how)),
                Compaction::InSlices => in_slices(&index.shared, &plan(how)),
            };
            assert_eq!(ids(&index), [4, 5, 6], "{how:?}");
            assert_eq!((outcome.entries, outcome.dropped), (3, 3), "{how:?}");
        }
    }

    #[test]
    fn a_swap_keeps_what_requests_added_after_the_copy() {
        let index = index_with_three_expired();
        let (mut rebuilt, _) = copy_of(&index.shared);
        let last = rebuilt.last_key_value().map(|(id, _)| *id);
        index.record(7, 1);
        index.record(8, 1);
        drop_expired(&mut rebuilt);
        let (entries, _) = swap_in(&index.shared, rebuilt, last);
        assert_eq!(ids(&index), [4, 5, 6, 7, 8]);
        assert_eq!(entries, 5);
    }

    #[test]
    fn a_request_that_finds_the_lock_held_waits_and_says_so() {
        let events = Events::default();
        let index = std::sync::Arc::new(Index::new(&Settings::default(), &events));
        let held = lock(&index.shared.map);
        let waiter = {
            let index = std::sync::Arc::clone(&index);
            std::thread::spawn(move || index.record(1, 5))
        };
        // lock-wait-start fires before the wait: the request is waiting now.
        while events.counts().snapshot().lock_waits_started == 0 {
            std::thread::yield_now();
        }
        assert_eq!(events.counts().snapshot().lock_waits_done, 0);
        drop(held);
        waiter.join().unwrap();
        let counts = events.counts().snapshot();
        assert_eq!((counts.lock_waits_started, counts.lock_waits_done), (1, 1));
        assert_eq!(index.entries(), 1);
        // Free, it fires nothing.
        index.record(2, 5);
        assert_eq!(events.counts().snapshot().lock_waits_started, 1);
    }
}
