//! `sim-clients` flags, turned into a [`LoadPlan`].

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use tokio_util::sync::CancellationToken;

use crate::plan::{LoadPlan, PayloadSize, Stop};

/// N virtual clients against system-simulator: the original simulator's closed
/// loop (send, wait for the reply, think, repeat), with a report laid out like the
/// seed's DTrace output.
#[derive(Debug, Parser)]
#[command(name = "sim-clients", version, about, long_about = None)]
pub struct Args {
    /// Number of clients, each with its own keep-alive connection.
    #[arg(long = "n", short = 'n', default_value_t = 1)]
    pub clients: usize,

    /// The server's base URL (plain http).
    #[arg(long, default_value = "http://127.0.0.1:7878")]
    pub target: String,

    /// How long to run, e.g. `60s`, `2m`. Default 60s unless --requests is given.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,

    /// Stop each client after this many requests.
    #[arg(long, value_name = "K")]
    pub requests: Option<u64>,

    /// Pause between a reply and the next request.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub think_time: Duration,

    /// Spread client starts over this long (default: all at once, as the original).
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub ramp_up: Duration,

    /// Element size in bytes: `1024` or `uniform(LOW, HIGH)`.
    #[arg(long, default_value = "1024")]
    pub payload_size: PayloadSize,

    /// Give up on a request after this long (counted as a timeout error).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,

    /// Also write every figure as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl Args {
    pub fn plan(&self) -> LoadPlan {
        let duration = match (self.duration, self.requests) {
            (None, None) => Some(Duration::from_secs(60)),
            (d, _) => d,
        };
        LoadPlan {
            target: self.target.clone(),
            clients: self.clients,
            think_time: self.think_time,
            ramp_up: self.ramp_up,
            stop: Stop {
                duration,
                requests_per_client: self.requests,
            },
            payload: self.payload_size,
            timeout: self.timeout,
        }
    }
}

/// What `main` runs: the plan, Ctrl-C as an early stop that still reports.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let plan = args.plan();
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
    let report = crate::run(&plan, cancel, std::io::stdout().is_terminal()).await?;
    print!("{}", report.render());
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report)?;
        if path.as_os_str() == "-" {
            println!("{json}");
        } else {
            std::fs::write(path, json + "\n")
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(())
}
