//! A sweep split over several machines (`sweep --shard K/N --start-at TIME`):
//! every shard runs its share of each step's clients, and the shards meet at
//! each step by the clock alone. Step i starts at TIME + i x (duration +
//! `--step-gap`). The gap's first half is the last step's drain, after which
//! every shard reads the server's counters; in its last quarter shard 0 alone
//! settles the server, applies the step's configuration and zeroes its
//! counters; the others wait.
//!
//! The server counts every shard's requests, so each shard's table of server
//! figures (throughput, blocked share, CPU) is the whole load's, counted from
//! shard 0's reset; the latency columns are the shard's own clients'.

use std::time::{Duration, SystemTime};

use crate::plan::shard::ShardInfo;

/// How the shards of a sweep meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSchedule {
    pub shard: ShardInfo,
    /// When the first step starts.
    pub start_at: SystemTime,
    /// The pause between one step's end and the next step's start.
    pub step_gap: Duration,
}

impl ShardSchedule {
    /// The shard that changes the server: settles, configures, resets, restores.
    pub fn leads(&self) -> bool {
        self.shard.index == 0
    }

    /// When step `i` (counted over every phase, client count and repeat) starts,
    /// for steps of `duration`.
    pub fn step_start(&self, i: u32, duration: Duration) -> SystemTime {
        self.start_at + (duration + self.step_gap) * i
    }

    /// How long a step's run waits for late replies: half the gap, so the run
    /// is over before shard 0 settles the server for the next step.
    pub fn max_drain(&self) -> Duration {
        self.step_gap / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::shard::ShardSource;

    #[test]
    fn steps_follow_each_other_a_gap_apart_and_shard_0_leads() {
        let start_at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let together = |index| ShardSchedule {
            shard: ShardInfo {
                index,
                count: 3,
                source: ShardSource::Flag,
            },
            start_at,
            step_gap: Duration::from_secs(4),
        };
        let second = Duration::from_secs(1);
        assert_eq!(together(2).step_start(0, 20 * second), start_at);
        assert_eq!(
            together(2).step_start(3, 20 * second),
            start_at + 72 * second
        );
        assert!(together(0).leads() && !together(1).leads());
        assert_eq!(together(1).max_drain(), 2 * second);
    }
}
