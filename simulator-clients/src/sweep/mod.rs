//! The seed's investigation as one command: the same closed-loop load at several
//! client counts, repeated, with the server's counters reset before each run and,
//! with a fix, the fix's `PUT /admin/config` body for that client count applied
//! before each step. Owns the sweep's plan, its runner and its figures;
//! `counts.rs` names the seed's counts as the sweep publishes them, `table.rs`
//! lays the figures out as text, `chart.rs` as an SVG and PNG, `seed.rs` holds
//! the seed's own figures to put beside them, and `shard.rs` splits a sweep over
//! processes.
//!
//! Every figure of a run comes from the server's own counters over the run's
//! window (what the seed's count.d saw), per minute, plus the client's latency and
//! the server's CPU from `GET /stats`. Beside them stands what the server's own
//! model predicts (`/stats.model`): the capacity by Little's law, and closed-loop
//! clients offering clients / (think time + unblocked lifetime).

#[cfg(feature = "charts")]
pub mod chart;
pub mod counts;
#[cfg(feature = "charts")]
pub mod seed;
pub mod shard;
pub mod table;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use simulator_api::{Fix, Model, SettingsUpdate, Stats};
use tokio_util::sync::CancellationToken;

use crate::plan::{LoadPlan, Pacing, Stop};
use crate::reporting::report::Report;
use crate::sweep::counts::PerMinute;
use crate::sweep::shard::ShardSchedule;
use simulator_api::client::{self, EndpointError};

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    pub target: String,
    pub clients: Vec<usize>,
    pub duration: Duration,
    pub repeat: usize,
    pub think_time: Duration,
    /// Also run every step again after this fix: `Some(None)` for the one the
    /// server's model names, `Some(Some(name))` for one of the scenario's fixes.
    pub fix: Option<Option<String>>,
    /// Switch the server to this bundled scenario first (and back after).
    pub scenario: Option<String>,
    /// This process's share of a sweep split over several (`shard.rs`).
    pub together: Option<ShardSchedule>,
}

/// Why a sweep stopped.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("nothing to sweep: give client counts, e.g. --n 1,15,125,135,1000")]
    NoSteps,
    #[error("--repeat must be at least 1")]
    NoRepeats,
    #[error("--n {0}: a step needs at least one client")]
    ZeroClients(usize),
    #[error("fix: {0}")]
    Fix(String),
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    #[error(transparent)]
    Run(#[from] crate::RunError),
    #[error("the server still has work in flight after {0:?}: {1} requests, {2} persists")]
    NotSettled(Duration, u64, u64),
    #[error("--n {clients}: shard {shard} would have no clients; every step needs at least as many clients as shards")]
    EmptyShard {
        clients: usize,
        shard: crate::plan::shard::Shard,
    },
    #[error("a sharded sweep needs --start-at: the shards meet at each step's start by the clock")]
    NoStartAt,
    #[error("a sharded sweep cannot switch the scenario (the shards would read the server before and after): start the server with `serve --scenario NAME`")]
    ShardedScenario,
}

/// The figures of one run, or the mean or the spread of several.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// The seed's counts, per minute (`counts.rs` names them).
    #[serde(flatten)]
    pub per_minute: PerMinute,
    /// Blocked / (blocked + non blocked), 0 to 1.
    pub blocked_share: f64,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    /// Absent when the server's OS does not report its CPU time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_percent: Option<f64>,
    pub client_errors: f64,
}

/// One client count: every repeat, their mean, and max minus min.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    pub clients: usize,
    pub permits: usize,
    /// min(offered, capacity), per minute.
    pub predicted_per_min: f64,
    pub runs: Vec<Figures>,
    pub mean: Figures,
    pub spread: Figures,
}

