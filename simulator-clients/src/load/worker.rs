//! The clients themselves: the original's closed loop (send one element, wait for
//! the reply, think, repeat) and the open loop (send when the timetable says, on
//! a pool of connections), until the plan's stop condition or a cancel (Ctrl-C).
//!
//! A request already on the wire when the run ends is waited for, so the
//! client's completed count equals the server's `requests_done` for the same
//! window. Every send records how late it left against its schedule, so a client
//! that cannot keep its pace (too many clients for the machine, a slow server in
//! an open loop) shows up in the report instead of quietly sending less.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::load::connection::Connection;
use crate::load::retry::RetryBudget;
use crate::load::schedule::Schedule;
use crate::plan::{Body, LoadPlan, Pacing};
use crate::reporting::lag::Lag;
use crate::reporting::outcome::Failure;
use crate::reporting::record::{Recorder, Running, Timing};
use simulator_api::Reply;

/// One request/reply exchange; the real one is [`Connection`], tests use a fake
/// that takes virtual time.
pub trait Exchange: Send + 'static {
    fn send_element(
        &mut self,
        body: Body,
        timeout: Duration,
    ) -> impl Future<Output = Result<Reply, Failure>> + Send;

    /// How long the last exchange's new connection took to open; `None` when it
    /// used one already open.
    fn take_connect_time(&mut self) -> Option<Duration> {
        None
    }
}

impl Exchange for Connection {
    fn send_element(
        &mut self,
        body: Body,
        timeout: Duration,
    ) -> impl Future<Output = Result<Reply, Failure>> + Send {
        Connection::send_element(self, body, timeout)
    }

    fn take_connect_time(&mut self) -> Option<Duration> {
        Connection::take_connect_time(self)
    }
}

/// Everything a client needs, shared by all of them.
#[derive(Debug)]
pub struct RunState {
    pub plan: LoadPlan,
    pub recorder: Recorder,
    pub start: Instant,
    pub deadline: Option<Instant>,
    pub cancel: CancellationToken,
    /// The open loop's timetable; `None` in a closed loop.
    schedule: Option<Schedule>,
    seed: u64,
    in_flight: AtomicU64,
    /// The retry budget every client draws on (`--retry-budget`).
    budget: Option<RetryBudget>,
    /// `--precise-pacing`'s timer, which every client waits on
    /// (`platform/precise_timer.rs`); `None`: tokio's.
    precise: Option<crate::platform::SharedPacer>,
    /// The next request's key, when requests may be retried: from a random
    /// start, so shards and runs do not share keys.
    request_keys: AtomicU64,
}

impl RunState {
    /// A run of `plan` starting now. `intervals`: keep per-second tallies for
    /// `--series` and the report's seconds.
    #[cfg(test)]
    pub fn new(plan: LoadPlan, cancel: CancellationToken, intervals: bool) -> Self {
        let start = Instant::now();
        let mut recorder = Recorder::new(plan.late_after, intervals);
        if let Some(stages) = &plan.load.stages {
            let clock = crate::reporting::record::StageClock::of(stages, start);
            recorder = recorder.with_stages(clock);
        }
        Self::starting(plan, cancel, recorder, start)
    }

    /// A run of `plan` whose clock starts at `start` (which may be past: a shard
    /// that came up after `--start-at`), counting into `recorder`.
    pub fn starting(
        plan: LoadPlan,
        cancel: CancellationToken,
        recorder: Recorder,
        start: Instant,
    ) -> Self {
        let deadline = plan.stop.duration.map(|d| start + d);
        let seed = plan.shared_seed().unwrap_or_else(rand::random);
        let schedule =
            match (plan.load.pacing, deadline, &plan.load.stages) {
                (Pacing::Open { arrivals, .. }, Some(end), Some(stages)) => Some(
                    Schedule::planned(start, end, stages, arrivals, seed, plan.shard()),
                ),
                (Pacing::Open { rate, arrivals }, Some(end), None) => Some(Schedule::new(
                    start,
                    end,
                    rate,
                    arrivals,
                    seed,
                    plan.shard(),
                )),
                _ => None,
            };
        let budget = plan.load.retry.budget_percent.map(RetryBudget::new);
        let precise = plan.precise_pacing.map(|slack| {
            crate::platform::SharedPacer::start(slack)
                .map_err(|e| {
                    eprintln!("sim-clients: no precise timer ({e}); pacing by tokio's timer")
                })
                .ok()
        });
        Self {
            precise: precise.flatten(),
            recorder,
            plan,
            start,
            deadline,
            cancel,
            budget,
            schedule,
            seed,
            in_flight: AtomicU64::new(0),
            // Odd, below 2^62: never 0 (no key) in any run's count of requests.
            request_keys: AtomicU64::new((rand::random::<u64>() >> 2) | 1),
        }
    }

