//! The kernel's own view of the system clock's synchronisation (Linux's
//! adjtimex: the unsynchronised flag and the maximum error), which `--start-at`
//! warns on when shards on other machines may start apart. Elsewhere there is
//! no such view, and no warning.

use std::time::Duration;

/// What the kernel says of the system clock's synchronisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockStatus {
    /// No time daemon has marked the clock synchronised (STA_UNSYNC).
    pub unsynchronised: bool,
    /// The kernel's bound on the clock's error.
    pub max_error: Duration,
}

/// The clock's status; `None` on an OS without adjtimex or when the kernel does not say.
pub fn status() -> Option<ClockStatus> {
    #[cfg(target_os = "linux")]
    {
        linux::status()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::time::Duration;

    use super::ClockStatus;

    /// adjtimex(2) with `modes` = 0 only reads the kernel's clock state. No crate
    /// wraps it safely (nix and rustix do not have it), hence one unsafe call.
    #[allow(unsafe_code)]
    pub fn status() -> Option<ClockStatus> {
        // SAFETY: `timex` is plain integers, for which all zeroes is a valid value
        // and, with modes = 0, the documented read-only query; the kernel writes
        // only into the struct we own for the duration of the call.
        let mut timex: libc::timex = unsafe { std::mem::zeroed() };
        let state = unsafe { libc::adjtimex(&mut timex) };
        if state < 0 {
            return None;
        }
        Some(ClockStatus {
            unsynchronised: state == libc::TIME_ERROR || timex.status & libc::STA_UNSYNC != 0,
            max_error: Duration::from_micros(u64::try_from(timex.maxerror).unwrap_or(0)),
        })
    }

    #[test]
    fn the_kernel_answers_for_its_clock() {
        assert!(status().is_some());
    }
}
