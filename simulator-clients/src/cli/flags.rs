//! The `sim-clients` flags (and `system-simulator clients`, the same): a load run,
//! a sweep, a merge, and how a process finds its shard; [`Args::plan`] turns them
//! into a [`LoadPlan`].

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use simulator_api::load::{Load, LoadArgs, LoadError};
use simulator_api::max_duration;

use crate::plan::shard::{Shard, ShardInfo, ShardSource};
use crate::plan::LoadPlan;

/// N virtual clients against system-simulator: the original simulator's closed
/// loop (send, wait for the reply, think, repeat) or an open loop at a fixed rate,
/// with a report laid out like the seed's DTrace output.
#[derive(Debug, Parser)]
#[command(name = "sim-clients", version, about, long_about = None)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The load: clients, pacing, sizes, when it stops, how clients retry (the
    /// same flags a scenario's `load` is written in).
    #[command(flatten)]
    pub load: LoadArgs,

    /// The server's base URL (plain http).
    #[arg(long, default_value = "http://127.0.0.1:7878")]
    pub target: String,

    /// Pace sends and think times with a nanosecond timer (Linux timerfd)
    /// instead of tokio's 1 ms ticks: a wait ends at most SLACK after its time
    /// (default 50us, the kernel's own timer slack; at most 1ms). A larger slack
    /// lets more sends leave in a wake-up the driver makes anyway, for less CPU
    /// (docs/performance.md has both measured). Give it as --precise-pacing=100us.
    #[arg(long, value_name = "SLACK", num_args = 0..=1, require_equals = true,
          default_missing_value = "50us", value_parser = humantime::parse_duration)]
    pub precise_pacing: Option<Duration>,

    /// Threads driving the clients (like wrk's -t): 1 leaves the other cores to
    /// a server on the same machine; think-time-0 or high-rate loads go faster on
    /// 2 or more (docs/performance.md); 0 means one per core. The sim-clients
    /// process only: a load run inside system-simulator (demo, workshop) shares
    /// the server's runtime. At most 1024.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub threads: u16,

    /// A send leaving later than this after its scheduled time counts as late.
    #[arg(long, default_value = "5ms", value_parser = humantime::parse_duration)]
    pub late_after: Duration,

    /// After --duration, wait at most this long for replies still in flight (queued
    /// at a saturated server); the rest are reported as unanswered. The rates count
    /// only replies within --duration.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub max_drain: Duration,

    /// A pass bar (repeatable): `p(99)<200ms`, `peak: rate(errors)<0.01`,
    /// `window(10s): p(99)<300ms`, `achieved/offered>0.98 abort after 10s`.
    /// The report lists each with its figure; a failed one exits with status
    /// 99 (k6's). One that does not parse is refused before any load
    /// (docs/load.md, "Thresholds").
    #[arg(long = "threshold", value_name = "BAR")]
    pub thresholds: Vec<String>,

    /// Also write every figure as JSON to FILE (`-` for stdout), with the whole
    /// run's histograms for `merge`; the schema is
    /// simulator-clients/schema/report.schema.json. `{shard}` in FILE becomes the
    /// shard's index.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write one JSON line per second to FILE: completed, blocked, errors, late
    /// sends and p50/p99 latency of that second (`{shard}` as for --json).
    #[arg(long, value_name = "FILE")]
    pub series: Option<PathBuf>,

    #[command(flatten)]
    pub sharding: ShardArgs,

    /// Names the run in its report, so `merge` refuses another run's shards
    /// [default: SLURM_JOB_ID under Slurm, else --start-at's time]; also seeds it
    /// when --seed is absent.
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,

    /// Open connections from these local addresses in turn, e.g.
    /// 127.0.0.2,127.0.0.3 (more ephemeral ports than one address has).
    #[arg(long, value_name = "IP", value_delimiter = ',')]
    pub bind: Vec<IpAddr>,

    /// Serve the driver's own Prometheus metrics at http://ADDR/metrics while it
    /// runs (sent, completed, blocked, errors, late sends, latency buckets).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,

    /// With --metrics-listen, keep serving this long after the run, so the last
    /// scrape sees the final counts.
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration, requires = "metrics_listen")]
    pub metrics_linger: Duration,
}

