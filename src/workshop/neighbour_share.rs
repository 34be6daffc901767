//! What the check asks of a world's neighbour (exercise 14): that it keeps a
//! share of the work it does alone, so that killing it or stopping it is no
//! fix. Its rate alone is measured in the same check, just before the window,
//! over [`ALONE`] with the server idle (the check has made sure no other load
//! runs), so a laptop's speed and a neighbour pinned to fewer CPUs by the fix
//! itself (`taskset`) are both in it; its rate under the load is its work
//! between the reads of `/stats` around the window over the time between them.

use std::time::Duration;

use simulator_api::NeighbourStats;
use simulator_clients::endpoints;
use tokio::time::Instant;

/// How long the neighbour's rate alone is measured: its reports come every
/// 25 ms, so a rate over a second is within 2.5 % of the truth.
pub const ALONE: Duration = Duration::from_secs(1);

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

/// The neighbour's work a second with the server idle, over [`ALONE`]; `None`
/// in a world without one.
pub async fn alone_per_s(target: &str) -> anyhow::Result<Option<f64>> {
    let Some(first) = Reading::of(endpoints::stats(target).await?.neighbour.as_ref()) else {
        return Ok(None);
    };
    tokio::time::sleep(ALONE).await;
    let last = Reading::of(endpoints::stats(target).await?.neighbour.as_ref());
    Ok(last.map(|last| last.per_s_since(&first)))
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
