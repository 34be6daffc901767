//! Running a load (the plan it runs is `crate::plan`): the clients themselves
//! (`worker.rs`), their connections (`connection.rs`), the open loop's timetable
//! (`schedule.rs`; the sub-millisecond pacing of `--precise-pacing` is the
//! OS's, in `platform/precise_timer.rs`), a plan's stages as they pass
//! (`stages.rs`); here, [`run`], which opens the connections, starts the
//! clients and returns the [`Report`].

pub mod connection;
pub mod retry;
pub mod schedule;
pub mod stages;
pub mod worker;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::plan::{Connections, LoadPlan, PlanError};
use crate::reporting::record::Running;
use crate::reporting::{live, progress, record, series, units, Report};
use crate::scale_out::start;
use simulator_api::client;

/// Why a run could not start or could not record what it measured.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Target(#[from] simulator_api::client::TargetError),
    #[error("series file: {0}")]
    Series(std::io::Error),
    #[error(transparent)]
    Descriptors(#[from] DescriptorShortfall),
}

/// Descriptors the driver keeps for itself beside its clients' connections,
/// over those open when the run starts: the `/stats` reads before and after,
/// the series file, the metrics endpoint and its scrapes, the precise timer.
pub const DRIVER_DESCRIPTORS: u64 = 16;

/// A plan whose connections cannot fit under the descriptor limit even after it
/// was raised to the hard one: refused before any load, since a run past the
/// limit measures nothing but its own failed connects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{clients} clients need about {needed} file descriptors: one a connection, and \
     {others} for the driver. This process may open {soft}{raised}. {advice} \
     Or run at most {fits} clients in this process and the rest in others \
     (--shard K/N)."
)]
pub struct DescriptorShortfall {
    pub clients: u64,
    pub needed: u64,
    pub others: u64,
    pub soft: u64,
    pub hard: u64,
    /// Where the soft limit was raised: " (raised from N, as far as its hard limit)".
    raised: String,
    /// How to raise the limit: at once where the hard limit allows it, as root where not.
    advice: String,
    pub fits: u64,
}

/// Raises the descriptor limit and checks that `clients` connections fit under
/// it; where the OS has no such limit, they do.
pub fn descriptors_for(clients: usize) -> Result<(), DescriptorShortfall> {
    use crate::platform::descriptors;
    let Some(limit) = descriptors::raise() else {
        return Ok(());
    };
    let others = descriptors::open_now().unwrap_or(0) + DRIVER_DESCRIPTORS;
    shortfall(u64::try_from(clients).unwrap_or(u64::MAX), others, limit).map_or(Ok(()), Err)
}

