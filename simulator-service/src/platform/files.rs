//! Files only their owner may read (the room's state and a seat's token hold
//! secrets): mode 0600 from their creation where the OS has Unix permissions;
//! elsewhere (Windows) a plain file, which the user's profile directory already
//! keeps from other users.

use std::path::Path;

/// Writes `bytes` to a new or truncated file at `path` that only its owner can
/// read, and syncs it.
#[cfg(unix)]
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(not(unix))]
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

/// Whether the file at `path` is its owner's alone (`None`: the OS has no such
/// mode to read).
pub fn is_private(path: &Path) -> std::io::Result<Option<bool>> {
    let _metadata = std::fs::metadata(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Ok(Some(_metadata.permissions().mode() & 0o077 == 0))
    }
    #[cfg(not(unix))]
    Ok(None)
}
