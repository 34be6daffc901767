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
use simulator_api::settings::{AbandonedFills, CacheFills};
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
    /// The entries (keys: a read returns a synthetic element, so there is no
    /// value to keep); `None` without a cache (`cache_entries = 0`).
    entries: Mutex<Option<LruCache<u64, ()>>>,
    /// The `cache_entries` the entries were made for, to tell a change.
    made_for: AtomicUsize,
    /// Shared fills in flight by key (`coalesced`).
    shared: Mutex<HashMap<u64, watch::Receiver<Outcome>>>,
    /// Fills in flight, of either kind, for `fill_limit`.
    filling: AtomicUsize,
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
        let mut entries = new_entries(settings.cache_entries);
        if let Some(entries) = entries.as_mut() {
            for key in (0..settings.cache_entries as u64).rev() {
                entries.put(key, ());
            }
        }
        *cache.lock() = entries;
        cache
            .made_for
            .store(settings.cache_entries, Ordering::Relaxed);
        cache
    }

    /// Takes a change of `cache_entries`: the cache comes back empty at its new
    /// size, as a cache node that failed and was replaced does.
    pub fn follow(&self, settings: &Settings) {
        if self
            .made_for
            .swap(settings.cache_entries, Ordering::Relaxed)
            != settings.cache_entries
        {
            *self.lock() = new_entries(settings.cache_entries);
        }
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.lock().as_ref().map_or(0, LruCache::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Option<LruCache<u64, ()>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn hit(&self, key: u64) -> bool {
        self.lock()
            .as_mut()
            .is_some_and(|entries| entries.get(&key).is_some())
    }

    fn put(&self, key: u64) {
        if let Some(entries) = self.lock().as_mut() {
            entries.put(key, ());
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
        if self.hit(key) {
            events.cache_hit(id, key);
            return Ok(());
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
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(fill) = shared.get(&key) {
            return Ok(fill.clone());
        }
        if !self.enter_fill(settings.fill_limit) {
            backend.events.cache_fill_refuse(id, key);
            return Err(ReadError::FillLimit);
        }
        let (tx, rx) = watch::channel(None);
        shared.insert(key, rx.clone());
        drop(shared);
        self.begin(backend, (id, key), None, tx, true);
        Ok(rx)
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

fn new_entries(capacity: usize) -> Option<LruCache<u64, ()>> {
    NonZeroUsize::new(capacity).map(LruCache::new)
}

#[cfg(test)]
mod tests;
