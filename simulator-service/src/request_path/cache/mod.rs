//! The look-aside cache in front of the store's reads (`cache_entries`): what a
//! read finds, and how a miss is filled.
//!
//! A request that carries a key reads that key's element. A hit answers it from
//! memory (cache-hit). A miss (cache-miss) needs a **fill**: a read of the store
//! (one of its slots, in turn with its writes, for its latency: `store/`) whose
//! element then goes into the cache. Whose fill it is, is the service's choice:
//!
//! - `cache_fills = per-request`: every miss fills for itself, and the fill is
//!   tied to its request (`abandoned_fills = discard`): when the client leaves,
//!   the fill gives up its wait for a slot, and a read the store has begun is
//!   thrown away when it ends (cache-fill-abandoned), as a fetch under the
//!   request's deadline is. `abandoned_fills = keep` lets it run to the end.
//! - `cache_fills = coalesced`: one fill per key in flight (single-flight); the
//!   other misses of the key wait on it. A shared fill belongs to no request, so
//!   it always runs to its end.
//! - `fill_limit`: a miss that finds that many fills in flight is refused at once
//!   (cache-fill-refuse, 503).
//!
//! While the cache is unreachable (`cache_reachable = false`, the world's),
//! every read misses and no fill goes in. When it is reachable again, every
//! entry it kept is **stale**: it missed the invalidations sent meanwhile. A
//! read of a stale entry is a miss (`stale_reads = miss`) or is answered with it
//! at once (`serve`, cache-stale-hit) while one refresh per key, a shared fill,
//! runs in the background. Staleness is an epoch, as memcached's `flush_all`
//! is a time: each entry keeps the epoch it went in at, and reconnecting moves
//! the cache's epoch on, so marking a million entries stale is one addition.
//!
//! This is how a cache that loses its contents can stay cold for good: with
//! every read a miss, the store's queue grows past the clients' timeout, every
//! fill is then abandoned before it ends, and nothing ever goes back in.
//!
//! The entries are the `lru` crate's `LruCache` (a hash map threaded on a
//! doubly-linked list: O(1) lookups that move the key to the front, and the
//! least recently used out when full) behind one mutex: a lookup reorders the
//! list, so even a hit needs the lock, and the reads this cache sees (hundreds
//! a second) are far from making one lock matter. A concurrent cache (moka)
//! would evict by TinyLFU, not by recency, and the lesson is about LRU's.
//! The fills in flight per key are a map of `watch` channels: the waiters of a
//! shared fill each hold a receiver, so any of them may leave.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use lru::LruCache;
use simulator_api::settings::{AbandonedFills, CacheFills, StaleReads};
use simulator_api::Settings;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::persistence::Backend;

/// Why a read ended without its element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// `fill_limit` fills were in flight.
    FillLimit,
    /// The client left while the read waited for its fill.
    ClientGone,
    /// Shutdown cut the wait short.
    ShuttingDown,
}

/// The cache and its fills in flight. One per processor.
#[derive(Debug, Default)]
pub struct Cache {
    /// The entries and what they are read against.
    entries: Mutex<Entries>,
    /// The `cache_entries` the entries were made for, to tell a change.
    made_for: AtomicUsize,
    /// Shared fills in flight by key (`coalesced`, and the refreshes of stale
    /// entries with `stale_reads = serve`).
    shared: Mutex<HashMap<u64, watch::Receiver<Outcome>>>,
    /// Fills in flight, of either kind, for `fill_limit`.
    filling: AtomicUsize,
}

/// The entries, and whether they can be reached and trusted.
#[derive(Debug, Default)]
struct Entries {
    /// Key to the epoch it went in at (a read returns a synthetic element, so
    /// there is no value to keep); `None` without a cache (`cache_entries = 0`).
    lru: Option<LruCache<u64, u64>>,
    /// An entry from an earlier epoch is stale.
    epoch: u64,
    /// False while the cache cannot be reached (`cache_reachable`).
    unreachable: bool,
}

