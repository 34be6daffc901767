//! What the clients observed, aggregated as it happens so memory stays flat
//! however long the run: counters, an HDR histogram of latency (1 ns to 1 h, 3
//! significant digits) and power-of-two buckets for a DTrace-style quantize.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::reporting::figures::PerFigure;
use crate::reporting::hdr::new_histogram;
use crate::reporting::lag::Lag;
use crate::reporting::live::LiveMetrics;
use crate::reporting::outcome::Failure;
use simulator_api::Reply;

/// Failures by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Errors {
    pub connect: u64,
    /// Attempts whose timeout passed before their connection was made. Reports
    /// of earlier versions have none: read as 0.
    #[serde(default)]
    pub connect_timeout: u64,
    /// Connects that failed for want of a descriptor in the driver (EMFILE,
    /// ENFILE). Reports of earlier versions have none: read as 0.
    #[serde(default)]
    pub file_limit: u64,
    pub timeout: u64,
    pub http_status: u64,
    pub io: u64,
}

impl Errors {
    pub fn total(&self) -> u64 {
        self.connect
            + self.connect_timeout
            + self.file_limit
            + self.timeout
            + self.http_status
            + self.io
    }

    fn count(&mut self, failure: Failure) {
        match failure {
            Failure::Connect => self.connect += 1,
            Failure::ConnectTimeout => self.connect_timeout += 1,
            Failure::FileLimit => self.file_limit += 1,
            Failure::Timeout => self.timeout += 1,
            Failure::Status(_) => self.http_status += 1,
            Failure::Io => self.io += 1,
        }
    }

    /// Adds `other`'s counts to these (`merge`).
    pub fn add(&mut self, other: &Errors) {
        self.connect += other.connect;
        self.connect_timeout += other.connect_timeout;
        self.file_limit += other.file_limit;
        self.timeout += other.timeout;
        self.http_status += other.http_status;
        self.io += other.io;
    }
}

/// The replies' record digests (`normalise`), each checked against the reference
/// for its id (`simulator_api::record`): what shows a server that skips or cuts
/// short the step it is asked to do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digests {
    /// 2xx replies whose digest is the reference's.
    pub right: u64,
    /// 2xx replies with another digest.
    pub wrong: u64,
    /// 2xx replies with none (a server that does not normalise).
    pub absent: u64,
}

impl Digests {
    fn record(&mut self, reply: &Reply) {
        match reply.digest {
            None => self.absent += 1,
            Some(d) if d == simulator_api::record::reference_digest(reply.id) => self.right += 1,
            Some(_) => self.wrong += 1,
        }
    }

    /// Adds `other`'s counts to these (`merge`).
    pub fn add(&mut self, other: &Digests) {
        self.right += other.right;
        self.wrong += other.wrong;
        self.absent += other.absent;
    }

    /// The share of the replies counted whose digest is right (0 of none).
    pub fn right_share(&self) -> f64 {
        let all = self.right + self.wrong + self.absent;
        match all {
            0 => 0.0,
            _ => self.right as f64 / all as f64,
        }
    }
}

/// When one send happened against when it should have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Reply time minus the time the send was due: the latency a user would see.
    /// In a closed loop the send is due when it leaves.
    pub from_due: Duration,
    /// Open loop: reply time minus the time the request actually left. `None` in
    /// a closed loop, where it would equal `from_due` and cost a second histogram
    /// record per request for nothing.
    pub from_send: Option<Duration>,
    /// How late the send left against its schedule (a closed-loop client's wake-up).
    /// `None` for a closed-loop client's first send: with every client due at the
    /// same instant that lag measures the start-up burst, which the report gives
    /// as `start_spread`, not the clients' ability to keep their pace.
    pub lag: Option<Lag>,
    /// The reply came after the planned duration, while the run drained.
    pub after_window: bool,
    /// How long the attempt's new connection took to open; `None` when it
    /// went on a connection already open.
    pub connect: Option<Duration>,
}