/// A whole sweep, the fix included when asked for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepReport {
    /// The command line that ran the sweep, to rerun it.
    pub command: Option<String>,
    pub target: String,
    pub duration_s: f64,
    pub repeat: usize,
    pub think_time_s: f64,
    pub permits: usize,
    /// The seed's fix as permits = this x clients, when the fix scales permits.
    pub fix_per_client: Option<usize>,
    /// The fix the second phase applied.
    #[serde(default)]
    pub fix: Option<Fix>,
    /// The scenario the server ran.
    #[serde(default)]
    pub scenario: Option<String>,
    pub persist_mean_ms: f64,
    pub lifetime_unblocked_ms: f64,
    /// The server's model: the most the request path passes, per second (Little's
    /// law; null when nothing bounds it).
    pub capacity_per_s: Option<f64>,
    /// Which part sets that capacity, as the server's model says.
    #[serde(default)]
    pub limited_by: Option<String>,
    /// The client count whose offered load equals the capacity: beyond it nearly
    /// every request must wait.
    pub saturation_clients: Option<f64>,
    pub before: Vec<Step>,
    pub after: Option<Vec<Step>>,
    /// A sharded sweep's shard: the server figures are the whole load's, the
    /// latency this shard's clients'.
    #[serde(default)]
    pub shard: Option<crate::plan::shard::ShardInfo>,
}

impl SweepPlan {
    pub fn validate(&self) -> Result<(), SweepError> {
        if self.clients.is_empty() {
            return Err(SweepError::NoSteps);
        }
        if self.repeat == 0 {
            return Err(SweepError::NoRepeats);
        }
        if let Some(&n) = self.clients.iter().find(|&&n| n == 0) {
            return Err(SweepError::ZeroClients(n));
        }
        if let Some(t) = &self.together {
            let shard = t.shard.shard();
            if let Some(&clients) = self.clients.iter().find(|&&n| shard.share(n) == 0) {
                return Err(SweepError::EmptyShard { clients, shard });
            }
        }
        Ok(())
    }

    /// Whether this process changes the server (settles, configures, resets):
    /// always, unless it is a shard other than 0.
    fn leads(&self) -> bool {
        self.together.is_none_or(|t| t.leads())
    }

    /// Step `i`'s load: the whole of it, or this shard's share starting at the
    /// step's time.
    fn load(&self, clients: usize, i: u32) -> LoadPlan {
        let mut plan = self.whole_load(clients);
        if let Some(t) = &self.together {
            plan.shard = Some(t.shard);
            plan.start_at = Some(t.step_start(i, self.duration));
            plan.max_drain = t.max_drain();
        }
        plan
    }

    fn whole_load(&self, clients: usize) -> LoadPlan {
        let mut plan = LoadPlan::default();
        plan.target.clone_from(&self.target);
        plan.load.clients = clients;
        plan.load.pacing = Pacing::Closed {
            think_time: self.think_time,
            ramp_up: Duration::ZERO,
        };
        plan.stop = Stop {
            duration: Some(self.duration),
            requests_per_client: None,
        };
        plan
    }
}

/// The fix to apply, chosen among the server's: the named one, or the model's.
/// A fix on the clients' side (retry flags) is refused: a sweep's clients wait
/// for each reply and do not retry, so there is nothing for it to change; and
/// so is one outside the service (a command on the machine), which a sweep of
/// the server cannot apply.
fn choose_fix(stats: &Stats, wanted: &Option<String>) -> Result<Fix, SweepError> {
    let fix =
        match wanted {
            None => stats.model.fix.clone().ok_or_else(|| {
                SweepError::Fix(format!("scenario {} offers no fix", stats.scenario))
            })?,
            Some(name) => stats
                .fixes
                .iter()
                .chain(stats.model.fix.as_ref())
                .find(|f| &f.name == name)
                .cloned()
                .ok_or_else(|| {
                    let names: Vec<&str> = stats.fixes.iter().map(|f| f.name.as_str()).collect();
                    SweepError::Fix(format!(
                        "scenario {} has no fix named {name}; it offers {}",
                        stats.scenario,
                        if names.is_empty() {
                            "none".to_owned()
                        } else {
                            names.join(", ")
                        }
                    ))
                })?,
        };
    if !fix.load.is_empty() {
        return Err(SweepError::Fix(format!(
            "{} is a fix on the clients' side ({}), and a sweep's clients do not retry: compare it with `system-simulator demo --scenario {} --fix {}` or `workshop figures {}`",
            fix.name,
            fix.load.join(" "),
            stats.scenario,
            fix.name,
            stats.scenario
        )));
    }
    if let Some(command) = &fix.outside {
        return Err(SweepError::Fix(format!(
            "{} is a fix outside the service (`{command}`), and a sweep changes the server only: run it yourself between two sweeps, or compare it with `system-simulator demo --scenario {} --fix {}` or `workshop figures {}`",
            fix.name, stats.scenario, fix.name, stats.scenario
        )));
    }
    Ok(fix)
}

