//! The file store: each element really written to `DIR/<id>.bin`, so real I/O
//! variance (page cache, fsync, a slow disk) can be studied with the same probes.
//!
//! A file appears under its final name only when it is complete: it is written as
//! `DIR/.<id>.tmp` and renamed, and with fsync the directory is synced after the
//! rename, so after a crash every `<id>.bin` holds its whole element. Files are
//! kept; a long run needs disk for every element it stores.

use std::io;
use std::path::{Path, PathBuf};

use tokio::io::AsyncWriteExt;

use crate::request_path::Element;

/// Where elements go, and whether each is fsync'd before its persist counts as done.
#[derive(Debug, Clone)]
pub struct FileStore {
    pub dir: PathBuf,
    pub fsync: bool,
}

/// Synthetic elements are written in chunks of this many zero bytes, so a 1 GiB
/// element costs 1 GiB of I/O but only 64 KiB of memory.
const ZERO_CHUNK: usize = 64 * 1024;
static ZEROES: [u8; ZERO_CHUNK] = [0; ZERO_CHUNK];

impl FileStore {
    pub async fn write(&self, id: u64, element: &Element) -> io::Result<()> {
        write_file(&self.dir, id, element, self.fsync).await
    }

    pub fn path_of(&self, id: u64) -> PathBuf {
        self.dir.join(format!("{id}.bin"))
    }
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
        let store = FileStore {
            dir: dir.path().to_owned(),
            fsync: true,
        };
        let element = Element::Bytes(bytes::Bytes::from_static(b"element"));
        store.write(5, &element).await.unwrap();
        assert_eq!(std::fs::read(dir.path().join("5.bin")).unwrap(), b"element");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["5.bin"]);
    }
}