    /// Completes when the drain after the planned duration has lasted
    /// `max_drain`: replies still outstanding then are given up on. Never, in a
    /// run without a duration.
    async fn drain_over(&self) {
        match self.deadline {
            Some(deadline) => tokio::time::sleep_until(deadline + self.plan.max_drain).await,
            None => std::future::pending().await,
        }
    }

    /// Sends one element, unless the drain limit passes first (then `None`, and
    /// the request is counted as unanswered).
    async fn send<E: Exchange>(
        &self,
        exchange: &mut E,
        body: Body,
    ) -> Option<Result<Reply, Failure>> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        let outcome = tokio::select! {
            outcome = exchange.send_element(body, self.plan.load.timeout) => Some(outcome),
            () = self.drain_over() => {
                self.recorder.unanswered();
                None
            }
        };
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        // A reply woke the driver: sends due by now leave in this wake-up.
        if let Some(precise) = &self.precise {
            precise.nudge();
        }
        outcome
    }

    /// Sleeps until `at`: on tokio's timer (1 ms ticks), or with
    /// `--precise-pacing` on the run's precise timer.
    async fn pace_until(&self, at: Instant) {
        if let Some(precise) = &self.precise {
            return precise.sleep_until(at).await;
        }
        tokio::time::sleep_until(at).await;
    }

    /// Whether `at` is after the planned duration (in the drain).
    fn after_window(&self, at: Instant) -> bool {
        self.deadline.is_some_and(|d| at > d)
    }

    /// Waits until `due` and returns how late the wake-up was, or `None` when the
    /// run ends first. A client with nothing more to send waits out the deadline
    /// too, so the run's elapsed time is the planned duration.
    async fn wait_until(&self, due: Instant) -> Option<Duration> {
        let now = Instant::now();
        // Already due: go at once. tokio's timer would round even a zero sleep up
        // to its next 1 ms tick, which capped a think-time-0 client at ~1,000
        // requests a second and made an open loop that fell behind later still.
        if due <= now {
            let over = self.cancel.is_cancelled() || self.deadline.is_some_and(|d| now >= d);
            return (!over).then(|| now.saturating_duration_since(due));
        }
        let until = self.deadline.map_or(due, |d| due.min(d));
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => None,
            () = self.pace_until(until) => {
                let now = Instant::now();
                let over = self.deadline.is_some_and(|d| now >= d);
                (!over).then(|| now.saturating_duration_since(due))
            }
        }
    }

    /// The open loop's wait: until `due`, which the timetable keeps inside the
    /// window, or `None` on cancel. Unlike [`RunState::wait_until`] it does not
    /// give up at the deadline: a send due at 1.9995 s of a 2 s run still leaves
    /// when the timer wakes at 2.0005 s, so the shards of a split run send every
    /// send of the timetable.
    async fn wait_for_send(&self, due: Instant) -> Option<Duration> {
        if self.cancel.is_cancelled() {
            return None;
        }
        if due > Instant::now() {
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => return None,
                () = self.pace_until(due) => {}
            }
        }
        Some(Instant::now().saturating_duration_since(due))
    }

    /// Whether a send `lag` behind its due time is missed: the window has closed
    /// and the send was not on time (it waited for a free connection). It is
    /// counted, not sent, so the run ends with its window.
    fn missed(&self, lag: Duration) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d) && lag > self.plan.late_after
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Whether a request may try again after `outcome`, its `retries` so far:
    /// the failure is one a retry may cure, retries are left, and the budget
    /// allows one (which then counts it).
    fn may_retry(&self, outcome: &Result<Reply, Failure>, retries: u32) -> bool {
        let curable = match outcome {
            Ok(_) => false,
            Err(Failure::Status(status)) => *status >= 500,
            // The driver's own limit: the retry would fail alike, and say nothing
            // of the server.
            Err(Failure::FileLimit) => false,
            Err(Failure::Connect | Failure::ConnectTimeout | Failure::Timeout | Failure::Io) => {
                true
            }
        };
        curable
            && retries < self.plan.load.retry.retries
            && self
                .budget
                .as_ref()
                .is_none_or(|b| b.try_retry(Instant::now()))
    }

    /// Sends one request: its first attempt, then its retries with their backoff,
    /// until one succeeds, one fails for good, or the run ends. Records every
    /// attempt; returns the last attempt's outcome (`None` when the run ended
    /// first), with when that attempt left.
    async fn request<E: Exchange>(
        &self,
        exchange: &mut E,
        mut body: Body,
        rng: &mut SmallRng,
        first: Timing,
        first_left: Instant,
    ) -> Option<()> {
        if self.plan.load.retry.retries > 0 {
            body.request_key = Some(self.request_keys.fetch_add(1, Ordering::Relaxed));
        }
        if let Some(budget) = &self.budget {
            budget.first_attempt(first_left);
        }
        let first_due = first_left - first.from_due;
        let mut left = first_left;
        let mut timing = first;
        let mut retries = 0u32;
        loop {
            let outcome = self.send(exchange, body).await?;
            // Counted with the attempt, as `requests_sent` counts it: a retry the
            // run's end cut off (in its backoff, or before its answer) is neither.
            if retries > 0 {
                self.recorder.retry();
            }
            let replied = Instant::now();
            let attempt = Timing {
                after_window: self.after_window(replied),
                from_due: timing.from_due + (replied - left),
                from_send: timing.from_send.map(|_| replied - left),
                connect: exchange.take_connect_time(),
                ..timing
            };
            self.recorder.record(&outcome, attempt);
            if outcome.is_ok() {
                self.recorder.request_done(replied - first_due);
                return Some(());
            }
            if !self.may_retry(&outcome, retries) {
                self.recorder.gave_up();
                return Some(());
            }
            retries += 1;
            let wait = self.plan.load.retry.backoff.delay(retries, rng);
            let due = Instant::now() + wait;
            self.wait_until(due).await?;
            left = Instant::now();
            // A retry's latency counts from its own send; its lag is not the
            // schedule's.
            timing = Timing {
                from_due: Duration::ZERO,
                from_send: timing.from_send.map(|_| Duration::ZERO),
                lag: None,
                after_window: false,
                connect: None,
            };
        }
    }

    fn payload_rng(&self, index: usize) -> SmallRng {
        payload_rng(self.seed, index)
    }

    /// Client `index`'s draws of backoff jitter: a stream of its own, so retries
    /// do not shift the payload sizes of the requests after them.
    fn jitter_rng(&self, index: usize) -> SmallRng {
        SmallRng::seed_from_u64(self.seed.rotate_left(17) ^ !(index as u64))
    }
}

