//! The async runtime, watched: tokio's stable runtime metrics and a timer-lateness
//! canary, the two views that show work blocking the async workers.
//!
//! **The canary** is a task that sleeps [`CANARY_INTERVAL`] over and over and
//! records how much later than asked it woke (probe `canary-tick`, histogram
//! `isim_runtime_timer_lateness_seconds`). On an idle runtime it wakes at most one
//! timer tick late (tokio's timer turns every millisecond); when every worker is
//! stuck in synchronous work, nothing drives the timer and the canary wakes as
//! late as the longest stall. Its p99 jumps by orders of magnitude while its p50
//! barely moves: most ticks still find a free worker.
//!
//! **The metrics** are read at each `/stats` and `/metrics`: workers, alive tasks,
//! global queue depth and the workers' summed busy time, whose share of the
//! workers' time over the window is `busy_share` (stable since tokio 1.45; the
//! rest, such as blocking threads and poll histograms, needs `tokio_unstable`).
//!
//! Both are windowed: the figures cover the last [`WINDOW_SLOTS`] seconds, kept as
//! one HDR histogram per second, so a live fix shows within that time and `/stats`
//! needs no reset. Written here rather than with `tokio-metrics`, whose
//! `RuntimeMonitor` samples intervals a caller drives and needs `tokio_unstable`
//! for most of its figures; the canary and a ring of histograms are a few lines.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use simulator_api::RuntimeStats;
use tokio_util::sync::CancellationToken;

use super::events::Events;
use super::nanos;

/// How long the canary asks to sleep each time.
pub const CANARY_INTERVAL: Duration = Duration::from_millis(10);
/// One-second slots the window keeps (the current one included).
pub const WINDOW_SLOTS: usize = 5;
const SLOT: Duration = Duration::from_secs(1);
/// The latest lateness a histogram records, in microseconds; later is clamped.
const MAX_LATE_US: u64 = 3_600_000_000;

/// The canary's figures and the runtime's busy time, per second of the window.
#[derive(Debug, Default)]
pub struct RuntimeWatch {
    state: Mutex<Watch>,
}

#[derive(Debug, Default)]
struct Watch {
    /// When the canary started; `None` until then (tests without a server).
    started: Option<Instant>,
    ticks: u64,
    slots: VecDeque<Slot>,
}

#[derive(Debug)]
struct Slot {
    /// Whole seconds since the canary started.
    second: u64,
    /// The workers' summed busy time when the slot opened.
    busy_at_open: Duration,
    opened: Instant,
    late_us: Histogram<u64>,
}

impl RuntimeWatch {
    /// Starts the canary on the current runtime; it stops with `stop`.
    pub fn start(self: &Arc<Self>, stop: CancellationToken) {
        self.lock().started = Some(Instant::now());
        let watch = Arc::clone(self);
        tokio::spawn(async move {
            let mut seq = 0u64;
            loop {
                let asked = tokio::time::Instant::now();
                tokio::select! {
                    () = tokio::time::sleep(CANARY_INTERVAL) => {}
                    () = stop.cancelled() => return,
                }
                let late = asked.elapsed().saturating_sub(CANARY_INTERVAL);
                seq += 1;
                Events::canary_tick(seq, late, CANARY_INTERVAL);
                watch.record(late);
            }
        });
    }

    fn record(&self, late: Duration) {
        let mut watch = self.lock();
        watch.ticks += 1;
        if let Some(slot) = watch.current_slot() {
            let us = u64::try_from(late.as_micros()).unwrap_or(MAX_LATE_US);
            slot.late_us.saturating_record(us.clamp(1, MAX_LATE_US));
        }
    }