/// Which share of a split load this process runs, and when it starts
/// (`docs/scale-out.md`); the same for a run and a sweep.
#[derive(Debug, Clone, clap::Args)]
pub struct ShardArgs {
    /// Run shard K of N (0-based): the clients K, K+N, K+2N... of --n; in an open
    /// loop every N-th send of the timetable; in a sweep, of every step, with shard
    /// 0 alone configuring the server. Without it, JOB_COMPLETION_INDEX or
    /// NOMAD_ALLOC_INDEX (with --shards), or SLURM_PROCID and SLURM_NTASKS, name
    /// the shard.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,

    /// The number of shards, for JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's
    /// completions) or NOMAD_ALLOC_INDEX.
    #[arg(long, value_name = "N", conflicts_with = "shard")]
    pub shards: Option<u32>,

    /// Start the first sends at this wall-clock time: RFC 3339
    /// (2026-11-22T20:00:00Z) or +DURATION from now; connections open before. A
    /// sharded sweep's step i starts at TIME + i x (duration + --step-gap).
    #[arg(long, value_name = "TIME", value_parser = crate::scale_out::start::parse)]
    pub start_at: Option<crate::scale_out::start::StartAt>,
}

impl ShardArgs {
    /// The shard, from the flags or the job engine's variables read through `env`.
    pub fn resolve(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<ShardInfo>, crate::plan::shard::ShardError> {
        crate::plan::shard::resolve(self.shard, self.shards, env)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The seed's investigation in one command: the same closed-loop load at each
    /// client count, repeated, the server's counters reset before every run, then
    /// (with --fix) again after the scenario's fix; a table per minute beside what
    /// the server's model predicts.
    Sweep(Box<SweepArgs>),
    /// Add the JSON reports of a sharded run (`--json` of each shard) into one
    /// exact report: counts, sums, every percentile of the merged histograms.
    Merge(crate::scale_out::merge::MergeArgs),
    /// Find the highest rate (or client count) at which the bars hold: steps
    /// climbing by a ratio, then bisection; a row per step and what limits the
    /// server at the knee.
    Knee(Box<KneeArgs>),
    /// Compare two runs' reports (--json): the change in throughput, errors,
    /// blocked share and latency, each with a 99 % interval from a block
    /// bootstrap over the seconds, and better, worse or ~ (noise).
    Compare(crate::compare::CompareArgs),
}

#[derive(Debug, clap::Args)]
pub struct KneeArgs {
    /// A bar each step must keep (repeatable), as --threshold writes one:
    /// `p(99)<100ms`, `rate(errors)<1%`.
    #[arg(long = "bar", value_name = "BAR", required = true)]
    pub bars: Vec<String>,

    /// The server's base URL (plain http).
    #[arg(long, default_value = "http://127.0.0.1:7878")]
    pub target: String,

    /// The first level: a rate (`10/s`, an open loop) or clients (`8`, a
    /// closed loop).
    #[arg(long, default_value = "10/s")]
    pub from: String,

    /// The highest level tried, in --from's unit (default: 10,000 of it).
    #[arg(long)]
    pub to: Option<String>,

    /// Each climbing step's level over the one before.
    #[arg(long, default_value_t = 2.0)]
    pub ratio: f64,

    /// Stop when the highest pass and the lowest fail are this close (`5%`).
    #[arg(long, default_value = "5%", value_parser = simulator_api::load::parse_percent)]
    pub precision: f64,

    /// Each step's length.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub step: Duration,

    /// An open loop's connections.
    #[arg(long = "n", short = 'n', default_value_t = 256)]
    pub connections: usize,

    /// A closed loop's think time.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub think_time: Duration,

    /// Also write the steps as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Also draw latency against the level as an SVG (and a PNG beside it).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// Client counts, e.g. `1,15,125,135,1000` (the seed's).
    #[arg(
        long = "n",
        short = 'n',
        value_delimiter = ',',
        required_unless_present = "from"
    )]
    pub clients: Vec<usize>,

