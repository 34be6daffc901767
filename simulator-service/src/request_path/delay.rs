//! Simulated delays (a network traverse, a persist) that last, on average, what
//! they are configured to.
//!
//! tokio's timer works in whole milliseconds: a sleep ends at the first tick at
//! or after its deadline, and the wake-up lands later still, so measured here a
//! 1.5 ms traverse lasted about 2.5 ms and a 60 ms persist about 61 ms (the
//! default scenario's plateau came out at 7,855/min where 8 permits / 60 ms
//! give 8,000). Spinning to the exact instant would cost a core. Instead each
//! sleep asks to wake early by the timer's recent overshoot, an exponentially
//! weighted mean of how late wake-ups have been against what was asked: single
//! delays still carry the timer's jitter (about +-0.5 ms), but their mean, and
//! so every rate and plateau built on it, is the configured one. Delays shorter
//! than the overshoot cannot be shortened further; they last about one tick.
//!
//! The calibration is per process: every server in it shares tokio's timer
//! behaviour. On paused time (the tests') the timer is exact for whole
//! milliseconds, the overshoot stays 0 and nothing changes.
//!
//! **Deadlines on the serving path** ([`within`]): `tokio::time::timeout`
//! makes a timer entry for every future it wraps, though most (a body already
//! read, a persist of no latency) are done at their first poll.
//!
//! **The original's timer on purpose** (`timer_tick`). The original simulator did
//! not calibrate: every sleep ended on tokio's next 1 ms tick, and woke in the
//! same turn of the timer wheel as every other sleep of that tick. With a tick, a
//! delay ends on the first tick of a process-wide grid at or after its deadline,
//! uncalibrated, so it lasts on average about a tick more than asked, as the
//! original's did: the default scenario's plateau is then the seed's (7,761/min
//! measured against the seed's 7,742; 135 clients block 99.8 %, the seed 99.9 %),
//! while every other scenario's delays stay exact.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::error::Elapsed;
use tokio::time::Instant;

/// The weight of the newest observation, as a shift: 1/32. About 100 sleeps to
/// settle; quick enough for a run, slow enough that one late wake-up on a busy
/// machine moves it little.
const WEIGHT_SHIFT: u32 = 5;
/// The most a sleep is shortened by: beyond a few ticks an overshoot is a
/// stalled runtime, not the timer's rounding, and must show.
const MAX_BIAS: Duration = Duration::from_millis(2);

/// The timer's recent overshoot: how much later than asked sleeps wake.
#[derive(Debug)]
pub struct Calibration {
    overshoot_ns: AtomicU64,
}

impl Calibration {
    pub const fn new() -> Self {
        Self {
            overshoot_ns: AtomicU64::new(0),
        }
    }

    /// How much earlier than its deadline a sleep should ask to wake.
    pub fn bias(&self) -> Duration {
        Duration::from_nanos(self.overshoot_ns.load(Ordering::Relaxed)).min(MAX_BIAS)
    }

    /// A wake-up came `late` after the instant it asked for. Racing updates may
    /// lose one observation now and then; the mean does not need them all. A
    /// wake-up later than [`MAX_BIAS`] counts as that much: a stalled runtime
    /// must not drag the correction of every later sleep.
    pub fn observe(&self, late: Duration) {
        let late = u64::try_from(late.min(MAX_BIAS).as_nanos()).unwrap_or(u64::MAX);
        let old = self.overshoot_ns.load(Ordering::Relaxed);
        let new = old - (old >> WEIGHT_SHIFT) + (late >> WEIGHT_SHIFT);
        self.overshoot_ns.store(new, Ordering::Relaxed);
    }
}

impl Default for Calibration {
    fn default() -> Self {
        Self::new()
    }
}

static CALIBRATION: Calibration = Calibration::new();

/// How much later than asked this process's sleeps have been waking lately.
pub fn overshoot() -> Duration {
    CALIBRATION.bias()
}

/// Where the grid of `timer_tick` starts: the first delay with a tick.
static TICK_EPOCH: OnceLock<Instant> = OnceLock::new();

/// The first instant on the grid of `tick` at or after `at` (`at` itself for 0).
fn on_tick(at: Instant, tick: Duration) -> Instant {
    if tick.is_zero() {
        return at;
    }
    let epoch = *TICK_EPOCH.get_or_init(Instant::now);
    let since = at.saturating_duration_since(epoch).as_nanos();
    let tick_ns = tick.as_nanos();
    let ticks = since.div_ceil(tick_ns);
    epoch + Duration::from_nanos(u64::try_from(ticks * tick_ns).unwrap_or(u64::MAX))
}

/// Waits `delay`, on average exactly, or until the next `tick` after it (see the
/// module comment); no wait at all for zero, which tokio would round up to a tick.
pub async fn sleep(delay: Duration, tick: Duration) {
    if delay.is_zero() {
        return;
    }
    let start = Instant::now();
    if !tick.is_zero() {
        // The original's timer, uncalibrated: every delay that ends in the same
        // tick wakes in the same turn of tokio's timer wheel, together.
        tokio::time::sleep_until(on_tick(start + delay, tick)).await;
        return;
    }
    let wake = (start + delay)
        .checked_sub(CALIBRATION.bias())
        .filter(|w| *w > start)
        .unwrap_or(start);
    tokio::time::sleep_until(wake).await;
    CALIBRATION.observe(Instant::now().saturating_duration_since(wake));
}

