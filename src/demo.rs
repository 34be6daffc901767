//! `system-simulator demo`: a scenario before and after one of its fixes, in one
//! command.
//!
//! Starts the server in this process on a free loopback port in the scenario
//! (`--scenario`, the original seed 003 by default), runs the scenario's own load
//! (closed or open loop as its `load` says; clients and think time overridable)
//! for 30 s, applies the fix (`--fix`,
//! the scenario's first by default: the seed's permits = 8 x clients) through
//! `PUT /admin/config`, runs the same load again, and prints both count tables
//! side by side with what the server's model predicts before and after. A fix
//! on the clients' side (`load` in the scenario) runs the second load with its
//! retry flags. A scenario with an incident (retry-storm) has it begun in each
//! run, its `at` in, and each run lasts until 25 s after it ends; the demo then
//! prints the goodput second by second, so the storm that outlives its trigger,
//! and the recovery after the fix, show as numbers.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use simulator_api::client;
use simulator_api::{max_duration, Counts, Fix, Model, Settings, SEED_COUNTS};
use simulator_clients::{LoadPlan, Pacing, Report};
use tokio_util::sync::CancellationToken;

use simulator_service::scenario::{self, Scenario};
use simulator_service::server;
use simulator_service::server::Answers;
use simulator_service::server::IncidentMode;
use simulator_service::server::SettingFlags;

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
    /// Keep both runs: DIR/before.isim and DIR/after.isim, every probe and
    /// /stats a second (`system-simulator record`'s files), to replay
    /// (`trace NAME --from FILE`) or open in Perfetto (`export`).
    #[arg(long, value_name = "DIR")]
    pub record: Option<std::path::PathBuf>,

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
            self.duration.max(scenario.incident_window()),
            max_duration::from_env()?,
        );
        let mut load = LoadPlan::running_for(&scenario.load, "http://127.0.0.1:0", Some(duration));
        if let Some(clients) = self.clients {
            load.load.clients = clients;
        }
        match (&mut load.load.pacing, self.think_time) {
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
        if !settings.cpu_quota.is_zero() {
            // The demo's server and its load share this process: a cgroup
            // quota would hold the load as well, and the lesson would be wrong.
            anyhow::bail!(
                "scenario {} puts the server under a CPU quota of its own, and the demo runs the server and its load in one process: the quota would hold the load too. Run the exercise instead: `workshop start {}` and its load (docs/workshop/)",
                scenario.name,
                scenario.name
            );
        }
        Ok(Plan {
            scenario,
            fix,
            load,
            settings,
        })
    }
}

/// A server of the demo's, in this process: its URL, how to stop it, and its end.
struct DemoServer {
    url: String,
    stop: tokio::sync::oneshot::Sender<()>,
    ended:
        tokio::task::JoinHandle<Result<simulator_service::server::DrainReport, server::ServeError>>,
}

impl DemoServer {
    fn start(plan: &Plan, listen: SocketAddr) -> anyhow::Result<Self> {
        let listener = server::bind(listen, plan.settings.listen_backlog)?;
        let url = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let ended = tokio::spawn(server::serve(
            listener,
            None,
            plan.settings.clone(),
            plan.scenario.clone(),
            Answers::Shown,
            IncidentMode::OnDemand,
            async {
                let _ = stopped.await;
            },
        ));
        Ok(Self { url, stop, ended })
    }

    async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.ended.await??;
        Ok(())
    }
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let plan = args.plan()?;
    server::register_probes();
    let first = DemoServer::start(&plan, plan.settings.listen)?;
    let url = first.url.clone();
    announce(&plan, &url);

    let cancel = cancelled_by_ctrl_c();
    let (load, fixed_load) = loads(&plan, &url)?;
    let incident = plan.scenario.incident.first();
    let show = std::io::stdout().is_terminal();
    let fix_body = plan
        .fix
        .config_for(load.load.clients)
        .map_err(anyhow::Error::msg)?;

    println!(
        "1/2  {} for {}, the scenario as it is",
        describe(&load),
        humantime::format_duration(load.stop.duration.unwrap_or(args.duration))
    );
    let before_model = client::stats(&url).await?.model;
    client::reset(&url).await?;
    let recording = start_recording(&args, &url, "before").await?;
    let before = run_once(&load, incident, cancel.clone(), show).await?;
    kept(recording).await;

    println!(
        "2/2  the same load after the fix {}: {}",
        plan.fix.name,
        fix_words(&plan.fix, &fix_body)?
    );
    let (server, fixed_load) = match incident {
        None => (first, fixed_load),
        Some(_) => after_the_storm(&plan, first, fixed_load).await?,
    };
    client::configure(&server.url, &fix_body).await?;
    if let Some(command) = &plan.fix.outside {
        println!("     outside the service: {command}");
        crate::workshop::figures::run_outside(command, &server.url).await?;
    }
    let after_model = client::stats(&server.url).await?.model;
    client::reset(&server.url).await?;
    let recording = start_recording(&args, &server.url, "after").await?;
    let after = run_once(&fixed_load, incident, cancel, show).await?;
    kept(recording).await;
    server.stop().await?;
    let runs = Runs {
        load: &load,
        fix: &plan.fix,
        before: (&before_model, &before),
        after: (&after_model, &after),
    };
    print!("{}", comparison(&runs));
    if let Some(incident) = incident {
        print!("{}", goodput_timeline(&runs, incident));
    }
    print!("{}", told_apart(&runs)?);
    Ok(())
}