impl Timing {
    /// A send that left exactly on time, as a closed loop's request after its wake-up.
    pub fn on_time(latency: Duration, lag: Option<Lag>) -> Self {
        Self {
            from_due: latency,
            from_send: None,
            lag,
            after_window: false,
            connect: None,
        }
    }
}

fn record_ns(h: &mut Histogram<u64>, d: Duration) -> u64 {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
    h.saturating_record(ns);
    ns
}

/// Everything counted so far.
#[derive(Debug, Clone)]
pub struct Tally {
    pub sent: u64,
    pub completed: u64,
    /// Of `completed`, the replies that came after the planned duration.
    pub completed_after_window: u64,
    /// Requests given up on when the drain reached `max_drain`: sent, never answered.
    pub unanswered: u64,
    pub blocked: u64,
    pub errors: Errors,
    /// Sends that left more than the plan's `late_after` behind schedule.
    pub late: u64,
    /// Open loop: sends due in the window still waiting for a connection, late,
    /// when it closed; not sent.
    pub missed: u64,
    /// Of `sent`, the attempts that retried a failed one (`--retries`).
    pub retries: u64,
    /// Requests that ended without a success: their last attempt failed and no
    /// retry was left, allowed by the budget, or curable (a 4xx).
    pub given_up: u64,
    /// The 2xx replies' record digests, checked.
    pub digests: Digests,
    /// The whole-run histograms, one per declared figure (`figures.rs`).
    pub histograms: PerFigure<Histogram<u64>>,
    /// The latest a closed-loop client's first send left after its due time.
    pub start_spread: Duration,
    /// `pow2[k]` counts `latency` values in [2^k, 2^(k+1)) ns, as DTrace's quantize().
    pub pow2: [u64; 64],
}

impl Default for Tally {
    fn default() -> Self {
        Self {
            sent: 0,
            completed: 0,
            completed_after_window: 0,
            unanswered: 0,
            blocked: 0,
            errors: Errors::default(),
            late: 0,
            missed: 0,
            retries: 0,
            given_up: 0,
            digests: Digests::default(),
            histograms: PerFigure::from_fn(|_| new_histogram()),
            start_spread: Duration::ZERO,
            pow2: [0; 64],
        }
    }
}

impl Tally {
    fn record(&mut self, outcome: &Result<Reply, Failure>, timing: Timing, late: bool) {
        self.sent += 1;
        self.late += u64::from(late);
        let h = &mut self.histograms;
        if let Some(lag) = timing.lag {
            record_ns(&mut h.schedule_lag, lag.total());
            record_ns(&mut h.schedule_lag_connection, lag.connection);
            record_ns(&mut h.schedule_lag_timer, lag.timer);
        }
        // Whatever became of the request: the handshake was made.
        if let Some(connect) = timing.connect {
            record_ns(&mut h.connect, connect);
        }
        match outcome {
            Ok(reply) => {
                self.completed += 1;
                self.completed_after_window += u64::from(timing.after_window);
                self.blocked += u64::from(reply.blocked);
                self.digests.record(reply);
                let ns = record_ns(&mut h.latency, timing.from_due);
                self.pow2[63 - ns.leading_zeros() as usize] += 1;
                if let Some(from_send) = timing.from_send {
                    record_ns(&mut h.latency_from_send, from_send);
                }
            }
            Err(failure) => self.errors.count(*failure),
        }
    }
}

