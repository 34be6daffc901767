//! `system-simulator demo`: a scenario before and after one of its fixes, in one
//! command.
//!
//! Starts the server in this process on a free loopback port in the scenario
//! (`--scenario`, the original seed 003 by default), runs the scenario's own load
//! (closed or open loop as its `load` says; clients and think time overridable)
//! for 30 s, applies the fix (`--fix`,
//! the scenario's first by default: the seed's permits = 8 x clients) through
//! `PUT /admin/config`, runs the same load again, and prints both count tables
//! side by side with what the server's model predicts before and after.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use simulator_api::{max_duration, Counts, Fix, Model, Settings, SEED_COUNTS};
use simulator_clients::{endpoints, LoadPlan, Pacing, Report};
use tokio_util::sync::CancellationToken;

use crate::config::SettingFlags;
use crate::observe::probes;
use crate::scenario::{self, Scenario};
use crate::serving;
use crate::serving::answers::Answers;

#[derive(Debug, Args)]
#[command(
    mut_arg("listen", |a| a.help("Address the demo's server listens on [default: a free port on 127.0.0.1]")),
    mut_arg("admin_listen", |a| a.hide(true))
)]
pub struct DemoArgs {
    /// The scenario to show (`system-simulator scenarios` lists them).
    #[arg(long, default_value = scenario::DEFAULT)]
    pub scenario: String,

    /// The fix to apply between the two runs [default: the scenario's first].
    #[arg(long, value_name = "NAME")]
    pub fix: Option<String>,

    /// Number of clients [default: the scenario's load; 135 for the original, the
    /// seed's tipping point; try 15 or 1000].
    #[arg(long)]
    pub clients: Option<usize>,

    /// How long each of the two runs lasts.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub duration: Duration,

    /// Client think time between a reply and the next request [default: the
    /// scenario's load].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub think_time: Option<Duration>,

    /// Settings for the run before the fix, over the scenario's: any of `serve`'s
    /// setting flags (`--permits`, `--persist-latency`, ...), from the same
    /// declaration. The demo's server listens on a free loopback port unless
    /// `--listen` names one.
    #[command(flatten)]
    pub settings: SettingFlags,
}

/// The demo's load and settings, the scenario's where the flags say nothing.
struct Plan {
    scenario: Scenario,
    fix: Fix,
    /// The scenario's load, its target not yet known.
    load: LoadPlan,
    settings: Settings,
}

impl DemoArgs {
    fn plan(&self) -> anyhow::Result<Plan> {
        let scenario = Scenario::load(&self.scenario)?;
        let fix = match &self.fix {
            None => scenario.fixes.first().cloned(),
            Some(name) => scenario.fixes.iter().find(|f| &f.name == name).cloned(),
        }
        .with_context(|| {
            let names: Vec<&str> = scenario.fixes.iter().map(|f| f.name.as_str()).collect();
            format!(
                "scenario {} has no fix {}; it offers: {}",
                scenario.name,
                self.fix.as_deref().unwrap_or("at all"),
                names.join(", ")
            )
        })?;
        let duration = max_duration::cut_and_say(
            "demo",
            "each run's --duration",
            self.duration,
            max_duration::from_env()?,
        );
        let mut load = scenario.load_plan("http://127.0.0.1:0", Some(duration));
        if let Some(clients) = self.clients {
            load.clients = clients;
        }
        match (&mut load.pacing, self.think_time) {
            (Pacing::Closed { think_time, .. }, Some(think)) => *think_time = think,
            (Pacing::Open { .. }, Some(_)) => anyhow::bail!(
                "scenario {} runs an open-loop load (a rate, no think time): drop --think-time",
                scenario.name
            ),
            (_, None) => {}
        }
        let given = &self.settings.0;
        let settings = Settings {
            listen: given
                .listen
                .unwrap_or(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))),
            ..scenario.settings().with(given)
        };
        settings.validate()?;
        Ok(Plan {
            scenario,
            fix,
            load,
            settings,
        })
    }
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let plan = args.plan()?;
    probes::register();
    let listener = serving::bind(plan.settings.listen)?;
    let url = format!("http://{}", listener.local_addr()?);
    let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serving::run(
        listener,
        None,
        plan.settings.clone(),
        plan.scenario.clone(),
        Answers::Shown,
        async {
            let _ = stopped.await;
        },
    ));
    let pid = std::process::id();
    println!(
        "demo: scenario {} (seed {}): {}\n  the data processor listens on {url} (pid {pid}); attach a tracer now if you like:",
        plan.scenario.name, plan.scenario.seed, plan.scenario.summary
    );
    for command in probes::trace_commands(pid) {
        println!("  {command}");
    }
    println!();

    let cancel = CancellationToken::new();
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        }
    });
    let load = LoadPlan {
        target: url.clone(),
        ..plan.load.clone()
    };
    let show = std::io::stdout().is_terminal();
    let fix_body = plan
        .fix
        .config_for(load.clients)
        .map_err(anyhow::Error::msg)?;

    println!(
        "1/2  {} for {}, the scenario as it is",
        describe(&load),
        humantime::format_duration(args.duration)
    );
    let before_model = endpoints::stats(&url).await?.model;
    endpoints::reset(&url).await?;
    let before = simulator_clients::run(&load, cancel.clone(), show).await?;

    println!(
        "2/2  the same load after the fix {}: {}",
        plan.fix.name,
        serde_json::to_string(&fix_body)?
    );
    endpoints::configure(&url, &fix_body).await?;
    let after_model = endpoints::stats(&url).await?.model;
    endpoints::reset(&url).await?;
    let after = simulator_clients::run(&load, cancel, show).await?;

    let _ = stop_server.send(());
    server.await??;
    let runs = Runs {
        load: &load,
        fix: &plan.fix,
        before: (&before_model, &before),
        after: (&after_model, &after),
    };
    print!("{}", comparison(&runs));
    Ok(())
}

