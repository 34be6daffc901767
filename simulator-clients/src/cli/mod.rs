//! The commands the flags run: a load run (with its report, JSON, series and
//! metrics endpoint), a sweep, a merge, a knee search (`knee.rs`), a comparison of two runs; and the runtime they run on. The flags
//! themselves are `flags.rs`.

mod flags;
mod knee;

pub use flags::{Args, Command, KneeArgs, ShardArgs, SweepArgs};

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use simulator_api::max_duration;
use tokio_util::sync::CancellationToken;

use crate::plan::shard::Shard;
use crate::plan::LoadPlan;
use crate::reporting::live::LiveMetrics;

/// The exit status of a command that ended in `err`: 99 for a failed bar
/// (k6's) or a comparison that got worse, 2 for a refused bar, 1 for
/// anything else.
pub fn exit_status(err: &anyhow::Error) -> u8 {
    if err.downcast_ref::<crate::thresholds::Failed>().is_some()
        || err.downcast_ref::<crate::compare::Regressed>().is_some()
    {
        crate::thresholds::EXIT_THRESHOLD_FAILED
    } else if err.downcast_ref::<crate::thresholds::Refused>().is_some() {
        2
    } else {
        1
    }
}

/// Ctrl-C as an early stop: the run (or sweep) still reports what it measured.
fn cancel_on_ctrl_c() -> CancellationToken {
    let cancel = CancellationToken::new();
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("sim-clients: stopping early; waiting for replies in flight");
                cancel.cancel();
            }
        }
    });
    cancel
}

async fn sweep(args: SweepArgs) -> anyhow::Result<()> {
    // Said before the sweep's minutes of load, not after them.
    if args.svg.is_some() && !cfg!(feature = "charts") {
        anyhow::bail!(
            "--svg: this build draws no charts (system-simulator leaves the driver's \
             `charts` feature off); run the same sweep with sim-clients: \
             cargo run --release --bin sim-clients -- sweep ..."
        );
    }
    // Every output reserved before the sweep's minutes of load.
    let reserve =
        |path: &Option<PathBuf>| path.as_deref().map(crate::reporting::reserve).transpose();
    let (json, markdown) = (reserve(&args.json)?, reserve(&args.markdown)?);
    #[cfg(feature = "charts")]
    let chart = match &args.svg {
        Some(path) => Some((
            crate::reporting::reserve(path)?,
            crate::reporting::reserve(&path.with_extension("png"))?,
        )),
        None => None,
    };
    let report = match &args.from {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("{} is not a sweep saved with --json", path.display()))?
        }
        None => run_sweep(&args).await?,
    };
    print!("{}", crate::sweep::table::render(&report));
    if let Some(out) = json {
        crate::reporting::write_json(out, &report)?;
    }
    if let Some(out) = markdown {
        let path = out.path().display().to_string();
        out.write(crate::sweep::table::markdown(&report).as_bytes())
            .with_context(|| format!("writing {path}"))?;
    }
    #[cfg(feature = "charts")]
    if let Some((svg_out, png_out)) = chart {
        let svg = crate::sweep::chart::render(&report)?;
        let png = crate::sweep::chart::png(&svg)?;
        for (out, bytes) in [(svg_out, svg.as_bytes()), (png_out, &png[..])] {
            let path = out.path().display().to_string();
            out.write(bytes)
                .with_context(|| format!("writing {path}"))?;
        }
    }
    Ok(())
}

async fn run_sweep(args: &SweepArgs) -> anyhow::Result<crate::sweep::SweepReport> {
    let shard = args.sharding.resolve(|var| std::env::var(var).ok())?;
    let together = match (shard, args.sharding.start_at) {
        (None, _) => None,
        (Some(shard), Some(start)) => Some(crate::sweep::shard::ShardSchedule {
            shard,
            start_at: start.at,
            step_gap: args.step_gap,
        }),
        (Some(_), None) => return Err(crate::sweep::SweepError::NoStartAt.into()),
    };
    let duration = max_duration::cut_and_say(
        "sweep",
        "--duration",
        args.duration,
        max_duration::from_env()?,
    );
    let plan = crate::sweep::SweepPlan {
        together,
        target: args.target.clone(),
        clients: args.clients.clone(),
        duration,
        repeat: args.repeat,
        think_time: args.think_time,
        fix: args.fix.clone(),
        scenario: args.scenario.clone(),
    };
    plan.validate()?;
    let cancel = cancel_on_ctrl_c();
    let mut report = crate::sweep::run(&plan, cancel, |what| eprintln!("sweep: {what}")).await?;
    let words: Vec<String> = std::env::args().collect();
    report.command = Some(words.join(" "));
    Ok(report)
}

