//! Persistence: where an element goes after the request has let go of it.
//!
//! Two stores. [`Store::Simulated`] sleeps for a latency drawn from the configured
//! distribution (plus an optional per-MiB cost) and is the default, the original
//! simulator's store. [`Store::Files`] really writes each element to
//! `DIR/<id>.bin`, so real I/O variance (page cache, fsync, a slow disk) can be
//! studied with the same probes. Both fail a configured share of persists on
//! purpose, and hang a configured share (a stuck disk) until the processor's
//! `persist_timeout` gives up on them. Files are kept; a long run needs disk for
//! every element it stores.
//!
//! A file appears under its final name only when it is complete: it is written as
//! `DIR/.<id>.tmp` and renamed, and with fsync the directory is synced after the
//! rename, so after a crash every `<id>.bin` holds its whole element.

use std::io;
use std::path::{Path, PathBuf};
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
    #[error("the persist did not finish within {0:?} (persist_timeout)")]
    TimedOut(Duration),
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
        if rand::rng().random_bool(tunables.persist_stall_rate) {
            // A hung store: only the caller's timeout (or shutdown) ends this.
            std::future::pending::<()>().await;
        }
        match self {
            Store::Simulated => {
                // rand::rng() is a temporary: the thread-local generator must not be
                // held across the await, where the task may move to another thread.
                let latency = tunables.persist_latency.sample(&mut rand::rng());
                tokio::time::sleep(latency + per_mib_cost(tunables, element.len())).await;
            }
            Store::Files { dir, fsync } => {
                let path = dir.join(format!("{id}.bin"));
                if let Err(source) = write_file(dir, id, element, *fsync).await {
                    return Err(PersistError::Io { path, source });
                }
            }
        }
        // Validation keeps the rates within 0..=1, where random_bool cannot panic.
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

async fn write_file(dir: &Path, id: u64, element: &Element, fsync: bool) -> io::Result<()> {
    let partial = dir.join(format!(".{id}.tmp"));
    let mut file = tokio::fs::File::create(&partial).await?;
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
    drop(file);
    tokio::fs::rename(&partial, dir.join(format!("{id}.bin"))).await?;
    if fsync {
        // The rename is only durable once the directory entry is.
        let dir = dir.to_owned();
        tokio::task::spawn_blocking(move || std::fs::File::open(dir)?.sync_all()).await??;
    }
    Ok(())
}

/// Prepares `dir` for a new run: creates it, removes the partial files a crash left
/// behind, and returns the first free id, so a restarted server never overwrites an
/// element an earlier run stored (and acknowledged).
pub fn open_dir(dir: &Path) -> io::Result<u64> {
    std::fs::create_dir_all(dir)?;
    let mut highest = 0;
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') && name.ends_with(".tmp") {
            std::fs::remove_file(dir.join(name))?;
        } else if let Some(id) = name
            .strip_suffix(".bin")
            .and_then(|n| n.parse::<u64>().ok())
        {
            highest = highest.max(id);
        }
    }
    Ok(highest + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reopened_dir_continues_after_the_highest_id_and_drops_partials() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(open_dir(dir.path()).unwrap(), 1);
        for name in ["7.bin", "12.bin", ".13.tmp", "notes.txt", "x.bin"] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        assert_eq!(open_dir(dir.path()).unwrap(), 13);
        assert!(!dir.path().join(".13.tmp").exists());
        assert!(dir.path().join("notes.txt").exists());
    }

    #[tokio::test]
    async fn files_appear_whole_under_their_final_name() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::Files {
            dir: dir.path().to_owned(),
            fsync: true,
        };
        let element = Element::Bytes(Bytes::from_static(b"element"));
        store
            .persist(5, &element, &Tunables::default())
            .await
            .unwrap();
        assert_eq!(std::fs::read(dir.path().join("5.bin")).unwrap(), b"element");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["5.bin"]);
    }
}
