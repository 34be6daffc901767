//! What the check's own clients measured: their answered share, their
//! latencies and handshakes, the replies' digests, the goodput's recovery
//! after an incident, and the check's own retries.

use super::super::recovery::{recovery_s, GoodputSecond};
use super::{Metric, Reads, SoFar, Window};

/// The share of what the load sent that counts as recovered goodput.
pub const RECOVERED_SHARE: f64 = 0.95;

/// Share of the requests sent that got a 2xx reply.
pub struct OkShare;

impl Metric for OkShare {
    fn name(&self) -> &'static str {
        "ok_share"
    }
    fn label(&self) -> &'static str {
        "requests answered 2xx"
    }
    fn measure(&self, w: &Window) -> f64 {
        let sent = w.report.requests_sent.max(1) as f64;
        w.report.requests_sent.saturating_sub(w.report.errors) as f64 / sent
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        s.ok_share
    }
}

/// 99th percentile request latency in ms.
pub struct P99Ms;

impl Metric for P99Ms {
    fn name(&self) -> &'static str {
        "p99_ms"
    }
    fn label(&self) -> &'static str {
        "request latency p99 (ms)"
    }
    fn measure(&self, w: &Window) -> f64 {
        w.report.summary.latency.p99_ns as f64 / 1e6
    }
}

/// Median request latency in ms.
pub struct P50Ms;

impl Metric for P50Ms {
    fn name(&self) -> &'static str {
        "p50_ms"
    }
    fn label(&self) -> &'static str {
        "request latency p50 (ms)"
    }
    fn measure(&self, w: &Window) -> f64 {
        w.report.summary.latency.p50_ns as f64 / 1e6
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        s.p50_ms
    }
}

/// 99th percentile time to open a connection in ms, over the connections the
/// clients opened in the window; 0 when they opened none.
pub struct ConnectP99Ms;

impl Metric for ConnectP99Ms {
    fn name(&self) -> &'static str {
        "connect_p99_ms"
    }
    fn label(&self) -> &'static str {
        "connect p99 (ms)"
    }
    fn measure(&self, w: &Window) -> f64 {
        w.report.summary.connect.p99_ns as f64 / 1e6
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        s.connect_p99_ms
    }
}

/// Share of the 2xx replies whose record digest is the reference's for their
/// id (`simulator_api::record`): 0 for a server that skips the step (no
/// digest) or cuts the record short.
pub struct RightDigestShare;

impl Metric for RightDigestShare {
    fn name(&self) -> &'static str {
        "right_digest_share"
    }
    fn label(&self) -> &'static str {
        "replies with the record's right digest"
    }
    fn measure(&self, w: &Window) -> f64 {
        w.report.digests.right_share()
    }
}

/// Seconds from the end of the scenario's incident until goodput (attempts
/// answered 2xx within their timeout, a second) reached [`RECOVERED_SHARE`]
/// of the requests the load sent in the same seconds (first attempts) and
/// stayed there to the end of the window, judged two seconds at a time
/// (`recovery.rs`); the whole rest of the window when it never did. Without
/// an incident or an open loop there is nothing to recover from: NaN, so a
/// scenario that asks for it without either fails.
pub struct RecoveryS;

impl Metric for RecoveryS {
    fn name(&self) -> &'static str {
        "recovery_s"
    }
    fn label(&self) -> &'static str {
        "s after the incident to 95 % goodput"
    }
    fn measure(&self, w: &Window) -> f64 {
        match (w.incident_end_s, w.open_loop) {
            (Some(ended), true) => {
                let goodput: Vec<GoodputSecond> = w
                    .report
                    .seconds
                    .iter()
                    .map(|s| GoodputSecond::of(&s.line))
                    .collect();
                recovery_s(&goodput, ended, RECOVERED_SHARE)
            }
            _ => f64::NAN,
        }
    }
}

/// The share of the check's own retries answered with their first attempt's
/// reply (the same request id, not stored again): each a stored element sent
/// under a key of its own, then again under that key up to 2 s after its
/// reply, as a client whose reply was lost does (`retried_once.rs`).
pub struct RetriesAnsweredOnce;

impl Metric for RetriesAnsweredOnce {
    fn name(&self) -> &'static str {
        "retries_answered_once"
    }
    fn label(&self) -> &'static str {
        "retries answered once"
    }
    fn reads(&self) -> Reads {
        Reads::OwnRetries
    }
    fn measure(&self, w: &Window) -> f64 {
        w.retried.share()
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Parts;
    use super::*;
    use crate::workshop::retried_once::Retried;

    #[test]
    fn ok_share_counts_every_error_against_the_requests_sent() {
        let mut parts = Parts::new();
        assert_eq!(OkShare.measure(&parts.window()), 0.0, "nothing sent");
        (parts.report.requests_sent, parts.report.errors) = (200, 10);
        assert_eq!(OkShare.measure(&parts.window()), 0.95);
    }

    #[test]
    fn p99_ms_p50_ms_and_connect_p99_ms_are_the_reports_in_ms() {
        let mut parts = Parts::new();
        parts.report.summary.latency.p99_ns = 48_500_000;
        parts.report.summary.latency.p50_ns = 2_000_000;
        parts.report.summary.connect.p99_ns = 1_500_000;
        let w = parts.window();
        assert_eq!(P99Ms.measure(&w), 48.5);
        assert_eq!(P50Ms.measure(&w), 2.0);
        assert_eq!(ConnectP99Ms.measure(&w), 1.5);
    }

    #[test]
    fn p50_ms_and_connect_p99_ms_so_far_are_the_clients_seconds() {
        let parts = Parts::new();
        let mut so_far = parts.so_far();
        (so_far.p50_ms, so_far.connect_p99_ms) = (Some(3.0), Some(7.0));
        assert_eq!(P50Ms.so_far(&so_far), Some(3.0));
        assert_eq!(ConnectP99Ms.so_far(&so_far), Some(7.0));
        assert_eq!(P99Ms.so_far(&so_far), None, "at the end");
    }

    #[test]
    fn connect_p99_ms_is_0_without_a_connection() {
        assert_eq!(ConnectP99Ms.measure(&Parts::new().window()), 0.0);
    }

    #[test]
    fn right_digest_share_counts_a_missing_digest_as_wrong() {
        let mut parts = Parts::new();
        parts.report.digests.right = 3;
        parts.report.digests.absent = 1;
        assert_eq!(RightDigestShare.measure(&parts.window()), 0.75);
    }

    #[test]
    fn recovery_s_needs_an_incident_and_an_open_loop() {
        let mut parts = Parts::new();
        assert!(RecoveryS.measure(&parts.window()).is_nan());
        parts.incident_end_s = Some(5.0);
        assert!(RecoveryS.measure(&parts.window()).is_nan(), "closed loop");
        parts.open_loop = true;
        // No second after the incident's end: never recovered.
        assert_eq!(RecoveryS.measure(&parts.window()), f64::INFINITY);
    }

    #[test]
    fn retries_answered_once_is_their_share_and_nan_without_one() {
        let mut parts = Parts::new();
        assert!(RetriesAnsweredOnce.measure(&parts.window()).is_nan());
        parts.retried = Retried {
            sent: 40,
            answered_once: 39,
        };
        assert_eq!(RetriesAnsweredOnce.measure(&parts.window()), 0.975);
        assert_eq!(RetriesAnsweredOnce.reads(), Reads::OwnRetries);
    }
}
