//! The index: a shared in-memory map every request records its element in
//! (`index = true`), behind one `std::sync::Mutex`, and the compactor that keeps
//! it small (`compactor.rs`).
//!
//! **Contract.** With `index = false` (the original) nothing here runs. Otherwise
//! [`Index::record`] takes the lock on the thread that runs the request (an async
//! worker: the lock is a real futex, so a worker that waits for it is blocked in
//! the kernel, serves nothing else, and the runtime's canary sees it) and inserts
//! the request's entry. A request that finds the lock held fires lock-wait-start,
//! and lock-wait-done when it has it: how long requests wait for the index is
//! counted, though nothing says *who* held it. Entries live [`ENTRY_LIFE`]; only a
//! compaction drops them, so the index stays bounded only while compactions run.
//!
//! Why a `std::sync::Mutex` and not tokio's: the lock is held for microseconds by
//! a request, and the tokio documentation itself recommends the std one for that;
//! the trouble is the compactor, which holds it for as long as its
//! `compaction` setting says. Why no arc-swap: a request writes the index, so it
//! takes the lock anyway; `build-and-swap` needs one pointer's worth of swap,
//! made under the lock in nanoseconds, and a lock-free read would buy nothing.

mod compactor;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use simulator_api::settings::Compaction;
use simulator_api::Settings;

use crate::observe::Events;

/// How long an entry stays in the index before a compaction may drop it.
pub const ENTRY_LIFE: Duration = Duration::from_secs(10);

/// One element recorded: when, and how large.
#[derive(Debug, Clone, Copy)]
struct Entry {
    written: Instant,
    bytes: u64,
}

/// The map, by request id. Ids grow, so the entries added since a copy are those
/// past its last id (`build-and-swap` carries them over by that).
type Map = BTreeMap<u64, Entry>;

/// What the compactor follows: the settings it needs, changed live.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Plan {
    on: bool,
    how: Compaction,
    every: Duration,
    slices: usize,
    /// Bytes of zstd that cost `compaction_cpu` here.
    snapshot_bytes: usize,
    write: Duration,
}

impl Plan {
    fn of(settings: &Settings) -> Self {
        let snapshot_bytes = match settings.compaction_cpu.is_zero() {
            true => 0,
            false => {
                let measured = super::work::calibration::calibration();
                let bytes = measured.bytes_for(settings.compaction_cpu) as usize;
                // Made when the setting is applied, so the first compaction
                // costs what the others do.
                super::work::make_text_for(bytes);
                bytes
            }
        };
        Plan {
            on: settings.index,
            how: settings.compaction,
            every: settings.compaction_every,
            slices: settings.compaction_slices.max(1),
            snapshot_bytes,
            write: settings.snapshot_write,
        }
    }
}

/// What the requests and the compactor share.
#[derive(Debug)]
struct Shared {
    map: Mutex<Map>,
    /// The map's size, kept beside it so `/stats` never waits for the lock.
    entries: AtomicU64,
    plan: Mutex<Control>,
    /// Wakes the compactor for a new plan or the end.
    changed: Condvar,
    /// The longest hold of the compactions ended since the live view read it, ns.
    longest_hold_ns: AtomicU64,
    events: Events,
}

#[derive(Debug)]
struct Control {
    plan: Plan,
    stop: bool,
}

/// The index and its compactor thread; dropping it stops the thread.
#[derive(Debug)]
pub struct Index {
    shared: Arc<Shared>,
    compactor: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Index {
    /// An index that follows `settings` (its compactor starts with the first
    /// settings that turn the index on).
    pub fn new(settings: &Settings, events: &Events) -> Self {
        let index = Index {
            shared: Arc::new(Shared {
                map: Mutex::new(Map::new()),
                entries: AtomicU64::new(0),
                plan: Mutex::new(Control {
                    plan: Plan::of(&Settings::default()),
                    stop: false,
                }),
                changed: Condvar::new(),
                longest_hold_ns: AtomicU64::new(0),
                events: events.clone(),
            }),
            compactor: Mutex::new(None),
        };
        index.follow(settings);
        index
    }

    /// Applies settings changed live; the compactor takes them at its next wake.
    pub fn follow(&self, settings: &Settings) {
        let plan = Plan::of(settings);
        lock(&self.shared.plan).plan = plan;
        self.shared.changed.notify_all();
        let mut thread = lock(&self.compactor);
        if plan.on && thread.is_none() {
            let shared = Arc::clone(&self.shared);
            // A thread of its own, as a database's compactor or a snapshotter
            // has: its CPU and its waits show under its name in every profile.
            let spawned = std::thread::Builder::new()
                .name("compactor".into())
                .spawn(move || compactor::run(&shared));
            match spawned {
                Ok(handle) => *thread = Some(handle),
                Err(e) => tracing::error!("cannot start the index's compactor: {e}"),
            }
        }
    }

    /// Records request `id`'s element of `bytes` in the index, waiting for the
    /// lock on this thread if it is held.
    pub fn record(&self, id: u64, bytes: u64) {
        let mut map = self.take_lock(id);
        map.insert(
            id,
            Entry {
                written: Instant::now(),
                bytes,
            },
        );
        self.shared
            .entries
            .store(map.len() as u64, Ordering::Relaxed);
    }

    /// The lock, waited for in the kernel when it is held. Not inlined, so a
    /// stack of the wait names it (std's lock is not built with frame pointers).
    #[inline(never)]
    fn take_lock(&self, id: u64) -> MutexGuard<'_, Map> {
        match self.shared.map.try_lock() {
            Ok(map) => map,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                let events = &self.shared.events;
                events.lock_wait_start(id, self.entries());
                let asked = Instant::now();
                // Not through `lock()`: the wait's innermost frame of ours is
                // this function, as a profile shows it.
                let map = self.shared.map.lock().unwrap_or_else(|p| p.into_inner());
                events.lock_wait_done(id, asked.elapsed());
                map
            }
        }
    }

    /// The longest a compaction held the lock among those ended since the last
    /// call, ns (0: none ended).
    pub fn take_longest_hold(&self) -> u64 {
        self.shared.longest_hold_ns.swap(0, Ordering::Relaxed)
    }

    /// Entries in the index now.
    pub fn entries(&self) -> u64 {
        self.shared.entries.load(Ordering::Relaxed)
    }
}

impl Drop for Index {
    fn drop(&mut self) {
        lock(&self.shared.plan).stop = true;
        self.shared.changed.notify_all();
        if let Some(thread) = lock(&self.compactor).take() {
            // It finishes the compaction it is in, then sees the stop.
            let _ = thread.join();
        }
    }
}

/// A lock whose holder panicked is still the index: take it as it is.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
