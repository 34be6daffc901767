//! Pacing the CPU work to a share of the server's CPU quota (`work_budget`), so
//! the kernel never has to throttle the process for it.
//!
//! Under a CFS quota the kernel lets a cgroup spend `quota` of CPU per `period`;
//! once it has, every thread of it waits for the next period: the timers, the
//! health check, the replies of requests long finished. A pool with more threads
//! than the quota spends a period's quota in a burst. Pacing moves that wait
//! into the service, where it costs only the work that waits: a work starts only
//! while the works started in the last `period` and this one come to at most
//! `share x quota` of CPU (each counted at its calibrated cost, `work_cpu`), so
//! no `period`-long window, the kernel's included wherever its periods begin,
//! holds more of the work than that, and the rest of the quota is left to the
//! rest of the server. A work larger than the whole budget runs alone in an
//! empty window rather than never. Waiters go first come, first served.
//!
//! This is the shape of CPU admission control in CockroachDB (elastic work is
//! granted CPU-time tokens so that foreground latency holds) applied to one pool.
//! Written here: it is a sliding window of start times, not a rate, which no
//! limiter in the project's set (tower's rate limit counts requests per
//! interval and resets at its edges) bounds in every window.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::platform::cgroup::CpuMax;
use crate::request_path::network::CutShort;

/// The works started in the last window, and the line of works waiting to start.
#[derive(Debug)]
pub struct Budget {
    /// CPU the works started in any `window` may cost together.
    allowed: Duration,
    window: Duration,
    started: Mutex<VecDeque<(Instant, Duration)>>,
    /// Held by the work whose turn is next while it waits for room.
    line: tokio::sync::Mutex<()>,
}

impl Budget {
    /// `share` of `limit`'s quota per its period; `None` without a quota or a share.
    pub fn new(share: f64, limit: Option<CpuMax>) -> Option<Self> {
        let limit = limit?;
        let quota = Duration::from_micros(limit.quota_us?);
        (share > 0.0 && limit.period_us > 0).then(|| Self {
            allowed: quota.mul_f64(share),
            window: Duration::from_micros(limit.period_us),
            started: Mutex::new(VecDeque::new()),
            line: tokio::sync::Mutex::new(()),
        })
    }

    /// Waits until a work costing `cost` may start, and counts it as started;
    /// `abandon` (shutdown) ends the wait with nothing counted.
    pub async fn wait_turn(
        &self,
        cost: Duration,
        abandon: &CancellationToken,
    ) -> Result<(), CutShort> {
        let _first_in_line = tokio::select! {
            turn = self.line.lock() => turn,
            () = abandon.cancelled() => return Err(CutShort),
        };
        loop {
            let room_at = self.start_or_wait(cost, Instant::now());
            let Some(room_at) = room_at else {
                return Ok(());
            };
            tokio::select! {
                () = tokio::time::sleep_until(room_at) => {}
                () = abandon.cancelled() => return Err(CutShort),
            }
        }
    }

    /// At `now`: counts the work as started and returns `None` when it fits the
    /// window, else when the oldest start leaves it.
    fn start_or_wait(&self, cost: Duration, now: Instant) -> Option<Instant> {
        // A poisoned lock only means another request panicked mid-update of a
        // list of start times; the list is still a list.
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        while started
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) >= self.window)
        {
            started.pop_front();
        }
        let used: Duration = started.iter().map(|(_, c)| *c).sum();
        if started.is_empty() || used + cost <= self.allowed {
            started.push_back((now, cost));
            return None;
        }
        started.front().map(|(at, _)| *at + self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn half_core() -> Option<CpuMax> {
        Some(CpuMax {
            quota_us: Some(50_000),
            period_us: 100_000,
        })
    }

    #[test]
    fn no_quota_or_no_share_is_no_pacing() {
        assert!(Budget::new(0.8, None).is_none());
        assert!(Budget::new(0.0, half_core()).is_none());
        let unlimited = CpuMax {
            quota_us: None,
            period_us: 100_000,
        };
        assert!(Budget::new(0.8, Some(unlimited)).is_none());
        let b = Budget::new(0.8, half_core()).unwrap();
        assert_eq!(b.allowed, Duration::from_millis(40));
    }

    /// Ten works of 10 ms at once under 40 ms a 100 ms window: four start now,
    /// four when the first leave the window, two after that; no 100 ms window
    /// ever holds more than 40 ms of them.
    #[tokio::test(start_paused = true)]
    async fn works_start_only_while_every_window_has_room() {
        let budget = Arc::new(Budget::new(0.8, half_core()).unwrap());
        let t0 = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..10 {
            let budget = Arc::clone(&budget);
            set.spawn(async move {
                budget
                    .wait_turn(Duration::from_millis(10), &CancellationToken::new())
                    .await
                    .unwrap();
                Instant::now().duration_since(t0)
            });
        }
        let mut starts = set.join_all().await;
        starts.sort();
        let ms: Vec<u128> = starts.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, [0, 0, 0, 0, 100, 100, 100, 100, 200, 200]);
        for (i, first) in starts.iter().enumerate() {
            let in_window = starts[i..]
                .iter()
                .filter(|s| **s - *first < Duration::from_millis(100))
                .count();
            assert!(
                in_window <= 4,
                "{in_window} works start within 100 ms of {first:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_work_larger_than_the_budget_runs_alone_and_shutdown_ends_a_wait() {
        let budget = Budget::new(0.8, half_core()).unwrap();
        let never = CancellationToken::new();
        budget
            .wait_turn(Duration::from_millis(70), &never)
            .await
            .unwrap();
        let stop = CancellationToken::new();
        stop.cancel();
        assert!(budget
            .wait_turn(Duration::from_millis(1), &stop)
            .await
            .is_err());
        let t0 = Instant::now();
        budget
            .wait_turn(Duration::from_millis(70), &never)
            .await
            .unwrap();
        assert_eq!(Instant::now() - t0, Duration::from_millis(100));
    }
}
