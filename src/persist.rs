//! Persistence: where an element goes after the request has let go of it.
//!
//! Two stores. [`Store::Simulated`] sleeps for a latency drawn from the configured
//! distribution (plus an optional per-MiB cost) and is the default, the original
//! simulator's store. [`Store::Files`] really writes each element to
//! `DIR/<id>.bin`, so real I/O variance (page cache, fsync, a slow disk) can be
//! studied with the same probes. Both fail a configured share of persists on
//! purpose. Files are kept; a long run needs disk for every element it stores.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use rand::Rng;
use tokio::io::AsyncWriteExt;

use crate::config::Tunables;

/// What a request asks to store: real bytes, or just a size (`{"size": N}`) so a
/// client can simulate large elements without sending them.
#[derive(Debug, Clone)]
pub enum Element {
    Bytes(Bytes),
    Synthetic(u64),
}

impl Element {
    pub fn len(&self) -> u64 {
        match self {
            Element::Bytes(b) => b.len() as u64,
            Element::Synthetic(n) => *n,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a persist failed. The data processor ignores the outcome, as the original
/// did; it is counted and traced (`persist-done` arg1 = 0).
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("injected failure (persist_error_rate)")]
    Injected,
    #[error("writing {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// Where elements are persisted.
#[derive(Debug, Clone)]
pub enum Store {
    Simulated,
    Files { dir: PathBuf, fsync: bool },
}

/// Synthetic elements are written in chunks of this many zero bytes, so a 1 GiB
/// element costs 1 GiB of I/O but only 64 KiB of memory.
const ZERO_CHUNK: usize = 64 * 1024;
static ZEROES: [u8; ZERO_CHUNK] = [0; ZERO_CHUNK];

impl Store {
    /// Persists one element. `tunables` is the configuration as it was when the
    /// request took its permit.
    pub async fn persist(
        &self,
        id: u64,
        element: &Element,
        tunables: &Tunables,
    ) -> Result<(), PersistError> {
        match self {
            Store::Simulated => {
                // rand::rng() is a temporary: the thread-local generator must not be
                // held across the await, where the task may move to another thread.
                let latency = tunables.persist_latency.sample(&mut rand::rng());
                tokio::time::sleep(latency + per_mib_cost(tunables, element.len())).await;
            }
            Store::Files { dir, fsync } => {
                let path = dir.join(format!("{id}.bin"));
                if let Err(source) = write_file(&path, element, *fsync).await {
                    return Err(PersistError::Io { path, source });
                }
            }
        }
        // Validation keeps the rate within 0..=1, where random_bool cannot panic.
        if rand::rng().random_bool(tunables.persist_error_rate) {
            return Err(PersistError::Injected);
        }
        Ok(())
    }
}

fn per_mib_cost(tunables: &Tunables, bytes: u64) -> Duration {
    tunables
        .persist_cost_per_mib
        .mul_f64(bytes as f64 / (1u64 << 20) as f64)
}

async fn write_file(path: &std::path::Path, element: &Element, fsync: bool) -> io::Result<()> {
    let mut file = tokio::fs::File::create(path).await?;
    match element {
        Element::Bytes(bytes) => file.write_all(bytes).await?,
        Element::Synthetic(n) => {
            let mut left = *n;
            while left > 0 {
                let chunk = left.min(ZERO_CHUNK as u64) as usize;
                file.write_all(&ZEROES[..chunk]).await?;
                left -= chunk as u64;
            }
        }
    }
    file.flush().await?;
    if fsync {
        file.sync_all().await?;
    }
    Ok(())
}