/// What a read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Fresh,
    Stale,
    Absent,
}

/// A shared fill of a key: joined, begun, or refused at `fill_limit`.
enum Shared {
    InFlight(watch::Receiver<Outcome>),
    Full,
}

/// What a fill reports to the reads that wait on it: `None` while it runs,
/// then whether its element went into the cache.
type Outcome = Option<bool>;
type Done = watch::Sender<Outcome>;

impl Cache {
    /// A cache of `cache_entries`, warm: keys `0..cache_entries` in it, key 0 the
    /// most recently used (the hottest keys of a Zipf load, which is what hours
    /// of traffic would have left in it).
    pub fn new(settings: &Settings) -> Self {
        let cache = Self::default();
        let mut lru = new_entries(settings.cache_entries);
        if let Some(lru) = lru.as_mut() {
            for key in (0..settings.cache_entries as u64).rev() {
                lru.put(key, 0);
            }
        }
        *cache.lock() = Entries {
            lru,
            epoch: 0,
            unreachable: !settings.cache_reachable,
        };
        cache
            .made_for
            .store(settings.cache_entries, Ordering::Relaxed);
        cache
    }

    /// Takes a change of `cache_entries`: the cache comes back empty at its new
    /// size, as a cache node that failed and was replaced does. And of
    /// `cache_reachable`: reached again, every entry it kept is stale.
    pub fn follow(&self, settings: &Settings) {
        let resized = self
            .made_for
            .swap(settings.cache_entries, Ordering::Relaxed)
            != settings.cache_entries;
        let mut entries = self.lock();
        if resized {
            entries.lru = new_entries(settings.cache_entries);
        }
        let unreachable = !settings.cache_reachable;
        if entries.unreachable && !unreachable {
            entries.epoch += 1;
        }
        entries.unreachable = unreachable;
    }

