//! What runs beside the clients of a plan ([`Beside`]): the stages as they
//! pass, and the bars that may end the run (`thresholds/abort.rs`).
//!
//! A plan's stages as they pass (`--stages`): as each begins, the server is
//! told (`PUT /admin/stage`: a marker on its live view's charts and a step in
//! its trail, which a recording keeps); as each ends, its row of figures so far
//! goes to stderr. The report's table (`reporting/stages.rs`) has the final
//! figures, with the replies that came after the stage's end.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::load::worker::RunState;
use crate::reporting::record::Running;
use crate::reporting::stages::{row, StageFigures, TABLE_HEAD};
use simulator_api::client;
use simulator_api::live::LoadStage;

/// The tasks beside a run's clients.
#[derive(Debug)]
pub struct Beside {
    stages: Option<JoinHandle<()>>,
    aborts: Option<JoinHandle<Option<String>>>,
}

impl Beside {
    /// Starts following the plan of `shared` and watching `abort`'s bars,
    /// which cancel `cancel` when one fails.
    pub fn start(
        shared: &Arc<RunState>,
        open_loop: bool,
        abort: Vec<crate::thresholds::Threshold>,
        cancel: &CancellationToken,
    ) -> Self {
        let aborts = crate::thresholds::abort::watch(
            Arc::clone(shared) as Arc<dyn Running>,
            shared.plan.load.stages.clone(),
            open_loop,
            abort,
            cancel.clone(),
        );
        Beside {
            stages: follow(shared, open_loop),
            aborts,
        }
    }

    /// Stops them as the clients have; the bar that ended the run, if one did.
    pub async fn finish(self, cancel: &CancellationToken) -> Option<String> {
        if let Some(stages) = self.stages {
            stages.abort();
        }
        let watch = self.aborts?;
        if !cancel.is_cancelled() {
            watch.abort();
            return None;
        }
        // Cancelled: by a bar (the watch has its answer) or by Ctrl-C (it
        // sees the cancel and answers none).
        watch.await.ok().flatten()
    }
}

/// Follows the plan of `shared` from its start; `None` without a plan. Abort
/// the task when the run ends.
fn follow(shared: &Arc<RunState>, open_loop: bool) -> Option<JoinHandle<()>> {
    shared.plan.load.stages.as_ref()?;
    let shared = Arc::clone(shared);
    Some(tokio::spawn(async move {
        let Some(plan) = shared.plan.load.stages.as_ref() else {
            return;
        };
        // The admin token the server was started with, where this shell has it.
        let token = std::env::var("ISIM_ADMIN_TOKEN").ok();
        let mut told = true;
        let bounds: Vec<(f64, f64)> = plan.bounds_s().collect();
        for (k, (from_s, to_s)) in bounds.into_iter().enumerate() {
            tokio::time::sleep_until(shared.start + Duration::from_secs_f64(from_s)).await;
            let stage = LoadStage {
                name: plan.stages[k].name.clone(),
                label: plan.describe(k),
            };
            // Only this shard's first tells: the others' would repeat it.
            if told && shared.plan.shard().index == 0 {
                if let Err(e) =
                    client::report_stage(&shared.plan.target, &stage, token.as_deref()).await
                {
                    eprintln!(
                        "sim-clients: the server was not told of the stages ({e}); the run goes on"
                    );
                    told = false;
                }
            }
            tokio::time::sleep_until(shared.start + Duration::from_secs_f64(to_s)).await;
            if let Some(tally) = shared.recorder.stage(k) {
                if k == 0 {
                    eprintln!("sim-clients: stages as each ends (the report's table adds the replies still due)\n{TABLE_HEAD}");
                }
                eprintln!("{}", row(&StageFigures::of(plan, k, &tally, open_loop)));
            }
        }
    }))
}