/// Runs the sweep; `progress` hears of each run as it starts.
pub async fn run(
    plan: &SweepPlan,
    cancel: CancellationToken,
    mut progress: impl FnMut(&str),
) -> Result<SweepReport, SweepError> {
    plan.validate()?;
    if plan.together.is_some() && plan.scenario.is_some() {
        return Err(SweepError::ShardedScenario);
    }
    // The largest step's connections, checked before the first step runs: each
    // step's run checks its own too, but only when its turn comes.
    let largest = plan
        .clients
        .iter()
        .map(|&n| plan.load(n, 0).local_clients())
        .max();
    crate::load::descriptors_for(largest.unwrap_or(0)).map_err(crate::RunError::from)?;
    let found = client::stats(&plan.target).await?.scenario;
    if let Some(name) = &plan.scenario {
        client::switch_scenario(&plan.target, name).await?;
    }
    let outcome = sweep_in_force(plan, cancel, &mut progress).await;
    // Put the server back in the scenario it was in, when it was switched.
    if plan.scenario.as_ref().is_some_and(|name| *name != found) {
        if let Err(err) = client::switch_scenario(&plan.target, &found).await {
            eprintln!("sim-clients: could not switch the server back to {found}: {err}");
        }
    }
    outcome
}

/// The sweep against the scenario in force.
async fn sweep_in_force(
    plan: &SweepPlan,
    cancel: CancellationToken,
    progress: &mut impl FnMut(&str),
) -> Result<SweepReport, SweepError> {
    let stats = client::stats(&plan.target).await?;
    let think_s = plan.think_time.as_secs_f64();
    let fix = match &plan.fix {
        Some(wanted) => Some(choose_fix(&stats, wanted)?),
        None => None,
    };
    // What the sweep changes, so it can put it back: every key any fix sets.
    let restore = fix
        .as_ref()
        .map(|f| original_values(&stats, f))
        .transpose()?;

    let mut phases = vec![(None, Vec::new())];
    if let Some(fix) = &fix {
        phases.push((Some(fix), Vec::new()));
    }
    // Steps counted over every phase, client count and repeat: a sharded sweep's
    // clock (`shard.rs`).
    let mut step_index = 0u32;
    let result = async {
        for (fix, steps) in &mut phases {
            for &clients in &plan.clients {
                let body = match fix {
                    Some(f) => f.config_for(clients).map_err(SweepError::Fix)?,
                    None => restore.clone().unwrap_or_default(),
                };
                let mut runs = Vec::with_capacity(plan.repeat);
                let mut permits = stats.config.permits;
                for round in 1..=plan.repeat {
                    if cancel.is_cancelled() {
                        break;
                    }
                    progress(&format!(
                        "{clients} clients{}, run {round}/{}",
                        fix.map_or(String::new(), |f| format!(", fix {}", f.name)),
                        plan.repeat
                    ));
                    let (figures, step_model, in_force) =
                        one_run(plan, clients, &body, &cancel, step_index).await?;
                    step_index += 1;
                    permits = in_force;
                    runs.push((figures, step_model));
                }
                let Some((_, step_model)) = runs.last().cloned() else {
                    break;
                };
                let predicted = step_model.predicted_per_s(clients, think_s) * 60.0;
                let figures = runs.into_iter().map(|(f, _)| f).collect();
                steps.push(step(clients, permits, predicted, figures));
            }
        }
        Ok::<(), SweepError>(())
    }
    .await;
    // Leave the server as the sweep found it, whatever happened.
    let restored = match &restore {
        Some(body) if plan.leads() => client::configure(&plan.target, body).await.map(|_| ()),
        _ => Ok(()),
    };
    result?;
    restored?;

    let mut phases = phases.into_iter().map(|(_, steps)| steps);
    let before = phases.next().unwrap_or_default();
    let after = phases.next();
    Ok(sweep_report(plan, &stats, fix, before, after))
}