/// What `main` runs: a sweep, or one run of the plan.
/// The runtime the sim-clients process runs on: `--threads 1` a current-thread
/// runtime (clients that mostly wait are woken without handing tasks between
/// threads), more a work-stealing one with that many workers, 0 one per core.
pub fn runtime(threads: u16) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = match threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        0 => tokio::runtime::Builder::new_multi_thread(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(usize::from(n));
            b
        }
    };
    builder.enable_all().build()
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Some(Command::Sweep(sweep_args)) => return sweep(*sweep_args).await,
        Some(Command::Merge(merge_args)) => return crate::scale_out::merge::run(&merge_args),
        Some(Command::Knee(knee_args)) => return knee::run(*knee_args).await,
        Some(Command::Compare(compare_args)) => return crate::compare::run(&compare_args),
        None => {}
    }
    let plan = args.plan_in(|var| std::env::var(var).ok())?;
    let bars = crate::thresholds::parse_all(&args.thresholds, plan.load.stages.as_ref())
        .map_err(crate::thresholds::Refused)?;
    let windows = bars
        .iter()
        .any(|b| matches!(b.scope, crate::thresholds::Scope::Window(_)));
    let shard_file = |path: &PathBuf| shard_path(path, plan.shard());
    let (json, series) = (
        args.json.as_ref().map(shard_file),
        args.series.as_ref().map(shard_file),
    );
    let json = json.as_deref().map(crate::reporting::reserve).transpose()?;
    let series = match &series {
        Some(path) => Some(
            crate::reporting::series::create(path)
                .await
                .with_context(|| format!("cannot write {}", path.display()))?,
        ),
        None => None,
    };
    let endpoint = match args.metrics_listen {
        Some(listen) => Some(MetricsEndpoint::start(listen, &plan).await?),
        None => None,
    };
    let cancel = cancel_on_ctrl_c();
    let outputs = crate::Outputs {
        progress: std::io::stdout().is_terminal(),
        series,
        seconds: json.is_some() || windows,
        live: endpoint.as_ref().map(|e| Arc::clone(&e.live)),
        lines: None,
        abort: bars.clone(),
    };
    let mut report = crate::run_with(&plan, cancel.clone(), outputs).await?;
    if !bars.is_empty() {
        report.thresholds = crate::thresholds::judge::judge(&bars, &report)
            .map_err(|e| anyhow::anyhow!("judging the thresholds: {e}"))?;
    }
    print!("{}", report.render());
    if let Some(out) = json {
        crate::reporting::write_json(out, &report)?;
    }
    if let Some(endpoint) = endpoint {
        endpoint.linger(args.metrics_linger, &cancel).await;
    }
    // Printed and saved all the same, so what the run saw is kept; but a run
    // that measured its own limit is no measurement, and says so in its status.
    if let Some(why) = report.out_of_descriptors() {
        return Err(anyhow::anyhow!(why));
    }
    let failed = report.thresholds.iter().filter(|j| !j.passed).count();
    match failed {
        0 => Ok(()),
        failed => Err(crate::thresholds::Failed {
            failed,
            of: report.thresholds.len(),
        }
        .into()),
    }
}

/// `path` with `{shard}` replaced by the shard's index, so every shard of a job
/// given one command line writes its own file (`reports/shard-{shard}.json`).
pub fn shard_path(path: &std::path::Path, shard: Shard) -> PathBuf {
    PathBuf::from(
        path.to_string_lossy()
            .replace("{shard}", &shard.index.to_string()),
    )
}

/// The driver's own `/metrics` (`--metrics-listen`), served from before the run
/// to the end of the linger after it.
struct MetricsEndpoint {
    live: Arc<LiveMetrics>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl MetricsEndpoint {
    /// Binds now, so a taken port fails before any load is sent.
    async fn start(listen: std::net::SocketAddr, plan: &LoadPlan) -> anyhow::Result<Self> {
        let live = Arc::new(LiveMetrics::new(plan.shard(), plan.run_id.as_deref()));
        let stop = CancellationToken::new();
        let (bound, task) = crate::reporting::live::serve(listen, Arc::clone(&live), stop.clone())
            .await
            .with_context(|| format!("--metrics-listen {listen}"))?;
        eprintln!("sim-clients: metrics at http://{bound}/metrics");
        Ok(Self { live, stop, task })
    }

    /// Keeps serving `linger` longer, so the last scrape sees the final counts;
    /// Ctrl-C ends the wait.
    async fn linger(self, linger: Duration, cancel: &CancellationToken) {
        if !linger.is_zero() && !cancel.is_cancelled() {
            eprintln!(
                "sim-clients: serving the final metrics for {} more (--metrics-linger)",
                humantime::format_duration(linger)
            );
            tokio::select! {
                () = tokio::time::sleep(linger) => {}
                () = cancel.cancelled() => {}
            }
        }
        self.stop.cancel();
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn precise_pacing_takes_an_optional_slack() {
        let slack = |words: &[&str]| {
            Args::try_parse_from(std::iter::once("sim-clients").chain(words.iter().copied()))
                .map(|args| args.plan().unwrap().precise_pacing)
        };
        let us = |n| Some(std::time::Duration::from_micros(n));
        assert_eq!(slack(&[]).unwrap(), None);
        assert_eq!(slack(&["--precise-pacing"]).unwrap(), us(50));
        assert_eq!(slack(&["--precise-pacing", "--n", "3"]).unwrap(), us(50));
        assert_eq!(slack(&["--precise-pacing=100us"]).unwrap(), us(100));
        assert_eq!(slack(&["--precise-pacing=0s"]).unwrap(), us(0));
        assert!(slack(&["--precise-pacing=soon"]).is_err());
    }
}
