//! The server's file descriptor limit, raised at start: every connection it
//! accepts and every file it persists to is a descriptor, and a shell's soft
//! limit (256 on macOS, 1,024 on a Linux desktop) is far below what a room's
//! load opens, while the hard limit is usually far above it. The `rlimit` crate
//! does the raising (macOS's `kern.maxfilesperproc` respected); elsewhere than
//! Unix there is no such limit and nothing is said.

/// As far as the soft limit is raised where the hard limit is higher still:
/// Linux's default `nr_open`. Children (a tracer, a profiler) inherit it, and
/// one that closes every descriptor up to its limit one by one stays quick.
#[cfg(unix)]
const AT_MOST: u64 = 1 << 20;

/// The soft limit after raising it, and what it was where that was lower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptors {
    pub limit: u64,
    pub raised_from: Option<u64>,
}

impl std::fmt::Display for Descriptors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "file descriptors: up to {}", self.limit)?;
        match self.raised_from {
            Some(from) => write!(f, " (raised from {from}, `ulimit -n`)"),
            None => write!(f, " (`ulimit -n`)"),
        }
    }
}

/// Raises the soft limit toward the hard one; `None` where the OS has none.
#[cfg(unix)]
pub fn raise_limit() -> Option<Descriptors> {
    let (was, _hard) = rlimit::Resource::NOFILE.get().ok()?;
    let limit = rlimit::increase_nofile_limit(AT_MOST.max(was)).unwrap_or(was);
    Some(Descriptors {
        limit,
        raised_from: (limit > was).then_some(was),
    })
}

#[cfg(not(unix))]
pub fn raise_limit() -> Option<Descriptors> {
    None
}

/// As far as [`raise_limit`] takes the soft limit here: what `doctor` says a
/// run may open.
#[cfg(unix)]
pub fn hard_limit() -> Option<u64> {
    let (_, hard) = rlimit::Resource::NOFILE.get().ok()?;
    Some(hard.min(AT_MOST))
}

#[cfg(not(unix))]
pub fn hard_limit() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_line_says_the_limit_and_where_it_was_raised_from() {
        let raised = Descriptors {
            limit: 4096,
            raised_from: Some(256),
        };
        assert_eq!(
            raised.to_string(),
            "file descriptors: up to 4096 (raised from 256, `ulimit -n`)"
        );
        let as_found = Descriptors {
            limit: 1024,
            raised_from: None,
        };
        assert_eq!(
            as_found.to_string(),
            "file descriptors: up to 1024 (`ulimit -n`)"
        );
    }
}
