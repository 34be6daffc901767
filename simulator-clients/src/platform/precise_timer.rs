//! `--precise-pacing`: waits that end within tens of microseconds of their due
//! time instead of at tokio's next millisecond tick, at about one wake-up of the
//! driver per send.
//!
//! tokio's timer wheel has 1 ms slots, so a send due at 10.3 ms leaves at about
//! 11.3 ms, and every send due in the same millisecond leaves in one burst: fine
//! for the original's 1 s think time, but at 20,000 sends a second (one every
//! 50 us) the driver's own lateness would swamp what it measures, and its bursts
//! queue at the server (docs/performance.md measured the server's p99 10x
//! higher under them).
//!
//! Here one Linux timerfd serves every client of a run: armed with nanosecond
//! precision for the earliest wait, awaited through tokio's reactor like a
//! socket (the kernel's high-resolution timer wakes it; no spinning). A wait is
//! allowed to end up to a slack after its due time (`--precise-pacing=SLACK`;
//! 50 us by default, Linux's default timer slack for a thread at normal
//! priority, `prctl(PR_GET_TIMERSLACK)`: the lateness the kernel itself allows
//! any sleeping program, cyclictest's included), and the timer is armed for
//! that latest moment: a driver that wakes anyway in between (a reply arrived)
//! [`nudge`](SharedPacer::nudge)s, and every wait already due ends in that same
//! wake-up. A timer per client, the first version, woke the driver twice a send
//! (once for the timer, once for the reply), and each wake-up costs a few
//! microseconds on a VM: at 20,000 sends a second with the default slack, five
//! sends in six now leave in a reply's wake-up, 1.2 wake-ups a send instead of
//! 2, for about 0.85x the CPU (1.1 s per 100,000 sends instead of 1.3;
//! docs/performance.md). rustix wraps timerfd
//! safely; tokio's `AsyncFd` does the waiting (its registration is this
//! module's one unsafe call).

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rustix::time::Timespec;
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
};
use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

/// The run's one precise timer and the waits on it; dropping it stops the task
/// that watches the timer.
#[derive(Debug)]
pub struct SharedPacer {
    inner: Arc<Inner>,
    watcher: tokio::task::AbortHandle,
}

#[derive(Debug)]
struct Inner {
    fd: AsyncFd<OwnedFd>,
    slack: Duration,
    waits: Mutex<Waits>,
}

#[derive(Debug, Default)]
struct Waits {
    /// Every pending wait by due time (ties by number), with its waker.
    by_due: BTreeMap<(Instant, u64), Waker>,
    next_number: u64,
    /// When the timer fires next; `None` while disarmed.
    armed_for: Option<Instant>,
}

impl SharedPacer {
    /// A pacer whose waits may end up to `slack` late, with the task that
    /// watches its timer. Must be called inside a tokio runtime.
    ///
    /// tokio's `AsyncFd::register` is unsafe since tokio 1.52 (I/O safety): the
    /// caller promises the descriptor stays valid and unreplaced while registered.
    #[allow(unsafe_code)]
    pub fn start(slack: Duration) -> io::Result<Self> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // SAFETY: `fd` is a fresh, valid timerfd that the AsyncFd owns from here
        // on; nothing else holds it, replaces it or closes it while it is
        // registered (it closes when the AsyncFd drops, after deregistering).
        let fd = unsafe { AsyncFd::register(fd)? };
        let inner = Arc::new(Inner {
            fd,
            slack,
            waits: Mutex::new(Waits::default()),
        });
        let watcher = tokio::spawn(watch(Arc::clone(&inner))).abort_handle();
        Ok(Self { inner, watcher })
    }

    /// Waits until `due` (at once if it has passed), ending at most the slack
    /// after it.
    pub fn sleep_until(&self, due: Instant) -> PacedSleep {
        PacedSleep {
            pacer: Arc::clone(&self.inner),
            due,
            key: None,
        }
    }

    /// Ends every wait that is due by now: called by whoever woke the driver
    /// anyway (a reply), so those sends leave in this wake-up, not the timer's.
    pub fn nudge(&self) {
        self.inner.nudge();
    }

    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.inner.lock().by_due.len()
    }
}

impl Drop for SharedPacer {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

impl Inner {
    fn nudge(&self) {
        let now = Instant::now();
        let mut waits = self.lock();
        if self.release_due(&mut waits, now) {
            self.rearm(&mut waits, now);
        }
    }