    /// The server's base URL (plain http).
    #[arg(long, default_value = "http://127.0.0.1:7878")]
    pub target: String,

    /// How long each run lasts.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub duration: Duration,

    /// Runs per client count (the seed took three).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,

    /// Pause between a reply and the next request.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub think_time: Duration,

    /// Then sweep again after a fix of the server's scenario, applied live at each
    /// client count (`/stats.model.fix` if no NAME: for the default scenario the
    /// seed's permits = 8 x clients).
    #[arg(long, value_name = "NAME", num_args = 0..=1)]
    pub fix: Option<Option<String>>,

    /// Switch the server to this bundled scenario first, live, and back after
    /// (`system-simulator scenarios` lists them).
    #[arg(long, value_name = "NAME")]
    pub scenario: Option<String>,

    /// Also write every figure as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Also write a Markdown report (the tables and the theory) to FILE.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// Also draw throughput, blocked share and latency against clients as SVG to
    /// FILE, and the same as PNG beside it (FILE with `.png`).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    #[command(flatten)]
    pub sharding: ShardArgs,

    /// A sharded sweep's pause between steps: the last replies drain and shard 0
    /// settles and resets the server.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub step_gap: Duration,

    /// Do not run: lay out a sweep saved earlier with --json (with --markdown, --svg).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json", "repeat", "duration", "fix", "scenario"])]
    pub from: Option<PathBuf>,
}

impl Args {
    /// The run the flags describe: their load, as a scenario's words would mean
    /// it ([`Load::from_args`]), with the driver's own options.
    pub fn plan(&self) -> Result<LoadPlan, LoadError> {
        // The command line is not kept as words: a plan shows its figures.
        let load = Load::from_args(&self.load, Vec::new())?;
        Ok(LoadPlan {
            late_after: self.late_after,
            max_drain: self.max_drain,
            shard: self.sharding.shard.map(|s| ShardInfo {
                index: s.index,
                count: s.count,
                source: ShardSource::Flag,
            }),
            start_at: self.sharding.start_at.map(|s| s.at),
            run_id: self.run_id.clone(),
            bind: self.bind.clone(),
            precise_pacing: self.precise_pacing,
            ..LoadPlan::new(load, &self.target)
        })
    }

    /// [`Args::plan`] with the shard and run id that the job engine's variables
    /// (read through `env`) give when the flags do not.
    ///
    /// `SIMULATOR_MAX_DURATION` cuts `--duration` (said on stderr).
    pub fn plan_in(&self, env: impl Fn(&str) -> Option<String>) -> anyhow::Result<LoadPlan> {
        let mut plan = self.plan()?;
        if let Some(wanted) = plan.stop.duration {
            let cap = max_duration::parse(env(max_duration::VAR).as_deref())?;
            let duration = max_duration::cut_and_say("sim-clients", "--duration", wanted, cap);
            plan.stop.duration = Some(duration);
        }
        plan.shard = self.sharding.resolve(&env)?;
        if plan.run_id.is_none() {
            plan.run_id = match plan.shard.map(|s| s.source) {
                Some(ShardSource::Slurm) => env("SLURM_JOB_ID"),
                _ => None,
            }
            .or_else(|| {
                // An absolute time is the same in every shard; +10s is each one's own.
                self.sharding
                    .start_at
                    .filter(|s| !s.relative)
                    .map(|s| crate::scale_out::start::name(s.at))
            });
        }
        plan.validate()?;
        Ok(plan)
    }
}
