//! The world's memory limit (`memory_limit`), set at start: the container's
//! limit on what the server may allocate. On Linux it is `RLIMIT_DATA`, which
//! counts every private writable mapping (the heap's, the threads' stacks), so
//! it follows the resident memory of a server whose heap grows (measured here:
//! VmData 17 MiB idle and 22 after 4.4 MiB kept, RSS 15 and 21). Past it an
//! allocation fails and Rust aborts the process ("memory allocation of N bytes
//! failed"), as a container's OOM kill ends one. A cgroup's `memory.max` would
//! be the container's own, but needs root or a delegated cgroup on every
//! laptop; an rlimit needs neither. macOS accepts the limit and does not
//! enforce it; other systems have none.

/// The limit as set, for the banner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimit {
    pub bytes: u64,
}

impl std::fmt::Display for MemoryLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "memory: up to {} MiB (the world's memory_limit, `prlimit --data`)",
            self.bytes >> 20
        )
    }
}

/// Sets the soft limit on data memory to `bytes` (0: leaves it as it is),
/// capped at the hard limit; `None` when nothing was set.
#[cfg(unix)]
pub fn set_limit(bytes: u64) -> Option<MemoryLimit> {
    if bytes == 0 {
        return None;
    }
    let (_, hard) = rlimit::Resource::DATA.get().ok()?;
    let bytes = bytes.min(hard);
    match rlimit::Resource::DATA.set(bytes, hard) {
        Ok(()) => Some(MemoryLimit { bytes }),
        Err(err) => {
            tracing::warn!(%err, bytes, "cannot set the world's memory_limit");
            None
        }
    }
}

#[cfg(not(unix))]
pub fn set_limit(_bytes: u64) -> Option<MemoryLimit> {
    None
}

/// The soft limit on data memory now; `None` without one.
#[cfg(unix)]
pub fn now() -> Option<u64> {
    let (soft, _) = rlimit::Resource::DATA.get().ok()?;
    (soft != rlimit::INFINITY).then_some(soft)
}

#[cfg(not(unix))]
pub fn now() -> Option<u64> {
    None
}