/// The sweep's report: its plan, the server's model, and the steps measured.
fn sweep_report(
    plan: &SweepPlan,
    stats: &Stats,
    fix: Option<Fix>,
    before: Vec<Step>,
    after: Option<Vec<Step>>,
) -> SweepReport {
    let model = &stats.model;
    let think_s = plan.think_time.as_secs_f64();
    SweepReport {
        command: None,
        target: plan.target.clone(),
        duration_s: plan.duration.as_secs_f64(),
        repeat: plan.repeat,
        think_time_s: think_s,
        permits: stats.config.permits,
        fix_per_client: fix
            .as_ref()
            .and_then(|f| f.per_client.get("permits"))
            .and_then(|&k| usize::try_from(k).ok()),
        fix,
        scenario: Some(stats.scenario.clone()),
        persist_mean_ms: model.persist_mean_ns as f64 / 1e6,
        lifetime_unblocked_ms: model.lifetime_unblocked_ns as f64 / 1e6,
        capacity_per_s: model.capacity_per_s,
        limited_by: Some(model.limited_by.clone()),
        saturation_clients: model.saturation_at(think_s),
        before,
        after,
        shard: plan.together.map(|t| t.shard),
    }
}

/// The values now in force of every key `fix` sets, as an update that puts them back.
fn original_values(stats: &Stats, fix: &Fix) -> Result<SettingsUpdate, SweepError> {
    let sample = fix.config_for(1).map_err(SweepError::Fix)?;
    let keys = sample.keys();
    let current =
        serde_json::to_value(&stats.config).map_err(|e| SweepError::Fix(e.to_string()))?;
    let mut body = serde_json::Map::new();
    for key in keys {
        if let Some(v) = current.get(key) {
            body.insert(key.to_owned(), v.clone());
        }
    }
    serde_json::from_value(body.into()).map_err(|e| SweepError::Fix(e.to_string()))
}

/// Settles the server, applies `body`, zeroes its window and runs the load
/// (step `i` of the sweep). Returns the run's figures, the model in force for it
/// and its permits. A shard other than 0 leaves the server to shard 0.
async fn one_run(
    plan: &SweepPlan,
    clients: usize,
    body: &SettingsUpdate,
    cancel: &CancellationToken,
    i: u32,
) -> Result<(Figures, Model, usize), SweepError> {
    let load = plan.load(clients, i);
    let before = if plan.leads() {
        prepare(plan, body, load.start_at).await?
    } else {
        client::stats(&plan.target).await?
    };
    let mut report = crate::run(&load, cancel.clone(), false).await?;
    let after = client::stats(&plan.target).await?;
    if plan.together.is_some() {
        // Every shard counts from shard 0's reset before the step: the window
        // its own run measured may have begun before that reset.
        report.server = Some(after.counts);
    }
    let cpu_ns = before
        .process_cpu_ns
        .zip(after.process_cpu_ns)
        .map(|(b, a)| a.saturating_sub(b));
    Ok((figures(&report, cpu_ns), after.model, after.config.permits))
}

/// Shard 0's (or an unsplit sweep's) work before a step: settle the server,
/// apply the step's configuration, zero its counters. Returns the stats just
/// before the reset. A sharded step starts at its time whatever happens, so
/// there a server that does not settle in the gap gets a warning, not an error.
async fn prepare(
    plan: &SweepPlan,
    body: &SettingsUpdate,
    start_at: Option<std::time::SystemTime>,
) -> Result<Stats, SweepError> {
    let until = |at: std::time::SystemTime| {
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default()
    };
    if let (Some(at), Some(t)) = (start_at, &plan.together) {
        // The other shards read the last step's counters in the first half of
        // the gap (their drain is held to it): reset only in its last quarter.
        tokio::time::sleep(until(at).saturating_sub(t.step_gap / 4)).await;
    }
    let within = match start_at {
        Some(at) => until(at).saturating_sub(Duration::from_millis(100)),
        None => Duration::from_secs(60),
    };
    match settle(&plan.target, within).await {
        Err(SweepError::NotSettled(_, requests, persists)) if start_at.is_some() => eprintln!(
            "sim-clients: warning: the server still had {requests} requests and {persists} persists in flight at the step's start; a longer --step-gap gives it time"
        ),
        other => other?,
    }
    client::configure(&plan.target, body).await?;
    Ok(client::reset(&plan.target).await?)
}

