//! The seed's investigation as one command: the same closed-loop load at several
//! client counts, repeated, with the server's counters reset before each run and,
//! with the fix, permits = K x clients set before each step. Owns the sweep's plan,
//! its runner and its figures; `sweep_table.rs` lays them out as text.
//!
//! Every figure of a run comes from the server's own counters over the run's
//! window (what the seed's count.d saw), per minute, plus the client's latency and
//! the server's CPU from `GET /stats`. Beside them stands what queueing theory
//! predicts from the configuration: the gate passes at most permits / mean
//! persist time requests a second (Little's law), and closed-loop clients offer
//! clients / (think time + unblocked lifetime).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::plan::{LoadPlan, Pacing, Stop};
use crate::report::Report;
use crate::server::{self, EndpointError};

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    pub target: String,
    pub clients: Vec<usize>,
    pub duration: Duration,
    pub repeat: usize,
    pub think_time: Duration,
    /// Also run every step again with permits = this x clients (the seed's fix is 8).
    pub fix_per_client: Option<usize>,
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
    #[error("permits = {0} x {1} clients overflows")]
    Overflow(usize, usize),
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    #[error(transparent)]
    Run(#[from] crate::RunError),
    #[error("the server still has work in flight after {0:?}: {1}")]
    NotSettled(Duration, Value),
    #[error("/stats lacks {0}; is the target a system-simulator?")]
    Stats(&'static str),
}

/// The figures of one run, by name; the same names in the mean and the spread.
pub type Figures = BTreeMap<String, f64>;

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
    pub fix_per_client: Option<usize>,
    pub persist_mean_ms: f64,
    pub lifetime_unblocked_ms: f64,
    /// permits / mean persist time: the most the gate passes, per second.
    pub capacity_per_s: f64,
    /// The client count whose offered load equals the capacity: beyond it nearly
    /// every request must wait for a permit.
    pub saturation_clients: f64,
    pub before: Vec<Step>,
    pub after: Option<Vec<Step>>,
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
        if let Some(k) = self.fix_per_client {
            for &n in &self.clients {
                k.checked_mul(n).ok_or(SweepError::Overflow(k, n))?;
            }
        }
        Ok(())
    }

    fn load(&self, clients: usize) -> LoadPlan {
        LoadPlan {
            target: self.target.clone(),
            clients,
            pacing: Pacing::Closed {
                think_time: self.think_time,
                ramp_up: Duration::ZERO,
            },
            stop: Stop {
                duration: Some(self.duration),
                requests_per_client: None,
            },
            ..LoadPlan::default()
        }
    }
}

/// The model the predictions come from, read off the server's configuration.
struct Model {
    persist_mean_s: f64,
    lifetime_unblocked_s: f64,
    think_s: f64,
}

impl Model {
    fn capacity_per_s(&self, permits: usize) -> f64 {
        permits as f64 / self.persist_mean_s
    }

    fn offered_per_s(&self, clients: usize) -> f64 {
        clients as f64 / (self.think_s + self.lifetime_unblocked_s)
    }
}

/// Runs the sweep; `progress` hears of each run as it starts.
pub async fn run(
    plan: &SweepPlan,
    cancel: CancellationToken,
    mut progress: impl FnMut(&str),
) -> Result<SweepReport, SweepError> {
    plan.validate()?;
    let stats = server::stats(&plan.target).await?;
    let config = &stats["config"];
    let number = |v: &Value, key: &'static str| v[key].as_u64().ok_or(SweepError::Stats(key));
    let permits = usize::try_from(number(config, "permits")?).unwrap_or(usize::MAX);
    let model = Model {
        persist_mean_s: number(config, "persist_latency_mean_ns")? as f64 / 1e9,
        lifetime_unblocked_s: 2.0 * number(config, "network_delay_mean_ns")? as f64 / 1e9,
        think_s: plan.think_time.as_secs_f64(),
    };

    let mut phases = vec![(None, Vec::new())];
    if let Some(k) = plan.fix_per_client {
        phases.push((Some(k), Vec::new()));
    }
    let result = async {
        for (fix, steps) in &mut phases {
            for &clients in &plan.clients {
                let step_permits = fix.map_or(permits, |k| k * clients);
                let mut runs = Vec::with_capacity(plan.repeat);
                for round in 1..=plan.repeat {
                    if cancel.is_cancelled() {
                        break;
                    }
                    progress(&format!(
                        "{clients} clients, {step_permits} permits, run {round}/{}",
                        plan.repeat
                    ));
                    runs.push(one_run(plan, clients, step_permits, &cancel).await?);
                }
                if runs.is_empty() {
                    break;
                }
                let predicted = model
                    .offered_per_s(clients)
                    .min(model.capacity_per_s(step_permits))
                    * 60.0;
                steps.push(step(clients, step_permits, predicted, runs));
            }
        }
        Ok::<(), SweepError>(())
    }
    .await;
    // Leave the server as the sweep found it, whatever happened.
    let restored = server::set_permits(&plan.target, permits).await;
    result?;
    restored?;

    let mut phases = phases.into_iter().map(|(_, steps)| steps);
    Ok(SweepReport {
        command: None,
        target: plan.target.clone(),
        duration_s: plan.duration.as_secs_f64(),
        repeat: plan.repeat,
        think_time_s: model.think_s,
        permits,
        fix_per_client: plan.fix_per_client,
        persist_mean_ms: model.persist_mean_s * 1e3,
        lifetime_unblocked_ms: model.lifetime_unblocked_s * 1e3,
        capacity_per_s: model.capacity_per_s(permits),
        saturation_clients: model.capacity_per_s(permits)
            * (model.think_s + model.lifetime_unblocked_s),
        before: phases.next().unwrap_or_default(),
        after: phases.next(),
    })
}

