//! The server's file descriptor limit, raised at start (or set to the
//! world's, `descriptor_limit`): every connection it
//! accepts and every file it persists to is a descriptor, and a shell's soft
//! limit (256 on macOS, 1,024 on a Linux desktop) is far below what a room's
//! load opens, while the hard limit is usually far above it. The `rlimit` crate
//! does the raising (macOS's `kern.maxfilesperproc` respected); elsewhere than
//! Unix there is no such limit and nothing is said. Here too: how many are open
//! now, and whether an error says they have run out (EMFILE, ENFILE).

/// As far as the soft limit is raised where the hard limit is higher still:
/// Linux's default `nr_open`. Children (a tracer, a profiler) inherit it, and
/// one that closes every descriptor up to its limit one by one stays quick.
#[cfg(unix)]
const AT_MOST: u64 = 1 << 20;

/// The soft limit after raising it, and what it was where that was lower;
/// or the world's (`descriptor_limit`), as set at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptors {
    pub limit: u64,
    pub raised_from: Option<u64>,
    /// Set to the world's `descriptor_limit`, not raised.
    pub the_worlds: bool,
}

impl std::fmt::Display for Descriptors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "file descriptors: up to {}", self.limit)?;
        match (self.the_worlds, self.raised_from) {
            (true, _) => write!(f, " (the world's descriptor_limit, `ulimit -n`)"),
            (false, Some(from)) => write!(f, " (raised from {from}, `ulimit -n`)"),
            (false, None) => write!(f, " (`ulimit -n`)"),
        }
    }
}

/// The limit the world asks for (`descriptor_limit`, capped at the hard
/// limit), or with 0 the soft limit raised ([`raise_limit`]).
#[cfg(unix)]
pub fn set_limit(world: u64) -> Option<Descriptors> {
    if world == 0 {
        return raise_limit();
    }
    let (was, hard) = rlimit::Resource::NOFILE.get().ok()?;
    let limit = world.min(hard);
    if let Err(err) = rlimit::Resource::NOFILE.set(limit, hard) {
        // The limit as found: the exercise then meets its cliff elsewhere.
        tracing::warn!(%err, limit, was, "cannot set the world's descriptor_limit");
        return Some(Descriptors {
            limit: was,
            raised_from: None,
            the_worlds: false,
        });
    }
    Some(Descriptors {
        limit,
        raised_from: None,
        the_worlds: true,
    })
}

#[cfg(not(unix))]
pub fn set_limit(_world: u64) -> Option<Descriptors> {
    None
}

/// Raises the soft limit toward the hard one; `None` where the OS has none.
#[cfg(unix)]
pub fn raise_limit() -> Option<Descriptors> {
    let (was, _hard) = rlimit::Resource::NOFILE.get().ok()?;
    let limit = rlimit::increase_nofile_limit(AT_MOST.max(was)).unwrap_or(was);
    Some(Descriptors {
        limit,
        raised_from: (limit > was).then_some(was),
        the_worlds: false,
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

/// The descriptors open now and the soft limit, for `/stats`; `None` where
/// the OS has no limit. Reading the count opens a directory, which fails at
/// the limit with EMFILE: then every descriptor below the limit is taken, and
/// the limit is the count.
#[cfg(unix)]
pub fn now() -> Option<simulator_api::DescriptorCounts> {
    let limit = soft_limit()?;
    let dir = if cfg!(target_os = "linux") {
        "/proc/self/fd"
    } else {
        "/dev/fd"
    };
    let open = match std::fs::read_dir(dir) {
        // The directory's own descriptor is one of the entries.
        Ok(entries) => (entries.count() as u64).saturating_sub(1),
        Err(err) if exhausted(&err) => limit,
        Err(_) => return None,
    };
    Some(simulator_api::DescriptorCounts { open, limit })
}

#[cfg(not(unix))]
pub fn now() -> Option<simulator_api::DescriptorCounts> {
    None
}

/// The soft limit now, without opening anything (a failed accept asks it).
#[cfg(unix)]
pub fn soft_limit() -> Option<u64> {
    rlimit::Resource::NOFILE.get().ok().map(|(soft, _)| soft)
}

#[cfg(not(unix))]
pub fn soft_limit() -> Option<u64> {
    None
}

/// Whether `err` says the descriptors have run out: the process's (EMFILE) or
/// the machine's (ENFILE). Windows' sockets have no per-process table to run
/// out of in the same way (WSAEMFILE is a provider's limit), so it says no.
pub fn exhausted(err: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
    }
    #[cfg(not(unix))]
    {
        let _ = err;
        false
    }
}

/// The error accept(2) gives at the limit (EMFILE), for the tests of what
/// meets it.
#[cfg(test)]
pub fn out_of_descriptors_error() -> std::io::Error {
    #[cfg(unix)]
    {
        std::io::Error::from_raw_os_error(libc::EMFILE)
    }
    #[cfg(not(unix))]
    {
        std::io::Error::other("Too many open files")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_line_says_the_limit_and_where_it_was_raised_from() {
        let raised = Descriptors {
            limit: 4096,
            raised_from: Some(256),
            the_worlds: false,
        };
        assert_eq!(
            raised.to_string(),
            "file descriptors: up to 4096 (raised from 256, `ulimit -n`)"
        );
        let as_found = Descriptors {
            limit: 1024,
            raised_from: None,
            the_worlds: false,
        };
        assert_eq!(
            as_found.to_string(),
            "file descriptors: up to 1024 (`ulimit -n`)"
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_count_follows_descriptors_opened_and_closed() {
        let before = now().expect("a count on Unix");
        let files: Vec<_> = (0..200)
            .map(|_| std::fs::File::open("/dev/null").unwrap())
            .collect();
        let during = now().unwrap();
        drop(files);
        let after = now().unwrap();
        // nextest runs each test in a process of its own; `cargo test`'s other
        // threads may open or close a few meanwhile, hence the ten either way.
        let opened = during.open.abs_diff(before.open + 200);
        assert!(opened <= 10, "{before:?} then {during:?}");
        assert!(
            after.open.abs_diff(before.open) <= 10,
            "{before:?} then {after:?}"
        );
        assert!(during.open <= during.limit);
    }

    #[test]
    fn out_of_descriptors_is_emfile_or_enfile_and_nothing_else() {
        #[cfg(unix)]
        {
            assert!(exhausted(&std::io::Error::from_raw_os_error(libc::EMFILE)));
            assert!(exhausted(&std::io::Error::from_raw_os_error(libc::ENFILE)));
        }
        assert!(!exhausted(&std::io::Error::from(
            std::io::ErrorKind::ConnectionAborted
        )));
    }
}
