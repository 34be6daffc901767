//! Shutdown's side of the request path: wait for what is in flight until a
//! deadline, then cut short every request still waiting, so that each gets its
//! request-done and a 503 (started = done holds), and report what was left.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use simulator_api::Counts;
use tokio::time::Instant;

use super::DataProcessor;

/// How shutdown went: what it had to cut short or leave unfinished at its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DrainReport {
    /// Requests ended at the deadline with a 503 (request-done fired for each).
    pub requests_cut_short: u64,
    /// Requests that had still not ended after that (0 unless a request was stuck
    /// in CPU work; `counts` then shows started > done).
    pub requests_abandoned: u64,
    /// Persists still running at the deadline: persist-start without persist-done.
    pub persists_abandoned: u64,
    /// Elements still queued for persistence at the deadline, never started.
    pub queued_abandoned: u64,
    pub counts: Counts,
}

/// After the deadline, how long cut-short requests get to send their 503. Every
/// wait they can be in ends at once, so this is only ever a bound, never a delay.
const CUT_SHORT_GRACE: Duration = Duration::from_secs(1);

impl DataProcessor {
    /// Waits until every request and persist in flight has finished, or until
    /// `deadline`; then cuts short the requests still waiting and reports the
    /// persists left running.
    pub async fn drain(&self, deadline: Instant) -> DrainReport {
        let s = &*self.inner;
        s.requests.close();
        s.backend.tasks.close();
        let finished = tokio::time::timeout_at(deadline, async {
            s.requests.wait().await;
            // No request can hand anything off now: let the queue run dry.
            self.persistence().close();
            s.backend.tasks.wait().await;
        })
        .await
        .is_ok();
        let queued_abandoned = self.counts().queued();
        if !finished {
            s.abandon.cancel();
            s.admission.close();
            self.persistence().close();
            let _ = tokio::time::timeout(CUT_SHORT_GRACE, s.requests.wait()).await;
        }
        let counts = self.counts();
        DrainReport {
            requests_cut_short: s.requests_cut_short.load(Ordering::Relaxed),
            requests_abandoned: counts.requests_in_flight(),
            persists_abandoned: counts.persists_in_flight(),
            queued_abandoned,
            counts,
        }
    }
}
