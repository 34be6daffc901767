//! The check's window: its own load for the window's length (the ticket's,
//! seeded), the scenario's incident begun on time, the server's figures read
//! as the window begins and, where a metric reads them (`metrics::Reads`),
//! twice a second through it or the check's own retries beside it; and the
//! check's progress on the live view.

use std::time::Duration;

use simulator_api::client;
use simulator_api::load::Load;
use simulator_clients::{LoadPlan, Report};
use tokio_util::sync::CancellationToken;

use simulator_api::Stats;
use tokio::time::Instant;

use super::super::unwritten_watch::{self, Watched};
use super::super::{progress, retried_once};
use super::metrics::{Bar, Reads};
use super::{Stop, CHECK_SEED};
use simulator_service::scenario::Scenario;

/// What the check's own load saw.
pub(super) struct WindowRun {
    pub(super) report: Report,
    /// `/stats` as the window began, and when it was read.
    pub(super) before: Stats,
    pub(super) before_at: Instant,
    /// When the incident the check began ended, in the run's seconds.
    pub(super) incident_end_s: Option<f64>,
    /// The server's figures read twice a second through the window, where a
    /// metric asks ([`Reads::TwiceASecond`]).
    pub(super) unwritten: Watched,
    /// The check's own retries and what they got ([`Reads::OwnRetries`]).
    pub(super) retried: retried_once::Retried,
}

/// The check's load for `window`, with the scenario's incident begun on time,
/// what `bars` read gathered beside it, and the progress shown on the live
/// view.
pub(super) async fn run_window(
    scenario: &Scenario,
    bars: &[Bar],
    audience: &progress::Audience,
    window: Duration,
    load: &Load,
) -> Result<WindowRun, Stop> {
    let target = audience.target.as_str();
    let mut plan = LoadPlan::running_for(load, target, Some(window));
    plan.load.seed = plan.load.seed.or(Some(CHECK_SEED));
    let trigger = begin_incident_on_time(scenario, audience);
    let before = client::stats(target).await?;
    let before_at = Instant::now();
    let (reporter, lines) =
        progress::Reporter::start(scenario, bars, audience, window, before.clone());
    let reads = |what| bars.iter().any(|b| b.metric.reads() == what);
    let watch = reads(Reads::TwiceASecond).then(|| unwritten_watch::Watch::start(target));
    let retries = reads(Reads::OwnRetries).then(|| {
        let stop = CancellationToken::new();
        let task = tokio::spawn(retried_once::run(target.to_owned(), stop.clone()));
        (stop, task)
    });
    // Every second kept: an incident's recovery is read from them, and a
    // comparison of two checks (`workshop figures`) resamples them.
    let outputs = simulator_clients::Outputs {
        seconds: true,
        lines: Some(lines),
        ..Default::default()
    };
    let report = simulator_clients::run_with(&plan, CancellationToken::new(), outputs).await;
    let unwritten = match watch {
        Some(watch) => watch.finish().await,
        None => Watched::default(),
    };
    let retried = match retries {
        Some((stop, task)) => {
            stop.cancel();
            task.await?
        }
        None => retried_once::Retried::default(),
    };
    reporter.finish().await;
    let report = report?;
    if let Some(why) = report.out_of_descriptors() {
        return Err(Stop::Refused(format!("the check's own clients: {why}")));
    }
    let incident_end_s = match trigger {
        Some(trigger) => incident_end_s(trigger, scenario, &report).await?,
        None => None,
    };
    Ok(WindowRun {
        report,
        before,
        before_at,
        incident_end_s,
        unwritten,
        retried,
    })
}

/// What the incident's trigger returns: when it asked (into the check, and on
/// the wall clock) and what the server answered.
type Begun = (
    (Duration, std::time::SystemTime),
    Result<simulator_api::IncidentStatus, client::EndpointError>,
);

/// The scenario's incident begun at its time into the window, on a task of
/// its own; none without an incident.
fn begin_incident_on_time(
    scenario: &Scenario,
    audience: &progress::Audience,
) -> Option<tokio::task::JoinHandle<Begun>> {
    let started = tokio::time::Instant::now();
    scenario.incident.first().map(|incident| {
        let (target, at) = (audience.target.clone(), incident.at);
        let token = audience.admin_token.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(started + at).await;
            let asked = (started.elapsed(), std::time::SystemTime::now());
            let begun = client::begin_incident(&target, token.as_deref()).await;
            (asked, begun)
        })
    })
}

/// When the incident ended, in the run's own seconds; refused when the server
/// would not begin it.
async fn incident_end_s(
    trigger: tokio::task::JoinHandle<Begun>,
    scenario: &Scenario,
    report: &Report,
) -> Result<Option<f64>, Stop> {
    let ((at, at_wall), begun) = trigger.await?;
    if let Err(e) = begun {
        return Err(Stop::Refused(format!(
            "the check could not begin the scenario's incident: {e}"
        )));
    }
    // In the run's own seconds: the run's clock starts after its connections
    // are open, a little after the check's.
    let run_start = humantime::parse_rfc3339(&report.started_at).ok();
    let into_run = run_start
        .and_then(|start| at_wall.duration_since(start).ok())
        .unwrap_or(at);
    Ok(scenario
        .incident
        .first()
        .map(|incident| (into_run + incident.lasts).as_secs_f64()))
}
