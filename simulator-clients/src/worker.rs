//! One virtual client: the original simulator's closed loop.
//!
//! send one element, wait for the reply, think, repeat; until the plan's stop
//! condition or a cancel (Ctrl-C). A request already on the wire when the run
//! ends is waited for, so the client's completed count equals the server's
//! `requests_done` for the same window.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::connection::Connection;
use crate::plan::LoadPlan;
use crate::record::Recorder;

/// Everything a client needs, shared by all of them.
#[derive(Debug)]
pub struct Shared {
    pub plan: LoadPlan,
    pub addr: SocketAddr,
    pub host: String,
    pub recorder: Recorder,
    pub start: Instant,
    pub deadline: Option<Instant>,
    pub cancel: CancellationToken,
}

impl Shared {
    fn over(&self, now: Instant) -> bool {
        self.cancel.is_cancelled() || self.deadline.is_some_and(|d| now >= d)
    }

    /// Sleeps until `until` (capped at the deadline); false when the run ended meanwhile.
    async fn pause_until(&self, until: Instant) -> bool {
        let until = self.deadline.map_or(until, |d| until.min(d));
        tokio::select! {
            () = tokio::time::sleep_until(until) => !self.over(Instant::now()),
            () = self.cancel.cancelled() => false,
        }
    }
}

/// Client number `index` of `plan.clients`.
pub async fn client(shared: Arc<Shared>, index: usize) {
    let plan = &shared.plan;
    let offset = plan
        .ramp_up
        .mul_f64(index as f64 / plan.clients.max(1) as f64);
    if !offset.is_zero() && !shared.pause_until(shared.start + offset).await {
        return;
    }
    let mut connection = Connection::new(shared.addr, shared.host.clone());
    let mut sent = 0u64;
    while !shared.over(Instant::now()) && plan.stop.requests_per_client.is_none_or(|max| sent < max)
    {
        let size = plan.payload.sample(&mut rand::rng());
        let began = Instant::now();
        let outcome = connection.send_element(size, plan.timeout).await;
        shared.recorder.record(&outcome, began.elapsed());
        sent += 1;
        if plan.stop.requests_per_client.is_some_and(|max| sent >= max) {
            break;
        }
        if !shared.pause_until(Instant::now() + plan.think_time).await {
            break;
        }
    }
}