    /// Entries held now, stale or not.
    pub fn len(&self) -> usize {
        self.lock().lru.as_ref().map_or(0, LruCache::len)
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn find(&self, key: u64) -> Found {
        let mut entries = self.lock();
        let epoch = entries.epoch;
        if entries.unreachable {
            return Found::Absent;
        }
        match entries.lru.as_mut().and_then(|lru| lru.get(&key)) {
            Some(&went_in) if went_in == epoch => Found::Fresh,
            Some(_) => Found::Stale,
            None => Found::Absent,
        }
    }

    fn put(&self, key: u64) {
        let mut entries = self.lock();
        let epoch = entries.epoch;
        if entries.unreachable {
            return;
        }
        if let Some(lru) = entries.lru.as_mut() {
            lru.put(key, epoch);
        }
    }

    /// Counts a fill in, unless `fill_limit` fills are in flight already.
    fn enter_fill(&self, limit: usize) -> bool {
        let before = self.filling.fetch_add(1, Ordering::AcqRel);
        if limit > 0 && before >= limit {
            self.filling.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Reads `key` for request `id`: from the cache, or by a fill (its own or a
    /// shared one) that it waits for until `client_left` or `stop`.
    pub async fn read(
        self: &Arc<Self>,
        backend: &Arc<Backend>,
        (id, key): (u64, u64),
        settings: &Settings,
        client_left: CancellationToken,
        stop: &CancellationToken,
    ) -> Result<(), ReadError> {
        let events = &backend.events;
        match self.find(key) {
            Found::Fresh => {
                events.cache_hit(id, key);
                return Ok(());
            }
            Found::Stale if settings.stale_reads == StaleReads::Serve => {
                events.cache_stale_hit(id, key);
                // At fill_limit the entry is served without a refresh: a later
                // read of it tries again.
                let _ = self.shared_fill(backend, (id, key), settings.fill_limit);
                return Ok(());
            }
            Found::Stale | Found::Absent => {}
        }
        events.cache_miss(id, key);
        let mut done = match settings.cache_fills {
            CacheFills::Coalesced => self.join_or_begin(backend, (id, key), settings)?,
            CacheFills::PerRequest => {
                if !self.enter_fill(settings.fill_limit) {
                    events.cache_fill_refuse(id, key);
                    return Err(ReadError::FillLimit);
                }
                let (tx, rx) = watch::channel(None);
                let give_up = (settings.abandoned_fills == AbandonedFills::Discard)
                    .then(|| client_left.clone());
                self.begin(backend, (id, key), give_up, tx, false);
                rx
            }
        };
        // The client's leaving first: it also ends the fill's wait, which then
        // reports at the same moment, and the read must not pass for answered.
        tokio::select! {
            biased;
            () = client_left.cancelled() => Err(ReadError::ClientGone),
            () = stop.cancelled() => Err(ReadError::ShuttingDown),
            outcome = done.wait_for(Option::is_some) => match outcome.map(|o| *o) {
                Ok(Some(true)) => Ok(()),
                // Thrown away (its client left), or its task cut short at shutdown.
                Ok(_) => Err(ReadError::ClientGone),
                Err(_) => Err(ReadError::ShuttingDown),
            },
        }
    }

    /// The shared fill of `key` in flight, or a new one begun by this read.
    fn join_or_begin(
        self: &Arc<Self>,
        backend: &Arc<Backend>,
        (id, key): (u64, u64),
        settings: &Settings,
    ) -> Result<watch::Receiver<Outcome>, ReadError> {
        match self.shared_fill(backend, (id, key), settings.fill_limit) {
            Shared::InFlight(fill) => Ok(fill),
            Shared::Full => {
                backend.events.cache_fill_refuse(id, key);
                Err(ReadError::FillLimit)
            }
        }
    }

    /// Joins the shared fill of `key` in flight, or begins one for request
    /// `id` unless `limit` fills are in flight.
    fn shared_fill(
        self: &Arc<Self>,
        backend: &Arc<Backend>,
        (id, key): (u64, u64),
        limit: usize,
    ) -> Shared {
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(fill) = shared.get(&key) {
            return Shared::InFlight(fill.clone());
        }
        if !self.enter_fill(limit) {
            return Shared::Full;
        }
        let (tx, rx) = watch::channel(None);
        shared.insert(key, rx.clone());
        drop(shared);
        self.begin(backend, (id, key), None, tx, true);
        Shared::InFlight(rx)
    }

    /// Spawns a fill: a read of the store, then the element into the cache, or
    /// thrown away if `give_up` was cancelled first (its client left).
    fn begin(
        self: &Arc<Self>,
        backend: &Arc<Backend>,
        (id, key): (u64, u64),
        give_up: Option<CancellationToken>,
        done: Done,
        shared: bool,
    ) {
        let (cache, backend_for_fill) = (Arc::clone(self), Arc::clone(backend));
        backend.events.cache_fill_start(id, key);
        backend.tasks.spawn(async move {
            let began = Instant::now();
            let backend = backend_for_fill;
            let read = backend.store.read(give_up.as_ref()).await;
            let abandoned = give_up
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled);
            let filled = read && !abandoned;
            if filled {
                cache.put(key);
                backend.events.cache_fill_done(id, key, began.elapsed());
            } else {
                backend
                    .events
                    .cache_fill_abandoned(id, key, read, began.elapsed());
            }
            if shared {
                let mut map = cache.shared.lock().unwrap_or_else(|p| p.into_inner());
                map.remove(&key);
            }
            cache.filling.fetch_sub(1, Ordering::AcqRel);
            let _ = done.send(Some(filled));
        });
    }
}

fn new_entries(capacity: usize) -> Option<LruCache<u64, u64>> {
    NonZeroUsize::new(capacity).map(LruCache::new)
}

#[cfg(test)]
mod tests;
