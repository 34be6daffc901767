//! The store's own capacity: how many writes it serves at once (`store_concurrency`).
//!
//! A real backend has finite parallelism (a disk's queue, an object store's
//! connection pool); beyond it writes wait their turn inside the store, and that
//! wait is part of what the caller sees as the write's latency. With a limit, a
//! persistence that starts a task per element and nothing else bounding it keeps
//! piling up writes the store can only serve so fast: the spawn-per-request
//! scenario. 0 means no limit, the original's infinitely parallel simulated store.
//!
//! A tokio `Semaphore` (fair: writes are served in the order they arrived),
//! swapped whole on a live change: writes under way keep their slot of the old
//! one, so for a moment both limits hold writes; new writes see the new limit.

use std::sync::{Arc, RwLock};

use simulator_api::Settings;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug)]
pub struct Slots {
    /// The limit in force and its semaphore (`None`: no limit).
    current: RwLock<(usize, Option<Arc<Semaphore>>)>,
}

impl Slots {
    pub fn new(settings: &Settings) -> Self {
        Self {
            current: RwLock::new(Self::gate(settings.store_concurrency)),
        }
    }

    fn gate(limit: usize) -> (usize, Option<Arc<Semaphore>>) {
        (limit, (limit > 0).then(|| Arc::new(Semaphore::new(limit))))
    }

    /// Takes `store_concurrency` from `settings` if it changed.
    pub fn follow(&self, settings: &Settings) {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if current.0 != settings.store_concurrency {
            *current = Self::gate(settings.store_concurrency);
        }
    }

    /// Slots held right now and the limit, or `None` without a limit. Writes still
    /// holding a slot of a limit just replaced are not counted.
    pub fn busy(&self) -> Option<(usize, usize)> {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        let (limit, gate) = (current.0, current.1.as_ref()?);
        Some((limit.saturating_sub(gate.available_permits()), limit))
    }

    /// Waits for a free slot; hold what it returns for the whole write.
    pub async fn enter(&self) -> Option<OwnedSemaphorePermit> {
        let gate = self
            .current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clone()?;
        // The semaphore is never closed, so acquiring only fails if it were.
        gate.acquire_owned().await.ok()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn with_limit(limit: usize) -> Settings {
        Settings {
            store_concurrency: limit,
            ..Settings::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_limit_makes_writes_beyond_it_wait_and_a_live_change_lifts_it() {
        let slots = Arc::new(Slots::new(&with_limit(2)));
        let first = slots.enter().await;
        let second = slots.enter().await;
        let third = tokio::time::timeout(Duration::from_secs(1), slots.enter()).await;
        assert!(
            third.is_err(),
            "a third write waits while two are in the store"
        );
        drop(first);
        assert!(slots.enter().await.is_some(), "a slot freed is taken");
        slots.follow(&with_limit(0));
        assert!(
            slots.enter().await.is_none(),
            "no limit: nothing to wait for"
        );
        drop(second);
    }
}
