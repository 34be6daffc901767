//! `sim-clients knee`: the highest rate (or client count) at which the bars
//! hold, found for you. Steps spaced by a ratio climb until a step fails, then
//! bisection closes in between the last pass and the first fail until they
//! are within the precision asked. Every step is a run of its own, judged by
//! the bars of `--threshold` (`thresholds/`), its row kept. Beside each row
//! stands what the server's `/stats` says of the step: its blocked share, its
//! CPU, its runtime workers' busy share, and what its model names as the
//! limit. `table.rs` lays the steps out, `chart.rs` draws latency against
//! the level (vegeta's "scalability profile", as a line per percentile).
//! Before each step the server's queue from the last has drained, as a
//! sweep's steps wait (`sweep::settle`).
//!
//! aiperf's planner searches the same way (a highest rate meeting an SLO);
//! written here because the search is a few lines and each step is this
//! driver's own run.

#[cfg(feature = "charts")]
pub mod chart;
pub mod table;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::plan::LoadPlan;
use crate::reporting::judged::Judged;
use crate::thresholds::Threshold;
use simulator_api::client;
use simulator_api::load::Unit;
use simulator_api::{Load, Stats};

/// What to search.
#[derive(Debug, Clone)]
pub struct KneePlan {
    pub target: String,
    pub bars: Vec<Threshold>,
    /// Rates (open loop) or clients (closed loop).
    pub unit: Unit,
    pub from: f64,
    pub to: f64,
    pub ratio: f64,
    /// Bisection stops when (fail - pass) / pass is at most this.
    pub precision: f64,
    pub step: Duration,
    /// Open loop: the connections; closed: each client's think time.
    pub connections: usize,
    pub think_time: Duration,
}

/// What the server's `/stats` said of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerAtStep {
    /// Requests that waited for a permit, of those started.
    pub blocked_share: f64,
    /// The server process's CPU over the step, of its cores.
    pub cpu_share: Option<f64>,
    /// Its runtime workers' busy share.
    pub runtime_busy_share: f64,
    pub cores: usize,
    /// The model's capacity and its limit, in its words.
    pub model_capacity_per_s: Option<f64>,
    pub limited_by: String,
}

/// One step of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeStep {
    /// The rate or the clients.
    pub level: f64,
    pub passed: bool,
    pub offered_per_s: f64,
    pub achieved_per_s: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub errors: u64,
    pub sends_late: u64,
    pub verdicts: Vec<Judged>,
    pub server: Option<ServerAtStep>,
}

/// The search, step by step, and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeReport {
    pub target: String,
    pub unit: Unit,
    pub bars: Vec<String>,
    pub step_s: f64,
    /// In the order run.
    pub steps: Vec<KneeStep>,
    /// The highest level that passed; `None` when even the first failed.
    pub knee: Option<f64>,
    /// The lowest that failed; `None` when every level up to `to` passed.
    pub first_fail: Option<f64>,
}

