//! sim-clients: N virtual clients against `system-simulator serve`.
//!
//! [`run`] drives one load run from a [`LoadPlan`] and returns a [`Report`]; the
//! binary (`src/main.rs`) only parses flags. One worker loop (`worker.rs`) serves
//! every plan; connections (`connection.rs`), aggregation (`record.rs`), the report
//! (`report.rs`) and the server's endpoints (`server.rs`) each have their own file.

pub mod cli;
pub mod connection;
pub mod plan;
pub mod progress;
pub mod record;
pub mod report;
pub mod server;
pub mod worker;

use std::sync::Arc;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use plan::{LoadPlan, PayloadSize, Stop};
pub use report::Report;

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Target(#[from] plan::TargetError),
    #[error("the plan needs at least one client")]
    NoClients,
    #[error("the plan needs a stop condition: a duration or a number of requests per client")]
    NoStop,
}

/// Runs `plan` until its stop condition or `cancel`, showing progress when asked.
pub async fn run(
    plan: &LoadPlan,
    cancel: CancellationToken,
    show_progress: bool,
) -> Result<Report, RunError> {
    if plan.clients == 0 {
        return Err(RunError::NoClients);
    }
    if plan.stop.duration.is_none() && plan.stop.requests_per_client.is_none() {
        return Err(RunError::NoStop);
    }
    let (addr, host) = plan::resolve(&plan.target).await?;
    let before = server::stats(&plan.target).await.ok();
    let start = Instant::now();
    let shared = Arc::new(worker::Shared {
        plan: plan.clone(),
        addr,
        host,
        recorder: record::Recorder::default(),
        start,
        deadline: plan.stop.duration.map(|d| start + d),
        cancel,
    });
    let progress = show_progress.then(|| progress::Progress::start(Arc::clone(&shared)));
    let mut clients = JoinSet::new();
    for index in 0..plan.clients {
        clients.spawn(worker::client(Arc::clone(&shared), index));
    }
    while let Some(joined) = clients.join_next().await {
        if let Err(err) = joined {
            // A client task can only fail by panicking: a bug, but not one that
            // should lose everything the other clients measured.
            eprintln!("sim-clients: a client task failed: {err}");
        }
    }
    let elapsed = start.elapsed();
    if let Some(p) = progress {
        p.finish();
    }
    let after = server::stats(&plan.target).await.ok();
    let window = before
        .zip(after)
        .map(|(b, a)| server::ServerWindow::between(&b, &a));
    Ok(Report::new(plan, &shared.recorder.tally(), elapsed, window))
}