/// What one span of the run saw: a second of a `--series`, or a stage of a
/// plan (`--stages`). Three histograms, not the whole run's seven: a plan
/// keeps one of these a stage.
#[derive(Debug, Clone)]
pub struct Interval {
    pub sent: u64,
    pub completed: u64,
    pub retries: u64,
    pub given_up: u64,
    pub blocked: u64,
    pub errors: Errors,
    pub late: u64,
    /// Open loop: sends due that the window closed on (a stage's only).
    pub missed: u64,
    /// Requests given up on at the drain limit (a stage's only).
    pub unanswered: u64,
    /// Attempts answered 2xx while the span lasted, whenever they were due
    /// (a stage's only): its achieved rate, where `completed` counts the
    /// replies to the sends due in it.
    pub answered_in_span: u64,
    /// From the time each send was due, as the run's main latency.
    pub latency: Histogram<u64>,
    /// From the time each left (open loop; a stage's only).
    pub latency_from_send: Histogram<u64>,
    /// The handshakes of connections opened this interval.
    pub connect: Histogram<u64>,
}

impl Default for Interval {
    fn default() -> Self {
        Self {
            sent: 0,
            completed: 0,
            retries: 0,
            given_up: 0,
            blocked: 0,
            errors: Errors::default(),
            late: 0,
            missed: 0,
            unanswered: 0,
            answered_in_span: 0,
            latency: new_histogram(),
            latency_from_send: new_histogram(),
            connect: new_histogram(),
        }
    }
}

impl Interval {
    fn record(&mut self, outcome: &Result<Reply, Failure>, timing: Timing, late: bool) {
        self.sent += 1;
        self.late += u64::from(late);
        if let Some(connect) = timing.connect {
            record_ns(&mut self.connect, connect);
        }
        match outcome {
            Ok(reply) => {
                self.completed += 1;
                self.blocked += u64::from(reply.blocked);
                record_ns(&mut self.latency, timing.from_due);
                if let Some(from_send) = timing.from_send {
                    record_ns(&mut self.latency_from_send, from_send);
                }
            }
            Err(failure) => self.errors.count(*failure),
        }
    }
}

/// Which stage of a plan a moment is in: the stages' ends, from the run's start.
#[derive(Debug, Clone)]
pub struct StageClock {
    pub start: Instant,
    pub ends_s: Vec<f64>,
}

impl StageClock {
    /// The clock of `plan` run from `start`.
    pub fn of(plan: &simulator_api::load::Stages, start: Instant) -> Self {
        let ends_s = plan.bounds_s().map(|(_, to)| to).collect();
        StageClock { start, ends_s }
    }

    fn stage_of(&self, at: Instant) -> usize {
        let t = at.saturating_duration_since(self.start).as_secs_f64();
        self.ends_s
            .iter()
            .position(|end| t < *end)
            .unwrap_or(self.ends_s.len().saturating_sub(1))
    }
}

/// What the outputs that follow a run as it goes (the progress line, the series)
/// read of it. The load's `RunState` is one; a trait, so that reporting reads a run
/// without reaching up into `load/`.
pub trait Running: Send + Sync {
    /// When the run's clock started.
    fn started(&self) -> tokio::time::Instant;
    fn recorder(&self) -> &Recorder;
    /// After the planned duration, while replies are still awaited: how long the
    /// drain has lasted and how long it may last.
    fn draining(&self) -> Option<(Duration, Duration)>;
    /// Requests sent and not yet answered.
    fn in_flight(&self) -> u64;
    /// The name of the plan's stage in force `t_s` seconds into the run;
    /// `None` without a plan.
    fn stage_at(&self, _t_s: f64) -> Option<String> {
        None
    }
}

#[derive(Debug, Default)]
struct Inner {
    total: Tally,
    interval: Option<Interval>,
    /// A plan's stages, each its own tally (empty without a plan).
    stages: Vec<Interval>,
}

impl Inner {
    /// The tally of the stage `at` falls in; `None` without a plan.
    fn stage(&mut self, clock: Option<&StageClock>, at: Instant) -> Option<&mut Interval> {
        let k = clock?.stage_of(at);
        self.stages.get_mut(k)
    }
}

