//! The store: where an element ends up, and the faults injected around it.
//!
//! **Contract.** [`Store::persist`] stores one element and says whether it worked;
//! it fires no probes (persistence does, around it) and takes no permit. Two
//! stores: [`Store::Simulated`] sleeps for a latency drawn from `persist_latency`
//! (plus `persist_cost_per_mib` per MiB) and is the original simulator's store;
//! [`Store::Files`] really writes `DIR/<id>.bin` (`files.rs`). Around either,
//! `faults.rs` hangs a share of persists (a stuck disk, until persistence's
//! `persist_timeout` gives up) and fails a share on purpose. An enum, not a trait
//! object: two variants, matched in one place, no allocation per persist.

mod faults;
mod files;

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use simulator_api::Settings;

use crate::request_path::Element;

pub use files::{open_dir, FileStore};

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
}

/// Where elements are persisted.
#[derive(Debug, Clone)]
pub enum Store {
    Simulated,
    Files(FileStore),
}

impl Store {
    /// The store `settings` select, and the first free element id (a file store
    /// continues after the ids an earlier run left, so nothing is overwritten).
    pub fn open(settings: &Settings) -> io::Result<(Self, u64)> {
        match &settings.persist_dir {
            None => Ok((Store::Simulated, 1)),
            Some(dir) => {
                let first_id = open_dir(dir)?;
                let store = FileStore {
                    dir: dir.clone(),
                    fsync: settings.persist_fsync || settings.durable,
                };
                Ok((Store::Files(store), first_id))
            }
        }
    }

    /// Persists one element, faults included. `settings` are those in force when
    /// the request entered the path.
    pub async fn persist(
        &self,
        id: u64,
        element: &Element,
        settings: &Settings,
    ) -> Result<(), PersistError> {
        faults::around(settings, self.write(id, element, settings)).await
    }

    async fn write(
        &self,
        id: u64,
        element: &Element,
        settings: &Settings,
    ) -> Result<(), PersistError> {
        match self {
            Store::Simulated => {
                // rand::rng() is a temporary: the thread-local generator must not be
                // held across the await, where the task may move to another thread.
                let latency = settings.persist_latency.sample(&mut rand::rng());
                tokio::time::sleep(latency + per_mib_cost(settings, element.len())).await;
                Ok(())
            }
            Store::Files(files) => {
                files
                    .write(id, element)
                    .await
                    .map_err(|source| PersistError::Io {
                        path: files.path_of(id),
                        source,
                    })
            }
        }
    }
}

fn per_mib_cost(settings: &Settings, bytes: u64) -> Duration {
    settings
        .persist_cost_per_mib
        .mul_f64(bytes as f64 / (1u64 << 20) as f64)
}
