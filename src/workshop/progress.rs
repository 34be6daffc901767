//! The check's progress, told to the server it checks (`PUT /admin/check`, with
//! the server's admin token when it has one), so the live view (`GET /live`)
//! shows each condition with its value so far and then the verdict; and to the
//! workshop's room when the attendee opted in (`room/seat.rs`). Best effort: a
//! server or a room that does not take it costs one warning, never the check.
//!
//! Values so far are the ones the server alone can give each second (blocked
//! share and persists a second from the `/stats` counts since the window began;
//! the canary and busy share as `/stats` has them) and the answered share from
//! the clients' seconds. The latency percentile, the recovery and the pile of
//! elements answered and not yet written (its peak, its growth at the end) are
//! measured once the window is whole: shown as "at the end".

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use simulator_api::client;
use simulator_api::live::{CheckCondition, CheckProgress};
use simulator_api::{Counts, Stats};
use simulator_clients::SeriesLine as Line;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use simulator_service::scenario::{Condition, Metric, Scenario};

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
        audience: &Audience,
        window: Duration,
        start: Stats,
    ) -> (Self, mpsc::UnboundedSender<Line>) {
        let (lines, seconds) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let run = Run {
            scenario: scenario.visible_name().to_owned(),
            conditions: scenario.check.clone(),
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
    conditions: Vec<Condition>,
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
                counts: now.counts.since(&self.start.counts),
                now: &now,
                start_cgroup: self.start.cpu_cgroup.as_ref().map(|c| c.throttled_us),
                start_drops: self.start.connections.listen_drops,
                start_runqueue_wait: self.start.runqueue_wait_ns.zip(self.start.process_cpu_ns),
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
                    .conditions
                    .iter()
                    .map(|c| condition(c, so_far.value(c.metric)))
                    .collect(),
                verdict: None,
                passed: None,
            };
            self.audience.tell(&progress).await;
        }
    }
}

/// What can be said of the window so far.
struct SoFar<'a> {
    counts: Counts,
    now: &'a Stats,
    /// The cgroup's throttled time (us) as the window began.
    start_cgroup: Option<u64>,
    /// The listener's drops as the window began.
    start_drops: Option<u64>,
    /// The threads' run-queue wait and the process's CPU (ns) as the window began.
    start_runqueue_wait: Option<(u64, u64)>,
    elapsed: f64,
    ok_share: Option<f64>,
    /// The last second's median request latency.
    p50_ms: Option<f64>,
    /// The worst second's 99th percentile handshake so far: the window's own
    /// p99 comes with the verdict.
    connect_p99_ms: Option<f64>,
}

impl SoFar<'_> {
    fn value(&self, metric: Metric) -> Option<f64> {
        let per_s = |n: f64| n / self.elapsed.max(1e-9);
        match metric {
            Metric::BlockedShare => Some(self.counts.blocked_share()),
            Metric::PersistsPerS => Some(per_s(self.counts.persists_done as f64)),
            Metric::CompactionsPerS => Some(per_s(self.counts.compactions_done as f64)),
            Metric::IndexEntries => Some(self.now.index_entries as f64),
            Metric::CanaryP99Ms => Some(self.now.runtime.late_p99_us as f64 / 1e3),
            Metric::BusyShare => Some(self.now.runtime.busy_share),
            Metric::OkShare => self.ok_share,
            Metric::ThrottledMsPerS => {
                let (now, start) = (self.now.cpu_cgroup.as_ref()?, self.start_cgroup?);
                Some(per_s(now.throttled_us.saturating_sub(start) as f64 / 1e3))
            }
            Metric::ListenDrops => {
                let (now, start) = (self.now.connections.listen_drops?, self.start_drops?);
                Some(now.saturating_sub(start) as f64)
            }
            Metric::RunqueueWaitPerCpu => {
                let (waits, runs) = (self.now.runqueue_wait_ns?, self.now.process_cpu_ns?);
                let (waited, ran) = self.start_runqueue_wait?;
                Some(waits.saturating_sub(waited) as f64 / runs.saturating_sub(ran).max(1) as f64)
            }
            Metric::P50Ms => self.p50_ms,
            Metric::ConnectP99Ms => self.connect_p99_ms,
            // The server's own 10 s trend, so far: the verdict's is the
            // check's reads from the window's eighth second on.
            Metric::ResidentGrowthMibPerS => self
                .now
                .memory?
                .resident_growth_bytes_per_s
                .map(|b| b / (1024.0 * 1024.0)),
            // A peak and a slope over the window: the check's own reads of
            // the pile give them at the end; the neighbour's share, its reads
            // around the window; the late hit ratio, the window's last reads.
            Metric::P99Ms
            | Metric::RecoveryS
            | Metric::RightDigestShare
            | Metric::AckedUnwrittenPerSlot
            | Metric::UnwrittenGrowthPerS
            | Metric::NeighbourShare
            | Metric::LateHitRatio
            | Metric::DescriptorGrowthPerS
            | Metric::JournalledShare
            | Metric::RetriesAnsweredOnce => None,
        }
    }
}

/// A condition as the live view shows it, with its value so far or measured.
pub fn condition(c: &Condition, value: Option<f64>) -> CheckCondition {
    CheckCondition {
        label: c.metric.label().to_owned(),
        bound: c.bound_text(),
        limit: c.below.or(c.above),
        value,
        holds: value.map(|v| c.holds(v)),
    }
}

/// Tells the server and the room the verdict (best effort, as above).
pub async fn tell_verdict(audience: &Audience, verdict: &CheckProgress) {
    audience.tell(verdict).await;
}