/// The tally shared by every client. One lock: at ten thousand requests a second
/// it is held for well under a millisecond a second in total.
#[derive(Debug)]
pub struct Recorder {
    late_after: Duration,
    inner: Mutex<Inner>,
    /// The `--metrics-listen` endpoint's counters; no-ops without it.
    live: Arc<LiveMetrics>,
    /// A plan's stages: each attempt counts in the stage it was due in.
    clock: Option<StageClock>,
}

impl Recorder {
    /// `late_after`: the lag beyond which a send counts as late. `intervals`: also
    /// keep a per-interval tally for [`Recorder::take_interval`].
    pub fn new(late_after: Duration, intervals: bool) -> Self {
        Self {
            late_after,
            inner: Mutex::new(Inner {
                total: Tally::default(),
                interval: intervals.then(Interval::default),
                stages: Vec::new(),
            }),
            live: Arc::new(LiveMetrics::off()),
            clock: None,
        }
    }

    /// Also counts each stage of a plan on its own.
    pub fn with_stages(self, clock: StageClock) -> Self {
        let stages = clock.ends_s.iter().map(|_| Interval::default()).collect();
        self.lock().stages = stages;
        Self {
            clock: Some(clock),
            ..self
        }
    }

    /// Each stage's tally so far (empty without a plan).
    pub fn stages(&self) -> Vec<Interval> {
        self.lock().stages.clone()
    }

    /// Stage `k`'s tally so far: one stage's copy, not all 32 of them (three
    /// histograms each), while the clients wait for the lock.
    pub fn stage(&self, k: usize) -> Option<Interval> {
        self.lock().stages.get(k).cloned()
    }

    /// Also counts into `live` for the driver's own `/metrics`.
    pub fn with_live(self, live: Arc<LiveMetrics>) -> Self {
        Self { live, ..self }
    }

    pub fn record(&self, outcome: &Result<Reply, Failure>, timing: Timing) {
        let late = timing.lag.is_some_and(|lag| lag.total() > self.late_after);
        self.live
            .record(outcome, timing.from_due, timing.lag, timing.connect, late);
        let mut inner = self.lock();
        inner.total.record(outcome, timing, late);
        if let Some(interval) = inner.interval.as_mut() {
            interval.record(outcome, timing, late);
        }
        if self.clock.is_some() {
            let now = Instant::now();
            if let Some(stage) = inner.stage(self.clock.as_ref(), now - timing.from_due) {
                stage.record(outcome, timing, late);
            }
            if outcome.is_ok() && !timing.after_window {
                if let Some(stage) = inner.stage(self.clock.as_ref(), now) {
                    stage.answered_in_span += 1;
                }
            }
        }
    }