/// `future` within `limit`, as `tokio::time::timeout` gives it, except that a
/// future done at its first poll never touches the timer: making and dropping
/// a timer entry (the runtime's handle taken, the clock read, the entry torn
/// down) was ~1 us of a request's ~33 us on a 2-vCPU AMD EPYC VM, for a
/// timeout that fires for almost none (issue 62). So the limit counts from
/// the first poll that finds the future waiting, microseconds after tokio's
/// would (a clock read fewer for those that never wait). A struct, not an
/// `async fn`: an async fn that pins its
/// argument keeps the argument's slot and the pinned one, twice the future's
/// size, and the persist's is kilobytes, moved into its box once a request.
pub fn within<F: Future>(limit: Duration, future: F) -> Within<F> {
    Within {
        future,
        limit,
        timer: None,
    }
}

pin_project_lite::pin_project! {
    /// The future [`within`] returns.
    pub struct Within<F> {
        #[pin]
        future: F,
        limit: Duration,
        #[pin]
        timer: Option<tokio::time::Timeout<std::future::Pending<()>>>,
    }
}

impl<F: Future> Future for Within<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        if this.timer.is_none() {
            let limit = *this.limit;
            this.timer
                .set(Some(tokio::time::timeout(limit, std::future::pending())));
        }
        match this.timer.as_pin_mut().map(|timer| timer.poll(cx)) {
            Some(Poll::Ready(Err(elapsed))) => Poll::Ready(Err(elapsed)),
            _ => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn within_answers_a_ready_future_and_times_out_a_late_one_at_its_deadline() {
        assert_eq!(within(Duration::from_secs(1), async { 7 }).await, Ok(7));
        let late = async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            7
        };
        let started = Instant::now();
        assert!(within(Duration::from_secs(1), late).await.is_err());
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        let in_time = async {
            tokio::time::sleep(Duration::from_millis(999)).await;
            8
        };
        assert_eq!(within(Duration::from_secs(1), in_time).await, Ok(8));
    }

    #[test]
    fn within_holds_its_future_once() {
        let big = async {
            let kept = [1u8; 4096];
            tokio::task::yield_now().await;
            kept[4095]
        };
        let size = std::mem::size_of_val(&big);
        let limited = within(Duration::from_secs(1), big);
        assert!(
            std::mem::size_of_val(&limited) < size + 512,
            "{size} bytes became {}",
            std::mem::size_of_val(&limited)
        );
    }

    #[test]
    fn the_bias_follows_the_timers_overshoot_and_is_capped() {
        let c = Calibration::new();
        assert_eq!(c.bias(), Duration::ZERO);
        for _ in 0..400 {
            c.observe(Duration::from_micros(1_000));
        }
        let bias = c.bias().as_micros();
        assert!((980..=1_000).contains(&bias), "{bias} us");
        // One stall moves it by 1/32 of at most MAX_BIAS - bias.
        c.observe(Duration::from_millis(33));
        assert!(c.bias() < Duration::from_micros(1_040), "{:?}", c.bias());
        for _ in 0..400 {
            c.observe(Duration::from_secs(1));
        }
        assert!(c.bias() > Duration::from_micros(1_990) && c.bias() <= MAX_BIAS);
    }

    #[tokio::test(start_paused = true)]
    async fn on_exact_time_a_delay_lasts_exactly_its_length() {
        for ms in [1, 60, 250] {
            let start = Instant::now();
            sleep(Duration::from_millis(ms), Duration::ZERO).await;
            assert_eq!(start.elapsed(), Duration::from_millis(ms));
        }
        let start = Instant::now();
        sleep(Duration::ZERO, Duration::ZERO).await;
        assert_eq!(start.elapsed(), Duration::ZERO, "zero is no wait");
    }

    #[test]
    fn the_grid_rounds_up_to_the_next_tick() {
        let epoch = *TICK_EPOCH.get_or_init(Instant::now);
        let tick = Duration::from_millis(10);
        let at = |ms: u64| epoch + Duration::from_micros(ms);
        assert_eq!(on_tick(at(0), tick), at(0));
        assert_eq!(on_tick(at(1), tick), at(10_000));
        assert_eq!(on_tick(at(10_000), tick), at(10_000));
        assert_eq!(on_tick(at(10_001), tick), at(20_000));
        assert_eq!(on_tick(at(10_001), Duration::ZERO), at(10_001));
    }

    #[tokio::test(start_paused = true)]
    async fn with_a_tick_delays_that_end_in_one_tick_wake_together() {
        let tick = Duration::from_millis(1);
        // Two delays that start 300 us apart and differ by 200 us end together,
        // at least as late as asked and within about a tick of it.
        let first = Instant::now();
        let a = tokio::spawn(async move {
            sleep(Duration::from_micros(1_500), tick).await;
            Instant::now()
        });
        tokio::time::advance(Duration::from_micros(300)).await;
        let b = tokio::spawn(async move {
            sleep(Duration::from_micros(1_300), tick).await;
            Instant::now()
        });
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        assert_eq!(a, b, "released in the same tick");
        let after = a - first;
        assert!(
            after >= Duration::from_micros(1_600) && after <= Duration::from_micros(3_600),
            "{after:?}"
        );
    }
}
