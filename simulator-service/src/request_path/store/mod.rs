//! The store: where an element ends up, and the faults injected around it.
//!
//! **Contract.** [`Store::persist`] stores one element and says whether it worked;
//! it fires no probes (persistence does, around it) and takes no permit. Two
//! stores: `Medium::Simulated` sleeps for a latency drawn from `persist_latency`
//! (plus `persist_cost_per_mib` per MiB) and is the original simulator's store;
//! `Medium::Files` really writes `DIR/<id>.bin` (`files.rs`). Around either,
//! `faults.rs` hangs a share of persists (a stuck disk, until persistence's
//! `persist_timeout` gives up) and fails a share on purpose. Either serves at most
//! `store_concurrency` writes at once (`slots.rs`); the rest wait inside the store.
//! The media are an enum, not a trait object: two variants, matched in one place,
//! no allocation per persist.
//!
//! The store is the world, and a write meets the world as it is when the write
//! starts: its latency, its cost per MiB, its faults and the timer come from the
//! settings in force then (`follow` keeps them), not from those in force when its
//! request entered the path. A store that has recovered from a slowdown serves
//! every write after that at its normal speed, however long the write's request
//! waited for a permit (the retry-storm exercise depends on it: a backlog built
//! during the slowdown drains at the recovered speed).

mod faults;
mod files;
mod slots;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use simulator_api::Settings;
use tokio_util::sync::CancellationToken;

use crate::request_path::Element;

pub use files::{open_dir, FileStore};
pub use slots::Slots;

/// Why a persist failed. The data processor ignores the outcome, as the original
/// did (except in durable mode); it is counted and traced (`persist-done` arg1 = 0).
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("injected failure (persist_error_rate)")]
    Injected,
    #[error("the persist did not finish within {0:?} (persist_timeout)")]
    TimedOut(Duration),
    #[error("writing {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("journalling to {path}: {source}")]
    Journal { path: PathBuf, source: io::Error },
}

/// Where elements are persisted, and how many at once.
#[derive(Debug)]
pub struct Store {
    medium: Medium,
    slots: Slots,
    /// The settings in force now: the world each write meets.
    world: RwLock<Arc<Settings>>,
    /// Whether that world lets a write end without waiting ([`Store::ends_at_once`]),
    /// worked out when the world changes, not on every persist.
    at_once: AtomicBool,
}

/// What a write does.
#[derive(Debug, Clone)]
enum Medium {
    Simulated,
    Files(FileStore),
}

impl Store {
    /// The store `settings` select, and the first free element id (a file store
    /// continues after the ids an earlier run left, so nothing is overwritten).
    pub fn open(settings: &Settings) -> io::Result<(Self, u64)> {
        let (medium, first_id) = match &settings.persist_dir {
            None => (Medium::Simulated, 1),
            Some(dir) => {
                let first_id = open_dir(dir)?;
                let store = FileStore {
                    dir: dir.clone(),
                    fsync: settings.persist_fsync || settings.durable,
                };
                (Medium::Files(store), first_id)
            }
        };
        let slots = Slots::new(settings);
        let world = RwLock::new(Arc::new(settings.clone()));
        let at_once = AtomicBool::new(writes_at_once(&medium, settings));
        Ok((
            Store {
                medium,
                slots,
                world,
                at_once,
            },
            first_id,
        ))
    }

    /// The slots held right now and the limit (`slots.rs`).
    pub fn slots_busy(&self) -> Option<(usize, usize)> {
        self.slots.busy()
    }

    /// Takes the live settings the store itself holds (`store_concurrency`) and
    /// the world the next writes meet.
    pub fn follow(&self, settings: &Settings) {
        self.slots.follow(settings);
        *self.world.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(settings.clone());
        self.at_once
            .store(writes_at_once(&self.medium, settings), Ordering::Relaxed);
    }

    fn world(&self) -> Arc<Settings> {
        Arc::clone(&self.world.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Whether a write now would end without waiting (the zero-cost
    /// benchmarks' store): persistence runs such a persist inline. A world that
    /// changes between this answer and the write only costs the persist a task.
    pub fn ends_at_once(&self) -> bool {
        self.at_once.load(Ordering::Relaxed)
    }

    /// Persists one element, faults included, in the world in force when the
    /// write starts (after any wait for a slot).
    pub async fn persist(&self, id: u64, element: &Element) -> Result<(), PersistError> {
        // A stalled write keeps its slot until persistence's timeout ends it.
        let _slot = self.slots.enter().await;
        let world = self.world();
        faults::around(&world, self.write(id, element, &world)).await
    }

    /// Reads one element for a cache fill: waits for a slot in turn with the
    /// writes, unless `give_up` is cancelled first (then `false`: the store never
    /// saw it); then reads for a latency drawn from `persist_latency`, to its end
    /// whatever happens to its caller, as a store serves a query whose client has
    /// gone. Reads are simulated on either medium and meet no faults.
    pub async fn read(&self, give_up: Option<&CancellationToken>) -> bool {
        let slot = match give_up {
            None => self.slots.enter().await,
            Some(give_up) => tokio::select! {
                slot = self.slots.enter() => slot,
                () = give_up.cancelled() => return false,
            },
        };
        let world = self.world();
        let latency = world.persist_latency.draw();
        crate::request_path::delay::sleep(latency, world.timer_tick).await;
        drop(slot);
        true
    }

    async fn write(
        &self,
        id: u64,
        element: &Element,
        settings: &Settings,
    ) -> Result<(), PersistError> {
        match &self.medium {
            Medium::Simulated => {
                // `draw` takes the thread-local generator for the draw alone: it must
                // not be held across the await, where the task may move to another thread.
                let latency =
                    settings.persist_latency.draw() + per_mib_cost(settings, element.len());
                crate::request_path::delay::sleep(latency, settings.timer_tick).await;
                Ok(())
            }
            // Boxed: a file's write (open, write, sync, rename) is most of a
            // kilobyte of state, which every simulated persist would carry
            // inline and move into its box (issue 62); beside a disk write a
            // box is nothing.
            Medium::Files(files) => {
                Box::pin(files.write(id, element))
                    .await
                    .map_err(|source| PersistError::Io {
                        path: files.path_of(id),
                        source,
                    })
            }
        }
    }
}

/// Simulated, in a world with no latency, no per-MiB cost, no stalls and no
/// limit on writes at once.
fn writes_at_once(medium: &Medium, world: &Settings) -> bool {
    matches!(medium, Medium::Simulated)
        && world.persist_latency.is_zero()
        && world.persist_cost_per_mib.is_zero()
        && world.persist_stall_rate == 0.0
        && world.store_concurrency == 0
}

fn per_mib_cost(settings: &Settings, bytes: u64) -> Duration {
    settings
        .persist_cost_per_mib
        .mul_f64(bytes as f64 / (1u64 << 20) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_ends_at_once_only_in_a_world_without_waits_and_follows_the_world() {
        let zero = Settings {
            persist_latency: "0".parse().unwrap(),
            ..Settings::default()
        };
        let (store, _) = Store::open(&zero).unwrap();
        assert!(store.ends_at_once());
        let limited = Settings {
            store_concurrency: 8,
            ..zero.clone()
        };
        store.follow(&limited);
        assert!(
            !store.ends_at_once(),
            "a limit on writes at once can make one wait"
        );
        store.follow(&Settings::default());
        assert!(!store.ends_at_once(), "the default world has a latency");
        store.follow(&zero);
        assert!(store.ends_at_once());
    }
}
