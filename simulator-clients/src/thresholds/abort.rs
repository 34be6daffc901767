//! Bars that end the run (`abort`, k6's `abortOnFail`): once a second, each
//! is judged over the run so far (or its stage so far, once the stage has
//! begun), after its grace (k6's `delayAbortEval`). The first to fail cancels
//! the run, which then drains and reports as a run stopped early does, and
//! says which bar ended it.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::judge::{show, Span};
use super::{Scope, Threshold};
use crate::reporting::record::Running;
use simulator_api::load::Stages;

/// Watches `bars` over `run` and cancels `cancel` when one fails; the task's
/// answer is why, if it did. `None` when no bar aborts.
pub fn watch(
    run: Arc<dyn Running>,
    stages: Option<Stages>,
    open_loop: bool,
    bars: Vec<Threshold>,
    cancel: CancellationToken,
) -> Option<JoinHandle<Option<String>>> {
    let bars: Vec<Threshold> = bars
        .into_iter()
        .filter(|b| b.abort_after.is_some())
        .collect();
    if bars.is_empty() {
        return None;
    }
    Some(tokio::spawn(async move {
        let mut ticks = tokio::time::interval_at(
            run.started() + Duration::from_secs(1),
            Duration::from_secs(1),
        );
        loop {
            tokio::select! {
                () = cancel.cancelled() => return None,
                _ = ticks.tick() => {}
            }
            let t_s = run.started().elapsed().as_secs_f64();
            for bar in &bars {
                let Some((value, over)) =
                    so_far(run.as_ref(), stages.as_ref(), open_loop, bar, t_s)
                else {
                    continue;
                };
                if !bar.bound.holds(value) {
                    let why = format!(
                        "`{bar}` failed at {t_s:.0} s: {} over {over}",
                        show(bar.metric, value)
                    );
                    eprintln!("sim-clients: {why}; ending the run");
                    cancel.cancel();
                    return Some(why);
                }
            }
        }
    }))
}

/// The bar's figure over its span so far, once its grace has passed; `None`
/// before (or for a stage not begun).
fn so_far(
    run: &dyn Running,
    stages: Option<&Stages>,
    open_loop: bool,
    bar: &Threshold,
    t_s: f64,
) -> Option<(f64, String)> {
    let grace = bar.abort_after?.as_secs_f64();
    match &bar.scope {
        Scope::Run if t_s >= grace => {
            let span = Span::of_tally(&run.recorder().tally(), t_s, open_loop);
            Some((span.value(bar.metric), "the run so far".into()))
        }
        Scope::Stage(name) => {
            let plan = stages?;
            let k = plan.stages.iter().position(|s| &s.name == name)?;
            let (from, to) = plan.bounds_s().nth(k)?;
            if t_s < from + grace || t_s > to + 1.0 {
                return None;
            }
            let tally = run.recorder().stage(k)?;
            let span = Span::of_interval(&tally, t_s.min(to) - from, open_loop);
            Some((span.value(bar.metric), format!("stage {name} so far")))
        }
        _ => None,
    }
}
