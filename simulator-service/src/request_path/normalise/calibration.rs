//! Calibration: how wide a fixed-width record's note must be for `scan-forward`
//! to spend `record_padding_cpu` on it on this machine.
//!
//! A scenario states the cost in CPU time, as `work_cpu` does (`work/calibration.rs`
//! says why: a room's laptops differ three-fold), and the width follows from it:
//! `scan-forward` costs about k·w² for a note padded to w columns, so the server
//! measures k once, on a note of [`SAMPLE_WIDTH`] columns, in the measuring
//! thread's CPU time (fastest of [`SAMPLE_RUNS`], after a run to warm up), and
//! every width is the square root of the asked cost over k. About 4 × 10 ms of CPU
//! here, on the first call.

use std::sync::OnceLock;
use std::time::Duration;

use cpu_time::ThreadTime;
use simulator_api::record;

use super::trim::trim_end_scanning_forward;

/// The note's width measured: large enough that the quadratic term is all of
/// the cost, small enough to be quick.
const SAMPLE_WIDTH: usize = 8_000;
const SAMPLE_RUNS: usize = 3;
/// The widest note sized: 16 MiB of spaces, hours of `scan-forward` anywhere.
const MAX_WIDTH: usize = 16 << 20;

/// CPU seconds `scan-forward` spends per column² of note, here.
static SECONDS_PER_COLUMN2: OnceLock<f64> = OnceLock::new();

/// The note width that makes `scan-forward` cost `cpu` here (80 columns for 0).
/// The first call with a cost measures the machine.
pub fn note_width(cpu: Duration) -> usize {
    if cpu.is_zero() {
        return record::DEFAULT_NOTE_WIDTH;
    }
    let k = *SECONDS_PER_COLUMN2.get_or_init(measure);
    ((cpu.as_secs_f64() / k).sqrt().round() as usize).clamp(record::DEFAULT_NOTE_WIDTH, MAX_WIDTH)
}

fn measure() -> f64 {
    let text = record::fixed_width(0, SAMPLE_WIDTH);
    std::hint::black_box(trim_end_scanning_forward(text.as_bytes()));
    let fastest = (0..SAMPLE_RUNS)
        .map(|_| {
            let start = ThreadTime::now();
            std::hint::black_box(trim_end_scanning_forward(std::hint::black_box(
                text.as_bytes(),
            )));
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
        .max(Duration::from_micros(1));
    fastest.as_secs_f64() / (SAMPLE_WIDTH * SAMPLE_WIDTH) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fastest of three scans of a note `width` columns wide, as
    /// [`measure`] takes its sample.
    fn cpu_of(width: usize) -> Duration {
        let text = record::fixed_width(1, width);
        (0..3)
            .map(|_| {
                let start = ThreadTime::now();
                std::hint::black_box(trim_end_scanning_forward(text.as_bytes()));
                start.elapsed()
            })
            .min()
            .unwrap()
    }

    #[test]
    fn a_sized_record_costs_the_cpu_it_was_asked_to() {
        let want = Duration::from_millis(30);
        let width = note_width(want);
        assert!(width > record::DEFAULT_NOTE_WIDTH, "{width}");
        // As work/calibration.rs: a measurement and the record it sizes, back to
        // back, a few times, each the fastest of three. One calibration for all
        // the tries (the first version) failed in the quick tier: taken in a
        // quiet moment, it sized records that then ran in busy ones, each try
        // 1.35-1.66x what was asked (reproduced beside two busy loops on the
        // 2-vCPU EPYC kind). A wrong size (a slip in the square root, a sample
        // that is not the scan's text) misses in every pair.
        let ratios: Vec<f64> = (0..5)
            .map(|_| {
                let k = measure();
                let width = ((want.as_secs_f64() / k).sqrt().round()) as usize;
                cpu_of(width).as_secs_f64() / want.as_secs_f64()
            })
            .collect();
        assert!(
            ratios.iter().any(|r| (0.75..1.33).contains(r)),
            "a record sized to cost {want:?} cost these multiples of it: {ratios:.2?}"
        );
        assert_eq!(note_width(Duration::ZERO), record::DEFAULT_NOTE_WIDTH);
    }
}