/// The generator of client `index`'s payload sizes in a run seeded with `seed`:
/// each client draws its own stream, so a client's sizes do not depend on how
/// the others' requests interleave.
pub fn payload_rng(seed: u64, index: usize) -> SmallRng {
    SmallRng::seed_from_u64(seed ^ (index as u64).rotate_left(32))
}

impl Running for RunState {
    fn started(&self) -> Instant {
        self.start
    }

    fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    fn draining(&self) -> Option<(Duration, Duration)> {
        let deadline = self.deadline?;
        let now = Instant::now();
        (now > deadline).then(|| (now - deadline, self.plan.max_drain))
    }

    fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    fn stage_at(&self, t_s: f64) -> Option<String> {
        let plan = self.plan.load.stages.as_ref()?;
        Some(plan.stages[plan.stage_at(t_s)].name.clone())
    }
}

/// Starts every client of the plan, each with the exchange `connect(index)` makes,
/// and returns when all have stopped.
pub async fn run_clients<E: Exchange>(shared: Arc<RunState>, mut connect: impl FnMut(usize) -> E) {
    let mut clients = JoinSet::new();
    // Global ids: a shard runs its own, so sizes and ramp-up match the unsplit run.
    for index in shared.plan.shard().ids(shared.plan.load.clients) {
        let exchange = connect(index);
        match shared.plan.load.pacing {
            Pacing::Closed { .. } => clients.spawn(closed(Arc::clone(&shared), index, exchange)),
            Pacing::Open { .. } => clients.spawn(open(Arc::clone(&shared), index, exchange)),
        };
    }
    while let Some(joined) = clients.join_next().await {
        if let Err(err) = joined {
            // A client task can only fail by panicking: a bug, but not one that
            // should lose everything the other clients measured.
            eprintln!("sim-clients: a client task failed: {err}");
        }
    }
}