fn shortfall(
    clients: u64,
    others: u64,
    limit: crate::platform::descriptors::Limit,
) -> Option<DescriptorShortfall> {
    let needed = clients.saturating_add(others);
    (needed > limit.soft).then(|| DescriptorShortfall {
        clients,
        needed,
        others,
        soft: limit.soft,
        hard: limit.hard,
        raised: limit.raised_from.map_or(String::new(), |from| {
            format!(" (raised from {from}, as far as its hard limit)")
        }),
        advice: match needed <= limit.hard {
            true => format!("Raise it: `ulimit -n {needed}`."),
            false => format!(
                "Its hard limit is {}: raise that as root (/etc/security/limits.conf on \
                 Linux, `sudo launchctl limit maxfiles` on macOS), then `ulimit -n {needed}`.",
                limit.hard
            ),
        },
        fits: limit.soft.saturating_sub(others),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::descriptors::Limit;

    #[test]
    fn clients_that_fit_under_the_limit_pass_and_one_more_is_refused_with_what_fits() {
        let limit = Limit {
            soft: 256,
            hard: 256,
            raised_from: None,
        };
        assert_eq!(shortfall(240, 16, limit), None);
        let refused = shortfall(241, 16, limit).expect("257 > 256");
        assert_eq!((refused.needed, refused.fits), (257, 240));
        let words = refused.to_string();
        for part in [
            "241 clients need about 257 file descriptors",
            "may open 256.",
            "Its hard limit is 256: raise that as root",
            "`ulimit -n 257`",
            "at most 240 clients",
            "--shard K/N",
        ] {
            assert!(words.contains(part), "{part:?} not in {words:?}");
        }
    }

    #[test]
    fn a_soft_limit_the_driver_could_not_raise_is_raised_by_ulimit_alone() {
        let limit = Limit {
            soft: 256,
            hard: 4096,
            raised_from: None,
        };
        let words = shortfall(1000, 16, limit).unwrap().to_string();
        assert!(words.contains("Raise it: `ulimit -n 1016`."), "{words}");
        let raised = Limit {
            soft: 512,
            hard: 512,
            raised_from: Some(256),
        };
        let words = shortfall(1000, 16, raised).unwrap().to_string();
        assert!(
            words.contains("may open 512 (raised from 256, as far as its hard limit)"),
            "{words}"
        );
    }
}

/// Where a run's output goes besides the returned report.
#[derive(Debug, Default)]
pub struct Outputs {
    /// Draw live progress on stderr.
    pub progress: bool,
    /// Write one JSON line per second here (see [`series`]).
    pub series: Option<tokio::fs::File>,
    /// Keep every second in the report (for `--json`, so `merge` can add series).
    pub seconds: bool,
    /// Count into these live metrics too (`--metrics-listen`, `live.rs`).
    pub live: Option<Arc<live::LiveMetrics>>,
    /// Send each second's line here as it ends (`workshop check` reports its
    /// progress to the server's live view with them).
    pub lines: Option<tokio::sync::mpsc::UnboundedSender<series::Line>>,
    /// Bars that end the run when they fail (`--threshold '... abort'`).
    pub abort: Vec<crate::thresholds::Threshold>,
}

/// One connection per client, opened before the run's clock starts so that the
/// start-up burst is one of requests, not of TCP handshakes (with
/// `--connections per-request` none is opened here: each attempt makes its own).
/// Connections leave from the plan's bind addresses in turn.
async fn connect_all(
    plan: &LoadPlan,
    addr: std::net::SocketAddr,
    host: &hyper::header::HeaderValue,
    cancel: &CancellationToken,
) -> Vec<connection::Connection> {
    let mut opening = tokio::task::JoinSet::new();
    for i in 0..plan.local_clients() {
        let mut c = new_connection(plan, i, addr, host);
        let timeout = plan.load.timeout;
        opening.spawn(async move {
            c.open(timeout).await;
            c
        });
    }
    let mut connections = Vec::with_capacity(plan.local_clients());
    loop {
        tokio::select! {
            joined = opening.join_next() => match joined {
                Some(Ok(c)) => connections.push(c),
                // Opening cannot panic short of a bug; that client connects on first use.
                Some(Err(_)) => {}
                None => break,
            },
            () = cancel.cancelled() => break,
        }
    }
    connections
}

fn new_connection(
    plan: &LoadPlan,
    i: usize,
    addr: std::net::SocketAddr,
    host: &hyper::header::HeaderValue,
) -> connection::Connection {
    let bind = (!plan.bind.is_empty()).then(|| plan.bind[i % plan.bind.len()]);
    connection::Connection::new(addr, host.clone())
        .bound_to(bind)
        .per_request(plan.load.connections == Connections::PerRequest, host)
        .sending(plan.load.send, host)
}

/// Runs `plan` until its stop condition or `cancel`, showing progress when asked.
pub async fn run(
    plan: &LoadPlan,
    cancel: CancellationToken,
    show_progress: bool,
) -> Result<Report, RunError> {
    let outputs = Outputs {
        progress: show_progress,
        ..Outputs::default()
    };
    run_with(plan, cancel, outputs).await
}

/// When the run starts: now, or at `--start-at` (with a word where it started
/// late); how late, then.
async fn starting_time(
    plan: &LoadPlan,
    cancel: &CancellationToken,
) -> (tokio::time::Instant, Option<std::time::Duration>) {
    let Some(at) = plan.start_at else {
        return (tokio::time::Instant::now(), None);
    };
    let (start, late) = start::wait_for(at, cancel).await;
    if late > plan.late_after {
        eprintln!(
            "sim-clients: started {} after --start-at",
            units::duration(u64::try_from(late.as_nanos()).unwrap_or(u64::MAX))
        );
    }
    (start, Some(late))
}

/// [`run`], with a per-second series, the report's seconds and the driver's
/// own metrics endpoint as asked.
pub async fn run_with(
    plan: &LoadPlan,
    cancel: CancellationToken,
    outputs: Outputs,
) -> Result<Report, RunError> {
    plan.validate()?;
    descriptors_for(plan.local_clients())?;
    let (addr, host) = client::resolve(&plan.target).await?;
    let live = outputs
        .live
        .unwrap_or_else(|| Arc::new(live::LiveMetrics::off()));
    start::warn_of_the_clock(plan.start_at.is_some());
    let before = client::stats(&plan.target).await.ok();
    let mut connections = connect_all(plan, addr, &host, &cancel).await.into_iter();
    let (start, start_late) = starting_time(plan, &cancel).await;
    let intervals = outputs.series.is_some() || outputs.seconds || outputs.lines.is_some();
    let recorder = recorder_for(plan, intervals, live, start);
    let shared = Arc::new(worker::RunState::starting(
        plan.clone(),
        cancel.clone(),
        recorder,
        start,
    ));
    let seconds = intervals.then(|| {
        let keep = series::SecondOutputs {
            file: outputs.series,
            seconds: outputs.seconds,
            lines: outputs.lines,
        };
        series::SeriesWriter::start(Arc::clone(&shared) as Arc<dyn Running>, keep)
    });
    let progress = outputs
        .progress
        .then(|| progress::Progress::start(Arc::clone(&shared) as Arc<dyn Running>));
    let open_loop = matches!(plan.load.pacing, crate::plan::Pacing::Open { .. });
    let beside = stages::Beside::start(&shared, open_loop, outputs.abort, &cancel);
    worker::run_clients(Arc::clone(&shared), |i| {
        connections
            .next()
            .unwrap_or_else(|| new_connection(plan, i, addr, &host))
    })
    .await;
    let elapsed = shared.start.elapsed();
    let aborted_by = beside.finish(&cancel).await;
    if let Some(p) = progress {
        p.finish();
    }
    let (seconds, series_result) = match seconds {
        Some(writer) => writer.finish().await,
        None => (Vec::new(), Ok(())),
    };
    let after = client::stats(&plan.target).await.ok();
    let window = before.zip(after).map(|(b, a)| a.counts.since(&b.counts));
    // The figures are worth more than the series: report them even if it failed.
    if let Err(err) = series_result {
        eprintln!("sim-clients: {}", RunError::Series(err));
    }
    let mut report = Report::new(
        plan,
        shared.seed(),
        &shared.recorder.tally(),
        elapsed,
        window,
    );
    report.start_late_ns = start_late.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    report.seconds = seconds;
    report.aborted_by = aborted_by;
    if let Some(stages) = &plan.load.stages {
        let tallies = shared.recorder.stages();
        report.stages = crate::reporting::stages::figures(stages, &tallies, open_loop);
    }
    Ok(report)
}

/// The run's recorder: per second where asked, per stage with a plan, and
/// into the live metrics.
fn recorder_for(
    plan: &LoadPlan,
    intervals: bool,
    live: Arc<live::LiveMetrics>,
    start: tokio::time::Instant,
) -> record::Recorder {
    let recorder = record::Recorder::new(plan.late_after, intervals).with_live(live);
    match &plan.load.stages {
        Some(stages) => recorder.with_stages(record::StageClock::of(stages, start)),
        None => recorder,
    }
}