    /// The tally of the stage now is in, for counts that have no due time.
    fn now_stage<'a>(&self, inner: &'a mut Inner) -> Option<&'a mut Interval> {
        inner.stage(self.clock.as_ref(), Instant::now())
    }

    /// A request sent but given up on at the drain limit.
    pub fn unanswered(&self) {
        self.live.unanswered();
        let mut inner = self.lock();
        inner.total.sent += 1;
        inner.total.unanswered += 1;
        if let Some(stage) = self.now_stage(&mut inner) {
            stage.sent += 1;
            stage.unanswered += 1;
        }
    }

    /// A failed attempt is retried (the retry's own outcome is recorded as any).
    pub fn retry(&self) {
        self.live.retry();
        let mut inner = self.lock();
        inner.total.retries += 1;
        if let Some(interval) = inner.interval.as_mut() {
            interval.retries += 1;
        }
        if let Some(stage) = self.now_stage(&mut inner) {
            stage.retries += 1;
        }
    }

    /// A request ended without a success.
    pub fn gave_up(&self) {
        self.live.gave_up();
        let mut inner = self.lock();
        inner.total.given_up += 1;
        if let Some(interval) = inner.interval.as_mut() {
            interval.given_up += 1;
        }
        if let Some(stage) = self.now_stage(&mut inner) {
            stage.given_up += 1;
        }
    }

    /// A request succeeded `latency` after its first attempt was due.
    pub fn request_done(&self, latency: Duration) {
        record_ns(&mut self.lock().total.histograms.request_latency, latency);
    }

    /// An open-loop send missed: still waiting, late, when the window closed.
    pub fn missed(&self) {
        self.live.missed();
        let mut inner = self.lock();
        inner.total.missed += 1;
        if let Some(stage) = self.now_stage(&mut inner) {
            stage.missed += 1;
        }
    }

    /// A closed-loop client's first send left `lag` after its due time.
    pub fn first_send(&self, lag: Duration) {
        let total = &mut self.lock().total;
        total.start_spread = total.start_spread.max(lag);
    }

    /// Counters only, cheap enough for a progress bar.
    pub fn counts(&self) -> RunCounts {
        let t = &self.lock().total;
        RunCounts {
            sent: t.sent,
            completed: t.completed,
            blocked: t.blocked,
            errors: t.errors.total(),
            late: t.late,
        }
    }

    pub fn tally(&self) -> Tally {
        self.lock().total.clone()
    }

    /// The interval so far, starting a new one; `None` unless made with intervals.
    pub fn take_interval(&self) -> Option<Interval> {
        self.lock().interval.as_mut().map(std::mem::take)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A run's counters so far, as the progress bar shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunCounts {
    pub sent: u64,
    pub completed: u64,
    pub blocked: u64,
    pub errors: u64,
    pub late: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_buckets_are_powers_of_two() {
        let r = Recorder::new(Duration::from_millis(5), false);
        let ok = Ok(Reply {
            id: 1,
            blocked: true,
            permit_wait_ns: 0,
            digest: None,
        });
        let on_time =
            |ns| Timing::on_time(Duration::from_nanos(ns), Some(Lag::timer(Duration::ZERO)));
        r.record(&ok, on_time(4_194_304));
        r.record(&ok, on_time(8_388_607));
        r.record(&Err(Failure::Timeout), on_time(1_000_000_000));
        let t = r.tally();
        assert_eq!(t.pow2[22], 2);
        assert_eq!(
            (t.sent, t.completed, t.blocked, t.errors.timeout),
            (3, 2, 2, 1)
        );
        assert_eq!(t.histograms.latency.len(), 2, "failures are not latencies");
        assert_eq!(t.histograms.schedule_lag.len(), 3, "every send has a lag");
        assert!(r.take_interval().is_none(), "no intervals asked for");
    }

    #[test]
    fn late_sends_and_intervals_are_counted() {
        let r = Recorder::new(Duration::from_millis(5), true);
        let ok = Ok(Reply {
            id: 1,
            blocked: false,
            permit_wait_ns: 0,
            digest: None,
        });
        let ms = Duration::from_millis;
        let late = Timing {
            from_due: ms(2_010),
            from_send: Some(ms(10)),
            lag: Some(Lag::timer(ms(2_000))),
            after_window: false,
            connect: None,
        };
        r.record(&ok, late);
        r.record(&ok, Timing::on_time(ms(10), Some(Lag::timer(ms(5)))));
        let first = r.take_interval().expect("intervals kept");
        assert_eq!((first.sent, first.completed, first.late), (2, 2, 1));
        r.record(&Err(Failure::Connect), Timing::on_time(ms(1), None));
        let second = r.take_interval().expect("intervals kept");
        assert_eq!(
            (second.sent, second.errors.connect, second.latency.len()),
            (1, 1, 0)
        );
        let t = r.tally();
        assert_eq!(t.late, 1, "exactly the late_after lag is on time");
        assert_eq!(
            t.histograms.schedule_lag.len(),
            2,
            "a first send has no lag"
        );
        assert!(t.histograms.latency.max() >= 2_000_000_000);
        assert!(t.histograms.latency_from_send.max() < 11_000_000);
    }
}
