//! The server's async runtime, as `/stats.runtime` has it: its timer canary's
//! lateness and its workers' busy share, both over the runtime's last 5 s
//! (hence `check::MIN_WINDOW`).

use super::{Metric, SoFar, Window};

/// The timer canary's p99 lateness in ms over the last 5 s.
pub struct CanaryP99Ms;

impl Metric for CanaryP99Ms {
    fn name(&self) -> &'static str {
        "canary_p99_ms"
    }
    fn label(&self) -> &'static str {
        "timer canary lateness p99 (ms)"
    }
    fn measure(&self, w: &Window) -> f64 {
        w.after.runtime.late_p99_us as f64 / 1e3
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        Some(s.now.runtime.late_p99_us as f64 / 1e3)
    }
}

/// The async workers' busy share over the last 5 s.
pub struct BusyShare;

impl Metric for BusyShare {
    fn name(&self) -> &'static str {
        "busy_share"
    }
    fn label(&self) -> &'static str {
        "runtime workers busy share"
    }
    fn measure(&self, w: &Window) -> f64 {
        w.after.runtime.busy_share
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        Some(s.now.runtime.busy_share)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Parts;
    use super::*;

    #[test]
    fn canary_p99_ms_is_the_runtimes_last_5_s_read_after_the_window() {
        let mut parts = Parts::new();
        parts.before.runtime.late_p99_us = 90_000;
        parts.after.runtime.late_p99_us = 2_500;
        assert_eq!(CanaryP99Ms.measure(&parts.window()), 2.5);
        assert_eq!(CanaryP99Ms.so_far(&parts.so_far()), Some(2.5));
    }

    #[test]
    fn busy_share_is_the_runtimes_last_5_s_read_after_the_window() {
        let mut parts = Parts::new();
        parts.after.runtime.busy_share = 0.125;
        assert_eq!(BusyShare.measure(&parts.window()), 0.125);
        assert_eq!(BusyShare.so_far(&parts.so_far()), Some(0.125));
    }
}
