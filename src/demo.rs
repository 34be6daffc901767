//! `system-simulator demo`: the whole seed in one command.
//!
//! Starts the server in this process on a free loopback port, runs the seed's
//! tipping-point load (135 clients, 1 s think time) for 30 s, applies the fix the
//! server reports for its scenario (`/stats.model.fix`, the seed's permits = 8 x
//! clients) through `PUT /admin/config`, runs the same load again, and prints both
//! count tables side by side with what the server's model predicts.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use simulator_api::{Delay, Model, Settings, SEED_COUNTS};
use simulator_clients::{endpoints, LoadPlan, Pacing, Report, Stop};
use tokio_util::sync::CancellationToken;

use crate::observe::probes;
use crate::scenario::Scenario;
use crate::serving;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Number of clients (the seed's tipping point is 135; try 15 or 1000).
    #[arg(long, default_value_t = 135)]
    pub clients: usize,

    /// How long each of the two runs lasts.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub duration: Duration,

    /// Client think time between a reply and the next request.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub think_time: Duration,

    /// Permits before the fix (the original's PERSIST_N); the fix multiplies them by the clients.
    #[arg(long, default_value_t = simulator_api::settings::DEFAULT_PERMITS)]
    pub permits: usize,

    /// Simulated store latency (the scenario's persistence), e.g. `exp(60ms)`.
    #[arg(long, default_value_t = simulator_api::settings::default_persist_latency())]
    pub persist_latency: Delay,
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let scenario = Scenario::original();
    let config = Settings {
        listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        permits: args.permits,
        persist_latency: args.persist_latency,
        ..scenario.settings()
    };
    config.validate()?;
    probes::register();
    let listener = serving::bind(config.listen)?;
    let url = format!("http://{}", listener.local_addr()?);
    let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serving::run(listener, None, config, scenario, async {
        let _ = stopped.await;
    }));
    let pid = std::process::id();
    println!(
        "demo: the data processor listens on {url} (pid {pid}); attach a tracer now if you like:"
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
    let plan = LoadPlan {
        target: url.clone(),
        clients: args.clients,
        pacing: Pacing::Closed {
            think_time: args.think_time,
            ramp_up: Duration::ZERO,
        },
        stop: Stop {
            duration: Some(args.duration),
            requests_per_client: None,
        },
        ..LoadPlan::default()
    };
    let show = std::io::stdout().is_terminal();
    let model = endpoints::stats(&url).await?.model;
    let fix = model
        .fix
        .clone()
        .context("the server reports no fix for its scenario")?;
    let fix_body = fix.config_for(args.clients).map_err(anyhow::Error::msg)?;

    println!(
        "1/2  {} clients for {}, {} permits (the original)",
        args.clients,
        humantime::format_duration(args.duration),
        args.permits
    );
    endpoints::reset(&url).await?;
    let before = simulator_clients::run(&plan, cancel.clone(), show).await?;

    println!(
        "2/2  the same load after the fix {}: {}",
        fix.name,
        serde_json::to_string(&fix_body)?
    );
    let fixed = endpoints::configure(&url, &fix_body).await?;
    endpoints::reset(&url).await?;
    let after = simulator_clients::run(&plan, cancel, show).await?;

    let _ = stop_server.send(());
    server.await??;
    print!(
        "{}",
        comparison(&args, fixed.permits, &model, &before, &after)
    );
    Ok(())
}

/// Both runs side by side, per minute, in the seed's words, and what they mean.
pub fn comparison(
    args: &DemoArgs,
    fixed_permits: usize,
    model: &Model,
    before: &Report,
    after: &Report,
) -> String {
    let per_min = |r: &Report, v: u64| v as f64 * 60e9 / r.elapsed_ns.max(1) as f64;
    let server =
        |r: &Report, get: fn(&simulator_api::Counts) -> u64| r.server.as_ref().map_or(0, get);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\ncounts per minute, {} clients, server-side (as count.d would show them):\n",
        args.clients
    );
    let _ = writeln!(
        out,
        "  {:<32} {:>18} {:>18}",
        "",
        format!("{} permits", args.permits),
        format!("{fixed_permits} permits")
    );
    for seed in SEED_COUNTS {
        let _ = writeln!(
            out,
            "  {:<32} {:>18.0} {:>18.0}",
            seed.label,
            per_min(before, server(before, seed.get)),
            per_min(after, server(after, seed.get))
        );
    }
    let _ = writeln!(
        out,
        "  {:<32} {:>17.1}% {:>17.1}%",
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
            "  {label:<32} {:>16.1}ms {:>16.1}ms",
            ms(pick(before)),
            ms(pick(after))
        );
    }
    let _ = writeln!(
        out,
        "  {:<32} {:>18} {:>18}",
        "client errors", before.errors, after.errors
    );

    let think_s = args.think_time.as_secs_f64();
    let offered = model.offered_per_s(args.clients, think_s);
    let Some(capacity) = model.capacity_per_s else {
        let _ = writeln!(
            out,
            "\nWhat happened: the server's model says nothing bounds how many persist at once ({}); \
             {} clients offer about {offered:.0}/s.",
            model.limited_by, args.clients
        );
        return out;
    };
    let _ = writeln!(
        out,
        "\nWhat happened: the server's model says the path is limited by {}, so by Little's law it \
         passes at most {:.0} requests/s ({:.0}/min). {} clients thinking {} between requests \
         offer about {offered:.0}/s. {} With {fixed_permits} permits the gate is no longer the limit: \
         nothing blocks and throughput follows the clients.",
        model.limited_by,
        capacity,
        capacity * 60.0,
        args.clients,
        humantime::format_duration(args.think_time),
        if offered > capacity {
            "That is more than the gate can pass, so requests queue for permits and throughput plateaus at the gate's capacity."
        } else {
            "That is within the gate's capacity, so blocking comes only from bursts (all clients start at once)."
        }
    );
    out
}
