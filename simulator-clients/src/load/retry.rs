//! The retry budget a run's clients share (`--retry-budget P`): retries may be at
//! most P % of the first attempts sent over the last 10 s, as gRPC's retry
//! throttling and Finagle's RetryBudget bound them, so that when most attempts
//! fail, retries cannot multiply the load on a server already over capacity.
//!
//! Counted in one-second slots over a ring of ten: a retry is allowed while the
//! retries in the window stay within P % of the first attempts in it. Written by
//! hand because it is twenty lines over a mutex; the crates that rate-limit
//! (governor and the like) meter a fixed rate, not a share of another count.

use std::sync::{Mutex, MutexGuard};

use simulator_api::load::RETRY_BUDGET_WINDOW;
use tokio::time::Instant;

const SLOTS: usize = RETRY_BUDGET_WINDOW.as_secs() as usize;

/// First attempts and retries in one second of the window.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    firsts: u64,
    retries: u64,
}

#[derive(Debug)]
struct Window {
    /// The second (since `epoch`) the newest slot stands for.
    newest: u64,
    slots: [Slot; SLOTS],
}

/// See the module comment.
#[derive(Debug)]
pub struct RetryBudget {
    share: f64,
    epoch: Instant,
    window: Mutex<Window>,
}

impl RetryBudget {
    /// A budget of `percent` % of first attempts.
    pub fn new(percent: f64) -> Self {
        Self {
            share: percent / 100.0,
            epoch: Instant::now(),
            window: Mutex::new(Window {
                newest: 0,
                slots: [Slot::default(); SLOTS],
            }),
        }
    }

    /// A request's first attempt left at `now`.
    pub fn first_attempt(&self, now: Instant) {
        let (mut window, i) = self.slot_at(now);
        window.slots[i].firsts += 1;
    }

    /// Whether a retry may go at `now`; if so, it is counted.
    pub fn try_retry(&self, now: Instant) -> bool {
        let (mut window, i) = self.slot_at(now);
        let firsts: u64 = window.slots.iter().map(|s| s.firsts).sum();
        let retries: u64 = window.slots.iter().map(|s| s.retries).sum();
        let allowed = (retries + 1) as f64 <= self.share * firsts as f64;
        if allowed {
            window.slots[i].retries += 1;
        }
        allowed
    }

    /// The window moved on to `now`'s second, slots older than the window emptied,
    /// and the index of `now`'s slot.
    fn slot_at(&self, now: Instant) -> (MutexGuard<'_, Window>, usize) {
        let second = now.saturating_duration_since(self.epoch).as_secs();
        let mut window = self.window.lock().unwrap_or_else(|p| p.into_inner());
        if second > window.newest {
            let stale = (second - window.newest).min(SLOTS as u64);
            for k in 1..=stale {
                let index = ((window.newest + k) % SLOTS as u64) as usize;
                window.slots[index] = Slot::default();
            }
            window.newest = second;
        }
        (window, (second % SLOTS as u64) as usize)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn retries_stay_within_their_share_of_first_attempts_over_the_window() {
        let budget = RetryBudget::new(10.0);
        let now = Instant::now();
        assert!(
            !budget.try_retry(now),
            "nothing sent yet, nothing to retry on"
        );
        for _ in 0..100 {
            budget.first_attempt(now);
        }
        let allowed = (0..50).filter(|_| budget.try_retry(now)).count();
        assert_eq!(allowed, 10, "10 % of 100 first attempts");
        // Five seconds on, the same 100 first attempts are still in the window.
        assert!(!budget.try_retry(now + Duration::from_secs(5)));
        // Eleven seconds on they have left it, with their retries.
        let later = now + Duration::from_secs(11);
        assert!(!budget.try_retry(later));
        for _ in 0..20 {
            budget.first_attempt(later);
        }
        assert_eq!((0..10).filter(|_| budget.try_retry(later)).count(), 2);
    }
}
