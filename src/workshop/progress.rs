//! The check's progress, told to the server it checks (`PUT /admin/check`, with
//! the server's admin token when it has one), so the live view (`GET /live`)
//! shows each condition with its value so far and then the verdict; and to the
//! workshop's room when the attendee opted in (`room/seat.rs`). Best effort: a
//! server or a room that does not take it costs one warning, never the check.
//!
//! Values so far are each metric's `so_far` (`check/metrics/`): what the
//! server alone can give each second (blocked share and persists a second
//! from the `/stats` counts since the window began; the canary and busy share
//! as `/stats` has them) and the answered share from the clients' seconds.
//! The latency percentile, the recovery and the pile of elements answered and
//! not yet written (its peak, its growth at the end) are measured once the
//! window is whole: shown as "at the end".

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use simulator_api::client;
use simulator_api::live::{CheckCondition, CheckProgress};
use simulator_api::Stats;
use simulator_clients::SeriesLine as Line;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::check::metrics::{Bar, SoFar};
use simulator_service::scenario::Scenario;

/// Who hears how the check goes: the server's live view, and the room.
#[derive(Debug, Clone)]
pub struct Audience {
    pub target: String,
    /// The server's `--admin-token`: the check begins incidents and reports
    /// with it.
    pub admin_token: Option<String>,
    /// The room's link (`room::seat::SeatLink::sender`), when the attendee
    /// reports to one.
    pub room: Option<mpsc::UnboundedSender<CheckProgress>>,
    /// Whether the server's refusal was told already: once a check.
    pub warned: Arc<AtomicBool>,
}

impl Audience {
    /// The server alone, with no admin token (the servers a test or `workshop
    /// figures` starts).
    pub fn server(target: &str) -> Audience {
        Audience {
            target: target.to_owned(),
            admin_token: None,
            room: None,
            warned: Arc::default(),
        }
    }

    /// Tells the server (a warning the first time it refuses) and the room
    /// (whose link warns for itself).
    async fn tell(&self, progress: &CheckProgress) {
        if let Some(room) = &self.room {
            let _ = room.send(progress.clone());
        }
        let token = self.admin_token.as_deref();
        if let Err(e) = client::report_check(&self.target, progress, token).await {
            if !self.warned.swap(true, Ordering::Relaxed) {
                let hint = match e.status() {
                    Some(hyper::StatusCode::UNAUTHORIZED) => {
                        " (the server has an admin token: give the check it, --admin-token or ISIM_ADMIN_TOKEN)"
                    }
                    _ => "",
                };
                eprintln!("note: the server's live view does not show this check: {e}{hint}");
            }
        }
    }
}

/// Reports once a second while the check's load runs.
#[derive(Debug)]
pub struct Reporter {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Reporter {
    /// Starts reporting; send the run's seconds to what it returns beside it.
    pub fn start(
        scenario: &Scenario,
        bars: &[Bar],
        audience: &Audience,
        window: Duration,
        start: Stats,
    ) -> (Self, mpsc::UnboundedSender<Line>) {
        let (lines, seconds) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let run = Run {
            scenario: scenario.visible_name().to_owned(),
            bars: bars.to_vec(),
            audience: audience.clone(),
            window,
            start,
        };
        let task = tokio::spawn(run.report_each_second(seconds, stop.clone()));
        (Self { stop, task }, lines)
    }

    pub async fn finish(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

struct Run {
    scenario: String,
    bars: Vec<Bar>,
    audience: Audience,
    window: Duration,
    start: Stats,
}

impl Run {
    async fn report_each_second(
        self,
        mut seconds: mpsc::UnboundedReceiver<Line>,
        stop: CancellationToken,
    ) {
        let began = tokio::time::Instant::now();
        let mut every = tokio::time::interval(Duration::from_secs(1));
        let (mut sent, mut errors) = (0u64, 0u64);
        // The live view's figures of the clients: the last second's median, the
        // worst second's handshakes.
        let (mut last_p50_ns, mut worst_connect_ns) = (None, 0u64);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = every.tick() => {}
            }
            while let Ok(line) = seconds.try_recv() {
                sent += line.sent;
                errors += line.errors;
                if line.completed > 0 {
                    last_p50_ns = Some(line.p50_ns);
                }
                worst_connect_ns = worst_connect_ns.max(line.connect_p99_ns);
            }
            let Ok(now) = client::stats(&self.audience.target).await else {
                continue;
            };
            let elapsed = began.elapsed().as_secs_f64();
            let so_far = SoFar {
                since: now.counts.since(&self.start.counts),
                start: &self.start,
                now: &now,
                elapsed,
                ok_share: (sent > 0).then(|| sent.saturating_sub(errors) as f64 / sent as f64),
                p50_ms: last_p50_ns.map(|ns| ns as f64 / 1e6),
                connect_p99_ms: (sent > 0).then(|| worst_connect_ns as f64 / 1e6),
            };
            let progress = CheckProgress {
                scenario: self.scenario.clone(),
                window_s: self.window.as_secs_f64(),
                elapsed_s: elapsed,
                conditions: self
                    .bars
                    .iter()
                    .map(|bar| condition(bar, bar.metric.so_far(&so_far)))
                    .collect(),
                verdict: None,
                passed: None,
            };
            self.audience.tell(&progress).await;
        }
    }
}

/// A condition as the live view shows it, with its value so far or measured.
pub fn condition(bar: &Bar, value: Option<f64>) -> CheckCondition {
    CheckCondition {
        label: bar.metric.label().to_owned(),
        bound: bar.bound_text(),
        limit: Some(bar.limit()),
        value,
        holds: value.map(|v| bar.holds(v)),
    }
}

/// Tells the server and the room the verdict (best effort, as above).
pub async fn tell_verdict(audience: &Audience, verdict: &CheckProgress) {
    audience.tell(verdict).await;
}
