//! The server's resident memory and how fast it grows (`/stats.memory`,
//! `/metrics`, the live view): one reading a second, taken by the live view's
//! sampler, which runs for as long as the server does, and the least-squares
//! slope of the last [`TREND_S`] of them.
//!
//! Process-wide, as the reading is: where several servers share a process
//! (tests, the demo's second server), they show the same figure.

use std::collections::VecDeque;
use std::sync::Mutex;

use simulator_api::MemoryCounts;

use crate::platform::process_figures;

/// The seconds of readings the slope is taken over.
pub const TREND_S: f64 = 10.0;

/// The readings: seconds since the first, and bytes.
static READINGS: Mutex<VecDeque<(f64, u64)>> = Mutex::new(VecDeque::new());

/// Reads the resident memory now and keeps it as the reading at `t_s`
/// (seconds on the caller's clock); drops the readings older than the trend.
pub fn note(t_s: f64) {
    let Some(bytes) = process_figures::read().resident_memory_bytes else {
        return;
    };
    let mut readings = READINGS.lock().unwrap_or_else(|p| p.into_inner());
    // A clock that went back (a second server's sampler in the same process)
    // starts the trend again rather than mixing two clocks.
    if readings.back().is_some_and(|&(last, _)| last > t_s) {
        readings.clear();
    }
    readings.push_back((t_s, bytes));
    while readings.front().is_some_and(|&(t, _)| t < t_s - TREND_S) {
        readings.pop_front();
    }
}

/// The resident memory now, and its growth a second over the last readings.
pub fn now() -> Option<MemoryCounts> {
    let bytes = process_figures::read().resident_memory_bytes?;
    let readings = READINGS.lock().unwrap_or_else(|p| p.into_inner());
    let points: Vec<(f64, u64)> = readings.iter().copied().collect();
    Some(MemoryCounts {
        resident_bytes: bytes,
        resident_growth_bytes_per_s: Some(slope(&points)).filter(|s| s.is_finite()),
        limit_bytes: crate::platform::memory_limit::now(),
    })
}

/// The least-squares slope a second of `points`; NaN with fewer than three.
pub fn slope(points: &[(f64, u64)]) -> f64 {
    if points.len() < 3 {
        return f64::NAN;
    }
    let count = points.len() as f64;
    let mean_t = points.iter().map(|(t, _)| t).sum::<f64>() / count;
    let mean_n = points.iter().map(|&(_, n)| n as f64).sum::<f64>() / count;
    let (mut covariance, mut variance) = (0.0, 0.0);
    for &(t, n) in points {
        covariance += (t - mean_t) * (n as f64 - mean_n);
        variance += (t - mean_t) * (t - mean_t);
    }
    match variance {
        0.0 => f64::NAN,
        v => covariance / v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_is_the_growth_a_second() {
        let line: Vec<(f64, u64)> = (0..10).map(|t| (t as f64, 1000 + 250 * t)).collect();
        assert!((slope(&line) - 250.0).abs() < 1e-9);
        let flat: Vec<(f64, u64)> = (0..10).map(|t| (t as f64, 1000)).collect();
        assert_eq!(slope(&flat), 0.0);
        assert!(slope(&line[..2]).is_nan());
    }
}
