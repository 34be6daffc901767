//! The driver's file descriptors: its limit, raised at start, and how many it
//! has open. Every connection is a descriptor, so `--n 1000` needs about a
//! thousand, while a Mac's shell starts with a soft limit of 256 and a Linux
//! desktop's with 1,024. Under such a limit nearly every connect failed with
//! EMFILE and the run still printed a report and exited 0; so the limit is raised
//! to the hard one (the `rlimit` crate, which also respects macOS's
//! `kern.maxfilesperproc`), and a plan that still cannot fit is refused before
//! any load (`load/mod.rs`). Elsewhere than Unix there is no such limit to read:
//! the answers are `None`.

/// The descriptor limit as the driver found it and left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// The soft limit now: what this process may open.
    pub soft: u64,
    /// The hard limit: as far as the soft one can be raised without privilege.
    pub hard: u64,
    /// The soft limit before [`raise`], where it was lower.
    pub raised_from: Option<u64>,
}

/// As far as [`raise`] goes where the hard limit is higher still (some containers
/// allow a billion): Linux's default `nr_open`, far above any plan's need, and
/// low enough that a child which closes every descriptor up to its limit one by
/// one (older tools do) does not spend minutes at it.
#[cfg(unix)]
pub const RAISE_AT_MOST: u64 = 1 << 20;

/// Raises the soft descriptor limit to the hard one (at most [`RAISE_AT_MOST`])
/// and says where it stands; `None` where the OS has no such limit or would not
/// say.
#[cfg(unix)]
pub fn raise() -> Option<Limit> {
    use rlimit::Resource;
    let (before, hard) = Resource::NOFILE.get().ok()?;
    // An error leaves the limit as it was, which the check then reads as it is.
    let soft = rlimit::increase_nofile_limit(RAISE_AT_MOST.max(before)).unwrap_or(before);
    Some(Limit {
        soft,
        hard,
        raised_from: (soft > before).then_some(before),
    })
}

#[cfg(not(unix))]
pub fn raise() -> Option<Limit> {
    None
}

/// How many descriptors the process has open now (its entries in `/dev/fd`,
/// which Linux and macOS both have, less the one the listing itself opens);
/// `None` where there is no such directory.
pub fn open_now() -> Option<u64> {
    let entries = std::fs::read_dir("/dev/fd").ok()?.count();
    Some(u64::try_from(entries.saturating_sub(1)).unwrap_or(u64::MAX))
}

/// Whether a failed connect failed for want of a descriptor, the process's
/// (EMFILE) or the whole system's (ENFILE), not for anything the server did.
#[cfg(unix)]
pub fn is_out_of_descriptors(err: &std::io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// Windows' sockets run out as WSAEMFILE.
#[cfg(windows)]
pub fn is_out_of_descriptors(err: &std::io::Error) -> bool {
    const WSAEMFILE: i32 = 10024;
    err.raw_os_error() == Some(WSAEMFILE)
}

#[cfg(not(any(unix, windows)))]
pub fn is_out_of_descriptors(_err: &std::io::Error) -> bool {
    false
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn emfile_and_enfile_are_the_driver_s_own_failures_and_a_refusal_is_not() {
        let os = std::io::Error::from_raw_os_error;
        assert!(is_out_of_descriptors(&os(libc::EMFILE)));
        assert!(is_out_of_descriptors(&os(libc::ENFILE)));
        assert!(!is_out_of_descriptors(&os(libc::ECONNREFUSED)));
        assert!(!is_out_of_descriptors(&std::io::Error::other(
            "no os error"
        )));
    }

    #[test]
    fn the_raised_limit_is_the_hard_one_and_descriptors_are_counted() {
        let limit = raise().expect("a Unix process has a descriptor limit");
        assert!(limit.soft <= limit.hard);
        assert!(open_now().expect("/dev/fd lists this process's descriptors") >= 3);
        // Other tests of this binary may open and close files meanwhile, so
        // only what this one holds is certain.
        let held: Vec<_> = (0..16)
            .map(|_| std::fs::File::open("/dev/null").unwrap())
            .collect();
        assert!(open_now().unwrap() >= 16 + 3);
        drop(held);
    }
}
