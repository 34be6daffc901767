//! What the check asks of a world's neighbour (exercise 14): that it keeps a
//! share of the work it does alone, so that killing it, stopping it or
//! starving it is no fix. Its rate alone is the server's measure of its first
//! second, taken as the world started and before the server listened
//! (`/stats.neighbour.alone_per_s`, `neighbour/beside.rs`): no fix applied
//! since can shrink that yardstick with the neighbour. Its rate under the load
//! is its work between the reads of `/stats` around the window over the time
//! between them.

use simulator_api::NeighbourStats;
use tokio::time::Instant;

/// A reading of the neighbour's work and when it was taken.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    pub work: u64,
    pub running: bool,
    pub at: Instant,
}

impl Reading {
    pub fn of(neighbour: Option<&NeighbourStats>) -> Option<Self> {
        neighbour.map(|n| Self {
            work: n.work,
            running: n.running,
            at: Instant::now(),
        })
    }

    /// Units of work a second from `earlier` to this reading; 0 once it stopped running.
    pub fn per_s_since(&self, earlier: &Reading) -> f64 {
        if !self.running {
            return 0.0;
        }
        let seconds = (self.at - earlier.at).as_secs_f64().max(1e-9);
        self.work.saturating_sub(earlier.work) as f64 / seconds
    }
}

/// The neighbour's work a second alone, as the server measured it when the
/// world started; `None` in a world without one (or a server too old to say).
pub fn alone_per_s(neighbour: Option<&NeighbourStats>) -> Option<f64> {
    neighbour
        .and_then(|n| n.alone_per_s)
        .map(|rate| rate as f64)
}

/// Its rate under the load over its rate alone: NaN (which fails any bound)
/// where it has no rate alone (none, or stopped before the window).
pub fn share(alone_per_s: Option<f64>, before: Option<Reading>, after: Option<Reading>) -> f64 {
    match (alone_per_s, before, after) {
        (Some(alone), Some(before), Some(after)) if alone > 0.0 => {
            after.per_s_since(&before) / alone
        }
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn the_share_is_the_rate_under_load_over_the_rate_alone_and_a_stopped_one_keeps_none() {
        let at = Instant::now();
        let reading = |work, running, after_s| Reading {
            work,
            running,
            at: at + Duration::from_secs(after_s),
        };
        let before = reading(1_000, true, 0);
        let after = reading(61_000, true, 10);
        assert_eq!(share(Some(10_000.0), Some(before), Some(after)), 0.6);
        // Killed in the window: its last report is its last work.
        let killed = reading(2_000, false, 10);
        assert_eq!(share(Some(10_000.0), Some(before), Some(killed)), 0.0);
        // Stopped (SIGSTOP) before the check: no rate alone.
        assert!(share(Some(0.0), Some(before), Some(after)).is_nan());
        // A world without one.
        assert!(share(None, None, None).is_nan());
    }
}