    /// The runtime now and the canary over the window. `work_in_flight` comes
    /// from the processor's counters.
    pub fn snapshot(&self, work_in_flight: u64) -> RuntimeStats {
        let metrics = tokio::runtime::Handle::try_current()
            .ok()
            .map(|h| h.metrics());
        let busy = metrics.as_ref().map_or(Duration::ZERO, busy_total);
        let workers = metrics.as_ref().map_or(0, |m| m.num_workers());
        let mut watch = self.lock();
        let ticks = watch.ticks;
        let running = watch.current_slot().is_some();
        let mut stats = RuntimeStats {
            workers,
            alive_tasks: metrics.as_ref().map_or(0, |m| m.num_alive_tasks()),
            global_queue_depth: metrics.as_ref().map_or(0, |m| m.global_queue_depth()),
            busy_ns: nanos(busy),
            work_in_flight,
            canary_ticks: ticks,
            ..RuntimeStats::default()
        };
        if !running {
            return stats;
        }
        let oldest = &watch.slots[0];
        let span = oldest.opened.elapsed().as_secs_f64();
        if span > 0.0 && workers > 0 {
            let busy_in_window = busy.saturating_sub(oldest.busy_at_open).as_secs_f64();
            stats.busy_share = (busy_in_window / (span * workers as f64)).min(1.0);
        }
        let mut late = watch.slots[0].late_us.clone();
        for slot in watch.slots.iter().skip(1) {
            // Same bounds and precision everywhere, so adding cannot fail.
            let _ = late.add(&slot.late_us);
        }
        stats.canary_interval_ms = CANARY_INTERVAL.as_millis() as u64;
        stats.window_ms = (span * 1000.0) as u64;
        stats.window_ticks = late.len();
        if !late.is_empty() {
            stats.late_p50_us = late.value_at_quantile(0.5);
            stats.late_p99_us = late.value_at_quantile(0.99);
            stats.late_max_us = late.max();
        }
        stats
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Watch> {
        // Nothing under this lock panics; a poisoned guard still holds valid figures.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Watch {
    /// The slot for this second, opened (and the oldest dropped) as time moves on;
    /// `None` before the canary starts.
    fn current_slot(&mut self) -> Option<&mut Slot> {
        let started = self.started?;
        let second = started.elapsed().as_secs();
        if self.slots.back().is_none_or(|s| s.second != second) {
            let busy_at_open = tokio::runtime::Handle::try_current()
                .map_or(Duration::ZERO, |h| busy_total(&h.metrics()));
            self.slots.push_back(Slot {
                second,
                busy_at_open,
                opened: started + SLOT * second as u32,
                // 1 us to an hour at 3 significant figures: the bounds are valid.
                late_us: Histogram::new_with_bounds(1, MAX_LATE_US, 3)
                    .unwrap_or_else(|_| unreachable!()),
            });
        }
        while self
            .slots
            .front()
            .is_some_and(|s| s.second + (WINDOW_SLOTS as u64) <= second)
        {
            self.slots.pop_front();
        }
        self.slots.back_mut()
    }
}

/// The workers' busy time, summed over workers.
fn busy_total(metrics: &tokio::runtime::RuntimeMetrics) -> Duration {
    (0..metrics.num_workers())
        .map(|w| metrics.worker_total_busy_duration(w))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stalled_worker_shows_in_the_canary_and_the_busy_share() {
        let watch = Arc::new(RuntimeWatch::default());
        let stop = CancellationToken::new();
        watch.start(stop.clone());
        // Both workers stuck for 60 ms each, now and then: the canary wakes late.
        for _ in 0..4 {
            let stalls: Vec<_> = (0..2)
                .map(|_| tokio::spawn(async { std::thread::sleep(Duration::from_millis(60)) }))
                .collect();
            for stall in stalls {
                stall.await.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let stats = watch.snapshot(0);
        stop.cancel();
        assert_eq!(stats.workers, 2);
        assert!(stats.canary_ticks >= 4 && stats.window_ticks == stats.canary_ticks);
        assert!(
            stats.late_max_us >= 20_000,
            "a 60 ms stall of every worker makes a tick at least 20 ms late: {stats:?}"
        );
        assert!(stats.busy_share > 0.2, "{stats:?}");
    }
}