/// Waits (bounded) until nothing is in flight, so a step does not start with the
/// last one's persists still holding permits (the knee's steps too).
pub async fn settle(target: &str, within: Duration) -> Result<(), SweepError> {
    let deadline = Instant::now() + within;
    loop {
        let stats = client::stats(target).await?;
        let busy = (
            stats.requests_in_flight,
            stats.persists_in_flight + stats.persists_queued,
        );
        if busy == (0, 0) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(SweepError::NotSettled(within, busy.0, busy.1));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn figures(report: &Report, cpu_ns: Option<u64>) -> Figures {
    let elapsed_ns = report.elapsed_ns.max(1) as f64;
    let server = report.server.unwrap_or_default();
    Figures {
        per_minute: PerMinute::of(&server, elapsed_ns / 60e9),
        blocked_share: server.blocked_share(),
        latency_p50_ms: report.summary.latency.p50_ns as f64 / 1e6,
        latency_p99_ms: report.summary.latency.p99_ns as f64 / 1e6,
        server_cpu_percent: cpu_ns.map(|ns| ns as f64 / elapsed_ns * 100.0),
        client_errors: report.errors as f64,
    }
}

impl Figures {
    /// Each figure of `runs` reduced by `reduce` (the mean, the range), figure by figure.
    fn across(runs: &[Figures], reduce: impl Fn(&[f64]) -> f64) -> Figures {
        let pick = |get: fn(&Figures) -> f64| reduce(&runs.iter().map(get).collect::<Vec<_>>());
        let cpu: Vec<f64> = runs.iter().filter_map(|f| f.server_cpu_percent).collect();
        let count = |i: usize| reduce(&runs.iter().map(|f| f.per_minute.0[i]).collect::<Vec<_>>());
        Figures {
            per_minute: PerMinute(std::array::from_fn(count)),
            blocked_share: pick(|f| f.blocked_share),
            latency_p50_ms: pick(|f| f.latency_p50_ms),
            latency_p99_ms: pick(|f| f.latency_p99_ms),
            server_cpu_percent: (!cpu.is_empty()).then(|| reduce(&cpu)),
            client_errors: pick(|f| f.client_errors),
        }
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

fn range(values: &[f64]) -> f64 {
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    if values.is_empty() {
        0.0
    } else {
        max - min
    }
}

fn step(clients: usize, permits: usize, predicted_per_min: f64, runs: Vec<Figures>) -> Step {
    Step {
        clients,
        permits,
        predicted_per_min,
        mean: Figures::across(&runs, mean),
        spread: Figures::across(&runs, range),
        runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(done: f64, errors: f64) -> Figures {
        let mut per_minute = PerMinute::default();
        per_minute.0[counts::REQUESTS_DONE] = done;
        Figures {
            per_minute,
            client_errors: errors,
            ..Figures::default()
        }
    }

    #[test]
    fn a_step_has_the_mean_and_the_range_of_its_runs() {
        let s = step(
            15,
            8,
            900.0,
            vec![
                run_with(880.0, 0.0),
                run_with(900.0, 2.0),
                run_with(890.0, 1.0),
            ],
        );
        assert_eq!(s.mean.per_minute.requests_done(), 890.0);
        assert_eq!(s.spread.per_minute.requests_done(), 20.0);
        assert_eq!(s.mean.client_errors, 1.0);
        assert_eq!(s.mean.server_cpu_percent, None, "no CPU figure, no column");
    }

    #[test]
    fn bad_plans_are_refused_before_any_load() {
        let plan = |clients: Vec<usize>, repeat| SweepPlan {
            target: "http://127.0.0.1:1".into(),
            clients,
            duration: Duration::from_secs(1),
            repeat,
            think_time: Duration::from_secs(1),
            fix: Some(None),
            scenario: None,
            together: None,
        };
        assert!(matches!(
            plan(vec![], 1).validate(),
            Err(SweepError::NoSteps)
        ));
        assert!(matches!(
            plan(vec![1], 0).validate(),
            Err(SweepError::NoRepeats)
        ));
        assert!(matches!(
            plan(vec![0], 1).validate(),
            Err(SweepError::ZeroClients(0))
        ));
        assert!(plan(vec![1, 15], 3).validate().is_ok());
    }
}
