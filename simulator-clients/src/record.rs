//! What the clients observed, aggregated as it happens so memory stays flat
//! however long the run: counters, an HDR histogram of latency (1 ns to 1 h, 3
//! significant digits) and power-of-two buckets for a DTrace-style quantize.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::connection::{Failure, Reply};

const HIGHEST_NS: u64 = 3_600_000_000_000;

/// Failures by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Errors {
    pub connect: u64,
    pub timeout: u64,
    pub http_status: u64,
    pub io: u64,
}

impl Errors {
    pub fn total(&self) -> u64 {
        self.connect + self.timeout + self.http_status + self.io
    }
}

/// Everything counted so far.
#[derive(Debug, Clone)]
pub struct Tally {
    pub sent: u64,
    pub completed: u64,
    pub blocked: u64,
    pub errors: Errors,
    pub latency: Histogram<u64>,
    /// `pow2[k]` counts latencies in [2^k, 2^(k+1)) ns, as DTrace's quantize().
    pub pow2: [u64; 64],
}

impl Default for Tally {
    fn default() -> Self {
        Self {
            sent: 0,
            completed: 0,
            blocked: 0,
            errors: Errors::default(),
            latency: Histogram::new_with_bounds(1, HIGHEST_NS, 3)
                .expect("static histogram bounds are valid"),
            pow2: [0; 64],
        }
    }
}

impl Tally {
    fn record(&mut self, outcome: &Result<Reply, Failure>, latency: Duration) {
        self.sent += 1;
        match outcome {
            Ok(reply) => {
                self.completed += 1;
                self.blocked += u64::from(reply.blocked);
                let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
                self.latency.saturating_record(ns);
                self.pow2[63 - ns.leading_zeros() as usize] += 1;
            }
            Err(Failure::Connect) => self.errors.connect += 1,
            Err(Failure::Timeout) => self.errors.timeout += 1,
            Err(Failure::Status(_)) => self.errors.http_status += 1,
            Err(Failure::Io) => self.errors.io += 1,
        }
    }
}

/// The tally shared by every client. One lock: at ten thousand requests a second
/// it is held for well under a millisecond a second in total.
#[derive(Debug, Default)]
pub struct Recorder {
    tally: Mutex<Tally>,
}

impl Recorder {
    pub fn record(&self, outcome: &Result<Reply, Failure>, latency: Duration) {
        self.lock().record(outcome, latency);
    }

    /// Counters only, cheap enough for a progress bar.
    pub fn counts(&self) -> (u64, u64, u64, u64) {
        let t = self.lock();
        (t.sent, t.completed, t.blocked, t.errors.total())
    }

    pub fn tally(&self) -> Tally {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_buckets_are_powers_of_two() {
        let r = Recorder::default();
        let ok = Ok(Reply {
            id: 1,
            blocked: true,
        });
        r.record(&ok, Duration::from_nanos(4_194_304));
        r.record(&ok, Duration::from_nanos(8_388_607));
        r.record(&Err(Failure::Timeout), Duration::from_secs(1));
        let t = r.tally();
        assert_eq!(t.pow2[22], 2);
        assert_eq!(
            (t.sent, t.completed, t.blocked, t.errors.timeout),
            (3, 2, 2, 1)
        );
        assert_eq!(t.latency.len(), 2, "failures are not latencies");
    }
}
