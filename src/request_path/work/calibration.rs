//! Calibration: how many bytes of zstd cost a given CPU time on this machine.
//!
//! A scenario states its work in CPU time (`work_cpu = "35ms"`), because a room's
//! laptops differ three-fold in single-core speed: 8 MiB of zstd cost 35 ms on the
//! laptop that wrote blocking-runtime and 86 ms on a 2-vCPU cloud VM, where one
//! work at a time could no longer keep up with the ticket's load and every figure
//! of the exercise moved. So the server measures, once per process and before any
//! request needs it, how fast this machine compresses the work's own text, and
//! turns each `work_cpu` into bytes.
//!
//! The measurement counts the measuring thread's CPU time (`cpu-time`'s
//! `ThreadTime`), not wall time: on a busy machine, or under a CPU quota, the
//! thread waits for a core more, but the CPU each byte costs is the same, and
//! that is what the work must cost. It compresses [`SAMPLE_BYTES`] a few times and
//! keeps the fastest run (the least disturbed by caches and frequency changes),
//! after one run to warm up. About [`SAMPLE_RUNS`] + 1 times 15-40 ms of CPU here.

use std::sync::OnceLock;
use std::time::Duration;

use cpu_time::ThreadTime;
use serde::Serialize;

/// Bytes compressed per measuring run: large enough that zstd's window and the
/// caches behave as for the scenarios' works (megabytes), small enough to be quick.
const SAMPLE_BYTES: usize = 4 << 20;
/// Measuring runs; the fastest counts.
const SAMPLE_RUNS: usize = 3;

/// This machine's zstd throughput on the work's text.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Calibration {
    /// Bytes compressed per CPU second.
    pub bytes_per_cpu_s: f64,
    /// What one measuring run took: CPU time for [`SAMPLE_BYTES`].
    pub sample_cpu: Duration,
}

impl Calibration {
    /// Bytes of work that cost `cpu` of CPU time here (at least 1).
    pub fn bytes_for(&self, cpu: Duration) -> u64 {
        (self.bytes_per_cpu_s * cpu.as_secs_f64()).round().max(1.0) as u64
    }
}

static MEASURED: OnceLock<Calibration> = OnceLock::new();

/// The calibration, measured on the first call (on the caller's thread) and kept
/// for the life of the process.
pub fn calibration() -> Calibration {
    *MEASURED.get_or_init(measure)
}

/// The calibration if it has been measured already.
pub fn measured() -> Option<Calibration> {
    MEASURED.get().copied()
}

fn measure() -> Calibration {
    super::compress(SAMPLE_BYTES);
    let fastest = (0..SAMPLE_RUNS)
        .map(|_| {
            let start = ThreadTime::now();
            std::hint::black_box(super::compress(SAMPLE_BYTES));
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
        // A clock too coarse to see the run must not divide by zero.
        .max(Duration::from_micros(1));
    Calibration {
        bytes_per_cpu_s: SAMPLE_BYTES as f64 / fastest.as_secs_f64(),
        sample_cpu: fastest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fastest of three runs of `bytes`, as the calibration measures.
    fn cpu_of(bytes: usize) -> Duration {
        (0..3)
            .map(|_| {
                let start = ThreadTime::now();
                std::hint::black_box(super::super::compress(bytes));
                start.elapsed()
            })
            .min()
            .unwrap()
    }

    #[test]
    fn a_calibrated_work_costs_the_cpu_it_was_asked_to() {
        let want = Duration::from_millis(20);
        // A calibration and the work it sizes, measured back to back, a few
        // times. One pair can be a CI run's noise: the CPU time a byte costs
        // doubles while the other hyperthread of the core is busy (CI saw 0.49x
        // with the suite running beside it), and a calibration taken in a quiet
        // moment sizes a work that then runs in a busy one. A wrong size (a
        // slip in `bytes_for`, a sample that is not the work's text) misses in
        // every pair.
        let ratios: Vec<f64> = (0..5)
            .map(|_| {
                let c = measure();
                assert!(c.bytes_per_cpu_s > 1e6, "{c:?}");
                let bytes = c.bytes_for(want) as usize;
                cpu_of(bytes).as_secs_f64() / want.as_secs_f64()
            })
            .collect();
        assert!(
            ratios.iter().any(|r| (0.75..1.33).contains(r)),
            "a work asked to cost {want:?} cost these multiples of it: {ratios:.2?}"
        );
        assert_eq!(calibration().bytes_for(Duration::ZERO), 1);
    }
}