/// The load in words: `135 clients thinking 1s` or `400 requests/s open loop`.
fn describe(load: &LoadPlan) -> String {
    match load.pacing {
        Pacing::Closed { think_time, .. } => format!(
            "{} clients thinking {}",
            load.clients,
            humantime::format_duration(think_time)
        ),
        Pacing::Open { rate, .. } => format!(
            "{rate} requests/s open loop over {} connections",
            load.clients
        ),
    }
}

/// The two runs and what the server's model said of each.
#[derive(Debug)]
pub struct Runs<'a> {
    pub load: &'a LoadPlan,
    pub fix: &'a Fix,
    pub before: (&'a Model, &'a Report),
    pub after: (&'a Model, &'a Report),
}

/// Both runs side by side, per minute, in the seed's words, and what they mean.
pub fn comparison(runs: &Runs) -> String {
    let (before_model, before) = runs.before;
    let (after_model, after) = runs.after;
    let per_min = |r: &Report, v: u64| v as f64 * 60e9 / r.elapsed_ns.max(1) as f64;
    let server = |r: &Report, get: fn(&Counts) -> u64| r.server.as_ref().map_or(0, get);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\ncounts per minute, {}, server-side (as count.d would show them):\n",
        describe(runs.load)
    );
    let _ = writeln!(
        out,
        "  {:<32} {:>24} {:>24}",
        "",
        "before",
        format!("after {}", runs.fix.name)
    );
    for seed in SEED_COUNTS {
        let _ = writeln!(
            out,
            "  {:<32} {:>24.0} {:>24.0}",
            seed.label,
            per_min(before, server(before, seed.get)),
            per_min(after, server(after, seed.get))
        );
    }
    let _ = writeln!(
        out,
        "  {:<32} {:>24.0} {:>24.0}",
        "shed requests (503)",
        per_min(
            before,
            server(before, |c| c.requests_shed + c.queue_refused)
        ),
        per_min(after, server(after, |c| c.requests_shed + c.queue_refused))
    );
    let _ = writeln!(
        out,
        "  {:<32} {:>23.1}% {:>23.1}%",
        "blocked share",
        before.blocked_share * 100.0,
        after.blocked_share * 100.0
    );
    let ms = |ns: u64| ns as f64 / 1e6;
    for (label, pick) in [
        (
            "latency p50 (client)",
            (|r: &Report| r.latency.p50_ns) as fn(&Report) -> u64,
        ),
        ("latency p99 (client)", |r: &Report| r.latency.p99_ns),
    ] {
        let _ = writeln!(
            out,
            "  {label:<32} {:>22.1}ms {:>22.1}ms",
            ms(pick(before)),
            ms(pick(after))
        );
    }
    let _ = writeln!(
        out,
        "  {:<32} {:>24} {:>24}",
        "client errors", before.errors, after.errors
    );

    let offered = match runs.load.pacing {
        Pacing::Closed { think_time, .. } => {
            before_model.offered_per_s(runs.load.clients, think_time.as_secs_f64())
        }
        Pacing::Open { rate, .. } => rate,
    };
    let _ = writeln!(
        out,
        "\nWhat happened: {} offer about {offered:.0} requests/s. {}\n\
         The fix {}: {}\nAfter it: {}",
        describe(runs.load),
        model_says(before_model, offered),
        runs.fix.name,
        runs.fix.summary,
        model_says(after_model, offered),
    );
    out
}

/// What the server's model says of a load offering `offered` requests a second.
fn model_says(model: &Model, offered: f64) -> String {
    match model.capacity_per_s {
        None => format!(
            "The server's model finds nothing bounding how many persist at once ({}), so \
             throughput can follow the clients.",
            model.limited_by
        ),
        Some(capacity) => format!(
            "The server's model says the path is limited by {}, so by Little's law it passes at \
             most {capacity:.0} requests/s ({:.0}/min); {}",
            model.limited_by,
            capacity * 60.0,
            if offered > capacity {
                "the load offers more, so requests wait (or are refused) and throughput plateaus there."
            } else {
                "the load offers less, so waits come only from clients arriving together."
            }
        ),
    }
}