/// Closed-loop client number `index`.
async fn closed<E: Exchange>(shared: Arc<RunState>, index: usize, mut exchange: E) {
    let plan = &shared.plan;
    let Pacing::Closed {
        think_time,
        ramp_up,
    } = plan.load.pacing
    else {
        return;
    };
    let mut rng = shared.payload_rng(index);
    let mut jitter = shared.jitter_rng(index);
    let mut due = shared.start + ramp_up.mul_f64(index as f64 / plan.load.clients.max(1) as f64);
    let mut sent = 0u64;
    while plan.stop.requests_per_client.is_none_or(|max| sent < max) {
        // A plan's client waits for the level to let it in.
        if let Some(stages) = &plan.load.stages {
            let from_s = (due - shared.start).as_secs_f64();
            let Some(in_s) = stages.first_above(index, from_s) else {
                break;
            };
            due = due.max(shared.start + Duration::from_secs_f64(in_s));
        }
        let Some(lag) = shared.wait_until(due).await else {
            break;
        };
        let body = plan.body(&mut rng);
        let began = Instant::now();
        if sent == 0 {
            shared.recorder.first_send(lag);
        }
        let first = Timing::on_time(Duration::ZERO, (sent > 0).then_some(Lag::timer(lag)));
        let answered = shared
            .request(&mut exchange, body, &mut jitter, first, began)
            .await;
        if answered.is_none() {
            break;
        }
        sent += 1;
        due = Instant::now() + think_time;
    }
    // A plan's run lasts the plan, though its last stages hold no clients.
    if let (Some(_), Some(deadline)) = (&plan.load.stages, shared.deadline) {
        shared.wait_until(deadline).await;
    }
}

/// Open-loop connection number `index`: takes the earliest send not yet taken.
async fn open<E: Exchange>(shared: Arc<RunState>, index: usize, mut exchange: E) {
    let Some(schedule) = shared.schedule.as_ref() else {
        return;
    };
    let mut rng = shared.payload_rng(index);
    let mut jitter = shared.jitter_rng(index);
    while let Some(due) = schedule.claim() {
        // A send claimed after it was due waited that long for this connection
        // to be free; whatever lag comes after is the timer's.
        let claimed = Instant::now();
        let Some(lag) = shared.wait_for_send(due).await else {
            return;
        };
        let connection = claimed.saturating_duration_since(due).min(lag);
        let lag_parts = Lag {
            connection,
            timer: lag - connection,
        };
        if shared.missed(lag) {
            shared.recorder.missed();
            continue;
        }
        let body = shared.plan.body(&mut rng);
        let sent = Instant::now();
        let first = Timing {
            from_due: sent - due,
            from_send: Some(Duration::ZERO),
            lag: Some(lag_parts),
            after_window: false,
            connect: None,
        };
        let answered = shared
            .request(&mut exchange, body, &mut jitter, first, sent)
            .await;
        if answered.is_none() {
            return;
        }
    }
    if let Some(deadline) = shared.deadline {
        shared.wait_until(deadline).await;
    }
}

#[cfg(test)]
mod tests;
