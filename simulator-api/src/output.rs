//! Where a command's output goes, reserved before the work that makes it: a
//! path that cannot be written is refused at once, not after a run's minutes,
//! and nothing a run measured is lost to a typo in a flag. Every command that
//! writes a file takes it this way (`sim-clients --json`, `sweep --markdown`,
//! `profile --out`, ...).
//!
//! The file is opened without truncating it, so an earlier file stays as it
//! was until the new output replaces it; one this reservation created is
//! removed again if nothing is written to it. `-` is standard output.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// An output's place, held from before the work until it is written.
#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    /// `None` for standard output.
    file: Option<std::fs::File>,
    /// Made by this reservation, and so removed if never written.
    created: bool,
}

impl Output {
    /// Opens `path` for writing, or takes standard output for `-`.
    pub fn reserve(path: &Path) -> std::io::Result<Output> {
        if path.as_os_str() == "-" {
            return Ok(Output {
                path: path.to_owned(),
                file: None,
                created: false,
            });
        }
        let existed = path.exists();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        Ok(Output {
            path: path.to_owned(),
            file: Some(file),
            created: !existed,
        })
    }

    /// Where it goes, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it goes to standard output.
    pub fn is_stdout(&self) -> bool {
        self.file.is_none()
    }

    /// Replaces what the file held with `body`.
    pub fn write(mut self, body: &[u8]) -> std::io::Result<()> {
        let Some(mut file) = self.file.take() else {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(body)?;
            return stdout.flush();
        };
        file.set_len(0)?;
        file.write_all(body)?;
        self.created = false;
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_output_keeps_the_earlier_file_and_leaves_no_new_one() {
        let dir = std::env::temp_dir().join(format!("isim-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let earlier = dir.join("earlier.json");
        std::fs::write(&earlier, "earlier").unwrap();
        drop(Output::reserve(&earlier).unwrap());
        assert_eq!(std::fs::read_to_string(&earlier).unwrap(), "earlier");
        let fresh = dir.join("fresh.json");
        drop(Output::reserve(&fresh).unwrap());
        assert!(!fresh.exists());
        Output::reserve(&earlier).unwrap().write(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&earlier).unwrap(), "new");
        assert!(Output::reserve(&dir.join("missing/x.json")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