/// With `--record DIR`, a recording of one run into DIR/NAME.isim, begun.
async fn start_recording(
    args: &DemoArgs,
    url: &str,
    name: &str,
) -> anyhow::Result<Option<crate::recording::record::Beside>> {
    let Some(dir) = &args.record else {
        return Ok(None);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let path = dir.join(format!("{name}.isim"));
    Ok(Some(
        crate::recording::record::beside(url, None, &path).await?,
    ))
}

async fn kept(recording: Option<crate::recording::record::Beside>) {
    if let Some(recording) = recording {
        match recording.end().await {
            Ok(kept) => println!("     kept in {kept}"),
            Err(e) => eprintln!("demo: the recording failed: {e:#}"),
        }
    }
}

/// A token Ctrl-C cancels: the run in progress ends early and reports.
fn cancelled_by_ctrl_c() -> CancellationToken {
    let cancel = CancellationToken::new();
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        }
    });
    cancel
}

/// The load before the fix, aimed at `url`, and the same after it with the
/// fix's change of the clients (a retry policy) where it has one.
fn loads(plan: &Plan, url: &str) -> anyhow::Result<(LoadPlan, LoadPlan)> {
    let load = LoadPlan {
        target: url.to_owned(),
        ..plan.load.clone()
    };
    let fixed_load = plan.scenario.load_with(&plan.fix.load).map(|changed| {
        let mut fixed = load.clone();
        fixed.load.retry = changed.retry;
        fixed
    })?;
    Ok((load, fixed_load))
}

/// The fix as the second run's line says it: its body, and the clients'
/// change where it has one.
fn fix_words(fix: &Fix, body: &simulator_api::SettingsUpdate) -> anyhow::Result<String> {
    let clients = match fix.load.is_empty() {
        true => String::new(),
        false => format!(", clients {}", crate::local::shell_line(&fix.load)),
    };
    Ok(format!("{}{clients}", serde_json::to_string(body)?))
}

