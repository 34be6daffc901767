//! `--precise-pacing`: waits that end within tens of microseconds of their due
//! time instead of at tokio's next millisecond tick.
//!
//! tokio's timer wheel has 1 ms slots, so a send due at 10.3 ms leaves at about
//! 11.3 ms: fine for the original's 1 s think time, but at 20,000 sends a second
//! (one every 50 us) the driver's own lateness would swamp what it measures.
//! Each client here owns a Linux timerfd, armed with nanosecond precision for
//! its next due time and awaited through tokio's reactor like a socket: the
//! kernel's high-resolution timer wakes it (within the timer slack, 50 us by
//! default), with no spinning. The cost is a file descriptor per client and two
//! system calls per wait (arm, read), measured in `docs/performance.md`; hence a
//! flag rather than the default. rustix wraps timerfd safely; tokio's `AsyncFd`
//! does the waiting (its registration is this module's one unsafe call).

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::time::Timespec;
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
};
use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

/// One client's precise timer.
#[derive(Debug)]
pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    /// tokio's `AsyncFd::register` is unsafe since tokio 1.52 (I/O safety): the
    /// caller promises the descriptor stays valid and unreplaced while registered.
    #[allow(unsafe_code)]
    pub fn new() -> io::Result<Self> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // SAFETY: `fd` is a fresh, valid timerfd that the AsyncFd owns from here
        // on; nothing else holds it, replaces it or closes it while it is
        // registered (it closes when the AsyncFd drops, after deregistering).
        let fd = unsafe { AsyncFd::register(fd)? };
        Ok(Self { fd })
    }

    /// Waits until `due` (at once if it has passed).
    pub async fn sleep_until(&mut self, due: Instant) -> io::Result<()> {
        let Some(left) = due
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
        else {
            return Ok(());
        };
        arm(&self.fd, left)?;
        loop {
            let mut ready = self.fd.readable().await?;
            let mut expirations = [0u8; 8];
            match ready.try_io(|fd| Ok(rustix::io::read(fd.get_ref(), &mut expirations)?)) {
                Ok(result) => return result.map(|_| ()),
                // Woken without an expiration to read: wait again.
                Err(_would_block) => continue,
            }
        }
    }
}

fn arm(fd: &AsyncFd<OwnedFd>, after: Duration) -> io::Result<()> {
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let value = Timespec {
        tv_sec: i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(after.subsec_nanos()),
    };
    timerfd_settime(
        fd.get_ref(),
        TimerfdTimerFlags::empty(),
        &Itimerspec {
            it_interval: zero,
            it_value: value,
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Not a timing target (those live in scripts/bench/pacing.py): only that a
    /// wait never ends early, passes at once when due, and can be reused.
    #[tokio::test]
    async fn a_wait_never_ends_before_its_due_time() {
        let mut timer = PreciseTimer::new().unwrap();
        for us in [1, 200, 1_500, 3_000] {
            let start = Instant::now();
            let due = start + Duration::from_micros(us);
            timer.sleep_until(due).await.unwrap();
            assert!(Instant::now() >= due, "{us} us");
        }
        let start = Instant::now();
        timer.sleep_until(start).await.unwrap();
        timer
            .sleep_until(start - Duration::from_millis(1))
            .await
            .unwrap();
    }
}
