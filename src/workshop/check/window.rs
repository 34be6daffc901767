//! The check's window: its own load for the window's length (the ticket's,
//! seeded), the scenario's incident begun on time, the server's figures read
//! as the window begins and, where a condition needs them, twice a second
//! through it; and the check's progress on the live view.

use std::time::Duration;

use simulator_api::client;
use simulator_api::load::Load;
use simulator_clients::{LoadPlan, Report};
use tokio_util::sync::CancellationToken;

use super::super::unwritten_watch::{self, Watched};
use super::super::{neighbour_share, progress, retried_once};
use super::{Stop, CHECK_SEED};
use simulator_service::scenario::{Metric, Scenario};

/// What the check's own load saw.
pub(super) struct WindowRun {
    pub(super) report: Report,
    /// The server's cgroup's throttled time (us) as the window began.
    pub(super) throttled_us_before: Option<u64>,
    /// The data port's listener's drops as the window began.
    pub(super) listen_drops_before: Option<u64>,
    /// When the incident the check began ended, in the run's seconds.
    pub(super) incident_end_s: Option<f64>,
    /// The server's elements answered and not yet written, read through the window.
    pub(super) unwritten: Watched,
    /// The server's threads' run-queue wait and its CPU time (ns) as the window began.
    pub(super) runqueue_wait_before: Option<u64>,
    pub(super) cpu_before: Option<u64>,
    /// The neighbour's work a second alone, and its reading as the window began.
    pub(super) neighbour_alone_per_s: Option<f64>,
    pub(super) neighbour_before: Option<neighbour_share::Reading>,
    /// Persists journalled and started as the window began.
    pub(super) journalled_before: (u64, u64),
    /// The check's own retries and what they got.
    pub(super) retried: retried_once::Retried,
}

/// The check's load for `window`, with the scenario's incident begun on time
/// and the progress shown on the live view.
pub(super) async fn run_window(
    scenario: &Scenario,
    audience: &progress::Audience,
    window: Duration,
    load: &Load,
) -> Result<WindowRun, Stop> {
    let target = audience.target.as_str();
    let mut plan = LoadPlan::running_for(load, target, Some(window));
    plan.seed = plan.seed.or(Some(CHECK_SEED));
    let trigger = begin_incident_on_time(scenario, audience);
    let before = client::stats(target).await?;
    let neighbour_alone_per_s = neighbour_share::alone_per_s(before.neighbour.as_ref());
    let neighbour_before = neighbour_share::Reading::of(before.neighbour.as_ref());
    let (runqueue_wait_before, cpu_before) = (before.runqueue_wait_ns, before.process_cpu_ns);
    let throttled_us_before = before.cpu_cgroup.as_ref().map(|c| c.throttled_us);
    let listen_drops_before = before.connections.listen_drops;
    let journalled_before = (before.journal_entries, before.counts.persists_started);
    let (reporter, lines) = progress::Reporter::start(scenario, audience, window, before);
    // Only where a condition reads the pile: each read of /stats costs the
    // server a little CPU, which an exercise measuring its own runtime's
    // lateness at half a core would count against its fix (blocking-runtime's
    // canary p99 after a fix went from 13 to 21-30 ms with reads twice a second).
    let reads_pile = scenario.check.iter().any(|c| {
        matches!(
            c.metric,
            Metric::AckedUnwrittenPerSlot
                | Metric::UnwrittenGrowthPerS
                | Metric::LateHitRatio
                | Metric::DescriptorGrowthPerS
                | Metric::ResidentGrowthMibPerS
        )
    });
    let watch = reads_pile.then(|| unwritten_watch::Watch::start(target));
    let retries = scenario
        .check
        .iter()
        .any(|c| c.metric == Metric::RetriesAnsweredOnce)
        .then(|| {
            let stop = CancellationToken::new();
            let task = tokio::spawn(retried_once::run(target.to_owned(), stop.clone()));
            (stop, task)
        });
    let outputs = simulator_clients::Outputs {
        seconds: trigger.is_some(),
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
        throttled_us_before,
        listen_drops_before,
        incident_end_s,
        unwritten,
        runqueue_wait_before,
        cpu_before,
        neighbour_alone_per_s,
        neighbour_before,
        journalled_before,
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