/// After a storm the server is full of requests whose clients have gone
/// (thousands, each still to be written): the fix gets a fresh server, as in
/// `workshop figures`, so the second run does not begin inside the first's wreck.
/// The fresh server, and `fixed_load` aimed at it.
async fn after_the_storm(
    plan: &Plan,
    first: DemoServer,
    fixed_load: LoadPlan,
) -> anyhow::Result<(DemoServer, LoadPlan)> {
    let left = client::stats(&first.url).await?.requests_in_flight;
    println!("     on a fresh server: the storm left {left} requests in the first, most for clients that have gone");
    let stopping = tokio::spawn(first.stop());
    let fresh = DemoServer::start(plan, SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
    let load = LoadPlan {
        target: fresh.url.clone(),
        ..fixed_load
    };
    // The first drains (and cuts short what is left) while the second runs.
    tokio::spawn(async move {
        if let Ok(Err(e)) = stopping.await {
            eprintln!("demo: the first server: {e}");
        }
    });
    Ok((fresh, load))
}

/// What the demo runs, and how to trace it or watch it while it does.
fn announce(plan: &Plan, url: &str) {
    let pid = std::process::id();
    println!(
        "demo: scenario {} ({}): {}\n  the data processor listens on {url} (pid {pid}); attach a tracer now if you like:",
        plan.scenario.name, plan.scenario.seed_words(), plan.scenario.summary
    );
    for command in server::trace_commands(pid, &plan.scenario.scripts) {
        println!("  {command}");
    }
    println!("  or watch it in a browser: {url}/live");
    println!();
}

/// One run of `load`; with an `incident`, begun its `at` into the run, and the
/// run's seconds kept for the timeline.
async fn run_once(
    load: &LoadPlan,
    incident: Option<&simulator_api::Incident>,
    cancel: CancellationToken,
    show: bool,
) -> anyhow::Result<Report> {
    let trigger = incident.map(|incident| {
        let (target, at) = (load.target.clone(), incident.at);
        tokio::spawn(async move {
            tokio::time::sleep(at).await;
            client::begin_incident(&target, None).await
        })
    });
    // Every second kept: the goodput timeline of an incident, and the
    // comparison of the two runs told apart from their noise.
    let outputs = simulator_clients::Outputs {
        progress: show,
        seconds: true,
        ..Default::default()
    };
    let report = simulator_clients::run_with(load, cancel, outputs).await?;
    if let Some(why) = report.out_of_descriptors() {
        anyhow::bail!("the demo's clients: {why}");
    }
    if let Some(trigger) = trigger {
        trigger
            .await?
            .context("the demo could not begin the scenario's incident")?;
    }
    Ok(report)
}

/// Goodput and attempts second by second, before and after, with the incident
/// marked: what a storm that outlives its trigger looks like.
fn goodput_timeline(runs: &Runs, incident: &simulator_api::Incident) -> String {
    let (_, before) = runs.before;
    let (_, after) = runs.after;
    let (from, to) = (
        incident.at.as_secs_f64(),
        (incident.at + incident.lasts).as_secs_f64(),
    );
    let mut out = format!(
        "
goodput (answered within the clients' timeout) and attempts sent, a second; * = {}

  {:>4}   {:>18}   {:>18}
",
        incident.summary,
        "s",
        "before: good/sent",
        format!("after: good/sent"),
    );
    let seconds = before.seconds.len().max(after.seconds.len());
    for i in 0..seconds {
        let cell = |r: &Report| {
            r.seconds.get(i).map_or(String::new(), |s| {
                format!("{}/{}", s.line.completed, s.line.sent)
            })
        };
        let t = (i + 1) as f64;
        let mark = if t > from && t - 1.0 < to { "*" } else { " " };
        let _ = writeln!(
            out,
            "  {:>4}{mark}  {:>18}   {:>18}",
            i + 1,
            cell(before),
            cell(after)
        );
    }
    out
}

/// The load in words: `135 clients thinking 1s` or `400 requests/s open loop`.
fn describe(load: &LoadPlan) -> String {
    match load.load.pacing {
        Pacing::Closed { think_time, .. } => format!(
            "{} clients thinking {}",
            load.load.clients,
            humantime::format_duration(think_time)
        ),
        Pacing::Open { rate, .. } => format!(
            "{rate} requests/s open loop over {} connections",
            load.load.clients
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
    let (_, before) = runs.before;
    let (_, after) = runs.after;
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
            (|r: &Report| r.summary.latency.p50_ns) as fn(&Report) -> u64,
        ),
        ("latency p99 (client)", |r: &Report| {
            r.summary.latency.p99_ns
        }),
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

    out.push_str(&what_happened(runs));
    out
}

/// The two runs told apart from their noise (`sim-clients compare`'s
/// statistics: a moving-block bootstrap over the seconds, 99 % intervals);
/// nothing for runs of under 2 s, which a comparison cannot read.
fn told_apart(runs: &Runs) -> anyhow::Result<String> {
    let (_, before) = runs.before;
    let (_, after) = runs.after;
    if before.seconds.len() < 2 || after.seconds.len() < 2 {
        return Ok(String::new());
    }
    let after_name = format!("after {}", runs.fix.name);
    let c = simulator_clients::compare::before_and_after(before, after, ["before", &after_name])?;
    Ok(format!(
        "\nTold apart from noise (`compare`: each second resampled in blocks, 99 % intervals; `~` is no change beyond the noise):\n{}",
        simulator_clients::compare::render(&c)
    ))
}

/// What the model makes of the load before and after the fix, in words.
fn what_happened(runs: &Runs) -> String {
    let (before_model, _) = runs.before;
    let (after_model, _) = runs.after;
    let offered = match runs.load.load.pacing {
        Pacing::Closed { think_time, .. } => {
            before_model.offered_per_s(runs.load.load.clients, think_time.as_secs_f64())
        }
        Pacing::Open { rate, .. } => rate,
    };
    format!(
        "\nWhat happened: {} offer about {offered:.0} requests/s. {}\n\
         The fix {}: {}\nAfter it: {}\n",
        describe(runs.load),
        model_says(before_model, offered),
        runs.fix.name,
        runs.fix.summary,
        model_says(after_model, offered),
    )
}

/// What the server's model says of a load offering `offered` requests a second,
/// and, when its clients retry, of the load they send once requests time out.
fn model_says(model: &Model, offered: f64) -> String {
    let mut said = capacity_says(model, offered);
    if let (Some(r), Some(capacity)) = (&model.retried, model.capacity_per_s) {
        said.push_str(&format!(
            " Its clients retry: once requests time out (after {:.0} ms), each makes {:.1} attempts, {:.0} a second, {} than the capacity{}",
            r.timeout_ns as f64 / 1e6,
            r.attempts_when_failing,
            r.retried_per_s,
            if r.retried_per_s > capacity { "more" } else { "less" },
            if r.retried_per_s > capacity {
                ": a trigger that makes them time out can leave the server overloaded after it has gone (two stable states)."
            } else {
                ", so an overload ends with its trigger."
            }
        ));
    }
    said
}

/// What the capacity means for a load offering `offered` requests a second.
fn capacity_says(model: &Model, offered: f64) -> String {
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
