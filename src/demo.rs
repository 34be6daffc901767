//! `system-simulator demo`: the whole seed in one command.
//!
//! Starts the server in this process on a free loopback port, runs the seed's
//! tipping-point load (135 clients, 1 s think time) for 30 s, applies the seed's fix
//! (permits = 8 x clients) through `PUT /admin/config`, runs the same load again,
//! and prints both count tables side by side with what Little's law predicts.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use simulator_clients::{server as endpoints, LoadPlan, Pacing, Report, Stop};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::delay::Delay;
use crate::{probes, server};

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
    #[arg(long, default_value_t = crate::config::DEFAULT_PERMITS)]
    pub permits: usize,

    /// Simulated store latency (the scenario's persistence), e.g. `exp(60ms)`.
    #[arg(long, default_value_t = crate::config::default_persist_latency())]
    pub persist_latency: Delay,
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let config = ServerConfig {
        listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        permits: args.permits,
        persist_latency: args.persist_latency,
        ..ServerConfig::default()
    };
    config.validate()?;
    let fixed_permits = args
        .permits
        .checked_mul(args.clients)
        .context("permits x clients overflows")?;
    probes::register();
    let listener = server::bind(config.listen)?;
    let url = format!("http://{}", listener.local_addr()?);
    let mean_persist = config.persist_latency.mean();
    let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server::run(listener, config, async {
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

    println!(
        "1/2  {} clients for {}, {} permits (the original)",
        args.clients,
        humantime::format_duration(args.duration),
        args.permits
    );
    endpoints::reset(&url).await?;
    let before = simulator_clients::run(&plan, cancel.clone(), show).await?;

    println!(
        "2/2  the same load after the seed's fix: permits = {} x {} = {fixed_permits}",
        args.permits, args.clients
    );
    endpoints::set_permits(&url, fixed_permits).await?;
    endpoints::reset(&url).await?;
    let after = simulator_clients::run(&plan, cancel, show).await?;

    let _ = stop_server.send(());
    server.await??;
    print!(
        "{}",
        comparison(&args, fixed_permits, mean_persist, &before, &after)
    );
    Ok(())
}

/// Both runs side by side, per minute, in the seed's words, and what they mean.
pub fn comparison(
    args: &DemoArgs,
    fixed_permits: usize,
    mean_persist: Duration,
    before: &Report,
    after: &Report,
) -> String {
    let per_min = |r: &Report, v: u64| v as f64 * 60e9 / r.elapsed_ns.max(1) as f64;
    let server = |r: &Report, k: &str| r.server.as_ref().map_or(0, |s| s.get(k));
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
    for (label, key) in crate::stats::SEED_COUNT_FIELDS {
        let _ = writeln!(
            out,
            "  {label:<32} {:>18.0} {:>18.0}",
            per_min(before, server(before, key)),
            per_min(after, server(after, key))
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

    let capacity = args.permits as f64 / mean_persist.as_secs_f64();
    let offered = args.clients as f64 / (args.think_time.as_secs_f64() + 0.0035);
    let _ = writeln!(
        out,
        "\nWhat happened: each permit is held for a whole persist ({:.0} ms on average), not for the \
         request, so {} permits let through at most {} / {:.3} s = {:.0} requests/s ({:.0}/min) by \
         Little's law. {} clients thinking {} between requests offer about {:.0}/s. {} \
         With {fixed_permits} permits the gate is no longer the limit: nothing blocks and throughput \
         follows the clients.",
        mean_persist.as_secs_f64() * 1e3,
        args.permits,
        args.permits,
        mean_persist.as_secs_f64(),
        capacity,
        capacity * 60.0,
        args.clients,
        humantime::format_duration(args.think_time),
        offered,
        if offered > capacity {
            "That is more than the gate can pass, so requests queue for permits and throughput plateaus at the gate's capacity."
        } else {
            "That is within the gate's capacity, so blocking comes only from bursts (all clients start at once)."
        }
    );
    out
}