    /// Wakes every wait due by `now`; whether there was one.
    fn release_due(&self, waits: &mut Waits, now: Instant) -> bool {
        let mut released = false;
        while let Some(entry) = waits.by_due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            entry.remove().wake();
            released = true;
        }
        released
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waits> {
        self.waits.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Arms the timer for the earliest wait's latest moment, if that is not
    /// already when it fires.
    fn rearm(&self, waits: &mut Waits, now: Instant) {
        let fire = waits
            .by_due
            .first_key_value()
            .map(|((due, _), _)| *due + self.slack);
        if fire == waits.armed_for {
            return;
        }
        let after = match fire {
            // A zero time would disarm it: fire at once instead.
            Some(at) => at
                .saturating_duration_since(now)
                .max(Duration::from_nanos(1)),
            None => Duration::ZERO,
        };
        if arm(&self.fd, after).is_ok() {
            waits.armed_for = fire;
        }
    }
}

/// The task that turns the timer's firing into a nudge, until the pacer is
/// dropped (which aborts it).
async fn watch(inner: Arc<Inner>) {
    loop {
        // The expiration count is never read: re-arming resets it, and tokio's
        // readiness is cleared by hand, a system call less per firing.
        match inner.fd.readable().await {
            Ok(mut ready) => ready.clear_ready(),
            Err(_) => return,
        }
        // Fired: disarmed until re-armed for the waits still ahead, whether or
        // not one was due (a readiness left over from an earlier arming).
        let now = Instant::now();
        let mut waits = inner.lock();
        waits.armed_for = None;
        inner.release_due(&mut waits, now);
        inner.rearm(&mut waits, now);
    }
}

/// One wait on a [`SharedPacer`].
#[derive(Debug)]
pub struct PacedSleep {
    pacer: Arc<Inner>,
    due: Instant,
    /// Its place among the pacer's waits, once registered.
    key: Option<(Instant, u64)>,
}

impl Future for PacedSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let now = Instant::now();
        // Every field is Unpin: the sleep may be taken apart in place.
        let Self { pacer, due, key } = self.get_mut();
        let due = *due;
        let mut waits = pacer.lock();
        if now >= due {
            if let Some(key) = key.take() {
                waits.by_due.remove(&key);
            }
            return Poll::Ready(());
        }
        let key = *key.get_or_insert_with(|| {
            let key = (due, waits.next_number);
            waits.next_number += 1;
            key
        });
        waits.by_due.insert(key, cx.waker().clone());
        let fire = due + pacer.slack;
        if waits.armed_for.is_none_or(|armed| fire < armed) {
            pacer.rearm(&mut waits, now);
        }
        Poll::Pending
    }
}

impl Drop for PacedSleep {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.pacer.lock().by_due.remove(&key);
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

    const SLACK: Duration = Duration::from_micros(50);

    /// Not a timing target (those live in tools/bench/pacing.py): only that a
    /// wait never ends early, passes at once when due, ends by its timer when
    /// nobody nudges, and ends on a nudge once due.
    #[tokio::test]
    async fn a_wait_never_ends_before_its_due_time() {
        let pacer = SharedPacer::start(SLACK).unwrap();
        for us in [1, 200, 1_500, 3_000] {
            let start = Instant::now();
            let due = start + Duration::from_micros(us);
            pacer.sleep_until(due).await;
            assert!(Instant::now() >= due, "{us} us");
        }
        let start = Instant::now();
        pacer.sleep_until(start).await;
        pacer.sleep_until(start - Duration::from_millis(1)).await;
    }

    #[tokio::test]
    async fn many_waits_given_out_of_order_each_end_after_their_due_time() {
        let pacer = Arc::new(SharedPacer::start(SLACK).unwrap());
        let start = Instant::now();
        let mut waits = tokio::task::JoinSet::new();
        for i in (0..40u64).rev() {
            let pacer = Arc::clone(&pacer);
            let due = start + Duration::from_micros(100 * i);
            waits.spawn(async move {
                pacer.sleep_until(due).await;
                assert!(Instant::now() >= due);
            });
        }
        while let Some(done) = waits.join_next().await {
            done.unwrap();
        }
        assert_eq!(pacer.waiting(), 0);
    }

    #[tokio::test]
    async fn a_nudge_ends_a_due_wait_before_its_slack_is_out() {
        // A slack far longer than the test: only a nudge can end the wait.
        let pacer = Arc::new(SharedPacer::start(Duration::from_secs(3600)).unwrap());
        // Due far enough ahead that the wait is registered before it: with 2 ms, a
        // test thread descheduled by a build beside polled the wait first after its
        // due time, when it ends at once without waiting (issue 41's sixth run).
        let due = Instant::now() + Duration::from_millis(100);
        let wait = tokio::spawn({
            let pacer = Arc::clone(&pacer);
            async move { pacer.sleep_until(due).await }
        });
        tokio::task::yield_now().await;
        assert_eq!(pacer.waiting(), 1, "the wait began before its due time");
        tokio::time::sleep_until(due + Duration::from_millis(1)).await;
        assert!(!wait.is_finished(), "the timer waits out the slack");
        pacer.nudge();
        tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .expect("the nudge ended it")
            .unwrap();
    }

    #[tokio::test]
    async fn a_dropped_wait_leaves_nothing_behind() {
        let pacer = SharedPacer::start(SLACK).unwrap();
        let far = Instant::now() + Duration::from_secs(60);
        let wait = pacer.sleep_until(far);
        assert!(futures::FutureExt::now_or_never(wait).is_none());
        assert_eq!(pacer.waiting(), 0);
    }
}