/// Settles the server, sets its permits, zeroes its window and runs the load.
async fn one_run(
    plan: &SweepPlan,
    clients: usize,
    permits: usize,
    cancel: &CancellationToken,
) -> Result<Figures, SweepError> {
    settle(&plan.target, Duration::from_secs(60)).await?;
    server::set_permits(&plan.target, permits).await?;
    server::reset(&plan.target).await?;
    let cpu_before = server::stats(&plan.target).await?["process_cpu_ns"].as_u64();
    let report = crate::run(&plan.load(clients), cancel.clone(), false).await?;
    let cpu_after = server::stats(&plan.target).await?["process_cpu_ns"].as_u64();
    let cpu_ns = cpu_before.zip(cpu_after).map(|(b, a)| a.saturating_sub(b));
    Ok(figures(&report, cpu_ns))
}

/// Waits (bounded) until nothing is in flight, so a step does not start with the
/// last one's persists still holding permits.
async fn settle(target: &str, within: Duration) -> Result<(), SweepError> {
    let deadline = Instant::now() + within;
    loop {
        let stats = server::stats(target).await?;
        if stats["requests_in_flight"] == 0 && stats["persists_in_flight"] == 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(SweepError::NotSettled(within, stats));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The names of a run's figures, in table order.
pub const FIGURES: [&str; 11] = [
    "requests_started_per_min",
    "requests_done_per_min",
    "blocked_per_min",
    "nonblocked_per_min",
    "persists_started_per_min",
    "persists_done_per_min",
    "blocked_share",
    "latency_p50_ms",
    "latency_p99_ms",
    "server_cpu_percent",
    "client_errors",
];

fn figures(report: &Report, cpu_ns: Option<u64>) -> Figures {
    let elapsed_ns = report.elapsed_ns.max(1) as f64;
    let server = |key: &str| report.server.as_ref().map_or(0, |s| s.get(key)) as f64;
    let per_min = |key: &str| server(key) * 60e9 / elapsed_ns;
    let mut f = Figures::new();
    f.insert(FIGURES[0].into(), per_min("requests_started"));
    f.insert(FIGURES[1].into(), per_min("requests_done"));
    f.insert(FIGURES[2].into(), per_min("requests_blocked"));
    f.insert(FIGURES[3].into(), per_min("requests_nonblocked"));
    f.insert(FIGURES[4].into(), per_min("persists_started"));
    f.insert(FIGURES[5].into(), per_min("persists_done"));
    let blocked = server("requests_blocked") + server("requests_nonblocked");
    f.insert(
        FIGURES[6].into(),
        if blocked > 0.0 {
            server("requests_blocked") / blocked
        } else {
            0.0
        },
    );
    f.insert(FIGURES[7].into(), report.latency.p50_ns as f64 / 1e6);
    f.insert(FIGURES[8].into(), report.latency.p99_ns as f64 / 1e6);
    if let Some(ns) = cpu_ns {
        f.insert(FIGURES[9].into(), ns as f64 / elapsed_ns * 100.0);
    }
    f.insert(FIGURES[10].into(), report.errors as f64);
    f
}

fn step(clients: usize, permits: usize, predicted_per_min: f64, runs: Vec<Figures>) -> Step {
    let mut mean = Figures::new();
    let mut spread = Figures::new();
    for name in FIGURES {
        let values: Vec<f64> = runs.iter().filter_map(|r| r.get(name).copied()).collect();
        if values.is_empty() {
            continue;
        }
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        let min = values.iter().copied().fold(f64::MAX, f64::min);
        mean.insert(
            name.into(),
            values.iter().sum::<f64>() / values.len() as f64,
        );
        spread.insert(name.into(), max - min);
    }
    Step {
        clients,
        permits,
        predicted_per_min,
        runs,
        mean,
        spread,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(done: f64, errors: f64) -> Figures {
        Figures::from([(FIGURES[1].into(), done), (FIGURES[10].into(), errors)])
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
        assert_eq!(s.mean[FIGURES[1]], 890.0);
        assert_eq!(s.spread[FIGURES[1]], 20.0);
        assert_eq!(s.mean[FIGURES[10]], 1.0);
        assert!(!s.mean.contains_key(FIGURES[9]), "no CPU figure, no column");
    }

    #[test]
    fn bad_plans_are_refused_before_any_load() {
        let plan = |clients: Vec<usize>, repeat, fix| SweepPlan {
            target: "http://127.0.0.1:1".into(),
            clients,
            duration: Duration::from_secs(1),
            repeat,
            think_time: Duration::from_secs(1),
            fix_per_client: fix,
        };
        assert!(matches!(
            plan(vec![], 1, None).validate(),
            Err(SweepError::NoSteps)
        ));
        assert!(matches!(
            plan(vec![1], 0, None).validate(),
            Err(SweepError::NoRepeats)
        ));
        assert!(matches!(
            plan(vec![0], 1, None).validate(),
            Err(SweepError::ZeroClients(0))
        ));
        assert!(matches!(
            plan(vec![usize::MAX], 1, Some(8)).validate(),
            Err(SweepError::Overflow(8, _))
        ));
        assert!(plan(vec![1, 15], 3, Some(8)).validate().is_ok());
    }

    #[test]
    fn the_model_predicts_the_seed_plateau_and_its_tipping_point() {
        let model = Model {
            persist_mean_s: 0.060,
            lifetime_unblocked_s: 0.003,
            think_s: 1.0,
        };
        let capacity = model.capacity_per_s(8);
        assert!((capacity - 133.3).abs() < 0.1);
        // 135 clients offer just more than the gate passes: the seed's tipping point.
        assert!(model.offered_per_s(135) > capacity && model.offered_per_s(125) < capacity);
    }
}