/// Why a search could not be made.
#[derive(Debug, thiserror::Error)]
pub enum KneeError {
    #[error("--ratio must be above 1 (steps climb by it)")]
    Ratio,
    #[error("--precision must be above 0 and below 1")]
    Precision,
    #[error("--from must be above 0 and at most --to")]
    Range,
    #[error("a step's load: {0}")]
    Load(String),
    #[error(transparent)]
    Run(#[from] crate::RunError),
    #[error(transparent)]
    Settle(#[from] crate::sweep::SweepError),
}

/// How long a step waits for the last one's queue to drain at the server.
const SETTLE_WITHIN: Duration = Duration::from_secs(60);

impl KneePlan {
    pub fn validate(&self) -> Result<(), KneeError> {
        if !(self.ratio > 1.0 && self.ratio.is_finite()) {
            return Err(KneeError::Ratio);
        }
        if !(self.precision > 0.0 && self.precision < 1.0) {
            return Err(KneeError::Precision);
        }
        if !(self.from > 0.0 && self.from <= self.to) {
            return Err(KneeError::Range);
        }
        Ok(())
    }

    /// The run of one step at `level`.
    fn step_plan(&self, level: f64) -> Result<LoadPlan, KneeError> {
        let duration = humantime::format_duration(self.step).to_string();
        let words: Vec<String> = match self.unit {
            Unit::Rate => vec![
                "--rate".into(),
                format!("{level}"),
                "--n".into(),
                self.connections.to_string(),
            ],
            Unit::Clients => vec![
                "--n".into(),
                format!("{}", level as usize),
                "--think-time".into(),
                humantime::format_duration(self.think_time).to_string(),
            ],
        }
        .into_iter()
        .chain(["--duration".into(), duration.replace(' ', "")])
        .collect();
        let load = Load::parse(&words).map_err(|e| KneeError::Load(e.to_string()))?;
        let mut plan = LoadPlan::new(load, &self.target);
        // An overloaded step's queue drains within one more step, or is given up.
        plan.max_drain = self.step;
        Ok(plan)
    }

    /// A level as the unit counts it: clients are whole.
    fn level(&self, x: f64) -> f64 {
        match self.unit {
            Unit::Clients => x.round().max(1.0),
            Unit::Rate => (x * 10.0).round() / 10.0,
        }
    }
}

/// The levels to try, one at a time: climbs by `ratio` from `from` until a
/// fail (or `to`), then bisects (geometrically) between the highest pass and
/// the lowest fail until they are within `precision`.
#[derive(Debug, Clone)]
pub struct Search {
    plan: KneePlan,
    pass: Option<f64>,
    fail: Option<f64>,
    next: Option<f64>,
}

impl Search {
    pub fn new(plan: &KneePlan) -> Self {
        Search {
            next: Some(plan.level(plan.from)),
            plan: plan.clone(),
            pass: None,
            fail: None,
        }
    }

    /// The level to run next; `None` once the knee is found.
    pub fn next(&self) -> Option<f64> {
        self.next
    }

    /// What the level run last gave.
    pub fn record(&mut self, passed: bool) {
        let Some(level) = self.next else {
            return;
        };
        if passed {
            self.pass = Some(level);
        } else {
            self.fail = Some(level);
        }
        let plan = &self.plan;
        self.next = match (self.pass, self.fail) {
            (Some(lo), None) if lo < plan.to => Some(plan.level((lo * plan.ratio).min(plan.to))),
            (Some(lo), Some(hi)) => {
                let mid = plan.level((lo * hi).sqrt());
                let close = (hi - lo) / lo <= plan.precision;
                (!close && mid > lo && mid < hi).then_some(mid)
            }
            _ => None,
        };
    }

    /// The highest level that passed and the lowest that failed.
    pub fn found(&self) -> (Option<f64>, Option<f64>) {
        (self.pass, self.fail)
    }
}

/// Runs the search against the server; `progress` hears each step's row.
pub async fn run(
    plan: &KneePlan,
    cancel: CancellationToken,
    mut progress: impl FnMut(&KneeStep),
) -> Result<KneeReport, KneeError> {
    plan.validate()?;
    let mut steps = Vec::new();
    let mut search = Search::new(plan);
    while let Some(level) = search.next() {
        if cancel.is_cancelled() {
            break;
        }
        // A failed step leaves a queue at the server: the next starts without it.
        crate::sweep::settle(&plan.target, SETTLE_WITHIN).await?;
        let step = run_step(&plan.step_plan(level)?, level, &plan.bars, cancel.clone()).await?;
        progress(&step);
        search.record(step.passed);
        steps.push(step);
    }
    let (knee, first_fail) = search.found();
    Ok(KneeReport {
        target: plan.target.clone(),
        unit: plan.unit,
        bars: plan.bars.iter().map(|b| b.text.clone()).collect(),
        step_s: plan.step.as_secs_f64(),
        steps,
        knee,
        first_fail,
    })
}

async fn run_step(
    plan: &LoadPlan,
    level: f64,
    bars: &[Threshold],
    cancel: CancellationToken,
) -> Result<KneeStep, KneeError> {
    let before = client::stats(&plan.target).await.ok();
    let began = std::time::Instant::now();
    let outputs = crate::Outputs {
        seconds: bars
            .iter()
            .any(|b| matches!(b.scope, crate::thresholds::Scope::Window(_))),
        ..crate::Outputs::default()
    };
    let report = crate::run_with(plan, cancel, outputs).await?;
    let after = client::stats(&plan.target).await.ok();
    let wall_ns = began.elapsed().as_nanos() as f64;
    let verdicts = crate::thresholds::judge::judge(bars, &report).map_err(KneeError::Load)?;
    let secs = report.window_ns as f64 / 1e9;
    Ok(KneeStep {
        level,
        passed: verdicts.iter().all(|v| v.passed),
        offered_per_s: (report.first_attempts + report.sends_missed) as f64 / secs.max(1e-9),
        achieved_per_s: report.throughput_per_s,
        p50_ns: report.summary.latency.p50_ns,
        p99_ns: report.summary.latency.p99_ns,
        p999_ns: report.summary.latency.p999_ns,
        errors: report.errors,
        sends_late: report.sends_late + report.sends_missed,
        verdicts,
        server: before.zip(after).map(|(b, a)| server_at(&b, &a, wall_ns)),
    })
}

/// The server over a step, of its `/stats` before and after, `wall_ns` apart.
fn server_at(before: &Stats, after: &Stats, wall_ns: f64) -> ServerAtStep {
    let since = after.counts.since(&before.counts);
    let started = since.requests_started.max(1) as f64;
    let cpu = after
        .process_cpu_ns
        .zip(before.process_cpu_ns)
        .map(|(a, b)| a.saturating_sub(b) as f64);
    ServerAtStep {
        blocked_share: since.requests_blocked as f64 / started,
        cpu_share: cpu
            .filter(|_| wall_ns > 0.0)
            .map(|ns| ns / wall_ns / after.machine.cores.max(1) as f64),
        runtime_busy_share: after.runtime.busy_share,
        cores: after.machine.cores,
        model_capacity_per_s: after.model.capacity_per_s,
        limited_by: after.model.limited_by.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(unit: Unit, from: f64) -> KneePlan {
        KneePlan {
            target: String::new(),
            bars: Vec::new(),
            unit,
            from,
            to: 100_000.0,
            ratio: 2.0,
            precision: 0.05,
            step: Duration::from_secs(1),
            connections: 1,
            think_time: Duration::from_secs(1),
        }
    }

    fn found(plan: &KneePlan, limit: f64) -> (Option<f64>, Option<f64>, Vec<f64>) {
        let mut search = Search::new(plan);
        let mut tried = Vec::new();
        while let Some(level) = search.next() {
            tried.push(level);
            search.record(level <= limit);
        }
        let (pass, fail) = search.found();
        (pass, fail, tried)
    }

    #[test]
    fn the_search_climbs_by_its_ratio_then_bisects_to_its_precision() {
        let (pass, fail, tried) = found(&plan(Unit::Rate, 10.0), 137.0);
        let (pass, fail) = (pass.unwrap(), fail.unwrap());
        assert!(pass <= 137.0 && fail > 137.0, "{pass} {fail}");
        assert!((fail - pass) / pass <= 0.05, "{pass} {fail}");
        assert_eq!(tried[..5], [10.0, 20.0, 40.0, 80.0, 160.0], "{tried:?}");
        assert!(tried.len() <= 10, "{tried:?}");
    }

    #[test]
    fn clients_are_whole_and_the_ends_are_said() {
        let (pass, fail, tried) = found(&plan(Unit::Clients, 1.0), 13.0);
        assert_eq!((pass, fail), (Some(13.0), Some(14.0)), "{tried:?}");
        assert!(tried.iter().all(|l| l.fract() == 0.0), "{tried:?}");
        let (pass, fail, _) = found(&plan(Unit::Rate, 10.0), 1.0);
        assert_eq!((pass, fail), (None, Some(10.0)), "even the first failed");
        let mut capped = plan(Unit::Rate, 10.0);
        capped.to = 50.0;
        let (pass, fail, tried) = found(&capped, 1e9);
        assert_eq!((pass, fail), (Some(50.0), None), "{tried:?}");
    }
}
