//! The command line: `system-simulator serve` and its flags.
//!
//! Flags override the `--config` file, which overrides the defaults (the original
//! simulator). Every flag's help names its default; a test renders `--help` and
//! checks those against [`ServerConfig::default`] so the two cannot drift.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::config::ServerConfig;
use crate::delay::Delay;
use crate::{probes, server, shutdown};

/// A deliberately imperfect, USDT-instrumented data processor for practising
/// performance troubleshooting (provider `isim`).
#[derive(Debug, Parser)]
#[command(name = "system-simulator", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the data processor over HTTP (POST /requests, GET /stats, GET /metrics).
    Serve(Box<ServeArgs>),
    /// The seed in one command: the server, 135 clients for 30 s, the fix, again.
    Demo(crate::demo::DemoArgs),
    /// The load generator, the same as the `sim-clients` binary (same flags).
    Clients(Box<simulator_clients::cli::Args>),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// TOML file with any of the settings below (keys are the flag names with `_`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Address to listen on; port 0 picks a free port [default: 127.0.0.1:7878].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,

    /// Persistence permits: how many persists may run at once (the original's
    /// PERSIST_N) [default: 8].
    #[arg(long, value_name = "N")]
    pub permits: Option<usize>,

    /// Simulated store latency per element, e.g. `60ms`, `exp(60ms)`,
    /// `uniform(50ms, 70ms)` [default: 50ms + normal(10ms, 5ms)].
    #[arg(long, value_name = "DELAY")]
    pub persist_latency: Option<Delay>,

    /// Extra simulated store time per MiB of element [default: 0s].
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub persist_cost_per_mib: Option<Duration>,

    /// Simulated network delay, applied on the way in and again on the way out,
    /// inside the request lifetime [default: 500us + normal(1ms, 100us)].
    #[arg(long, value_name = "DELAY")]
    pub network_delay: Option<Delay>,

    /// Share of persists that fail on purpose, 0 to 1 [default: 0].
    #[arg(long, value_name = "P")]
    pub persist_error_rate: Option<f64>,

    /// Share of persists that hang until --persist-timeout ends them, 0 to 1
    /// [default: 0].
    #[arg(long, value_name = "P")]
    pub persist_stall_rate: Option<f64>,

    /// A persist still running after this fails and gives its permit back
    /// [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub persist_timeout: Option<Duration>,

    /// Write every element to DIR/<id>.bin instead of simulating the store (real
    /// I/O; files are kept).
    #[arg(long, value_name = "DIR")]
    pub persist_dir: Option<PathBuf>,

    /// With --persist-dir: fsync each file before the persist counts as done.
    #[arg(long)]
    pub persist_fsync: bool,

    /// With --persist-dir: reply only once the element is fsync'd to disk, so a
    /// crash loses no acknowledged element (the request then waits for its persist).
    #[arg(long)]
    pub durable: bool,

    /// Close a connection that has not sent a whole request head within this of
    /// opening or going idle [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub header_read_timeout: Option<Duration>,

    /// Answer 408 when a request body has not fully arrived within this [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub body_read_timeout: Option<Duration>,

    /// Connections open at once; beyond it a new connection gets 503 and is closed
    /// [default: 10000].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,

    /// Largest raw request body accepted, e.g. `64k`, `16MiB` [default: 16MiB].
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_body_bytes: Option<u64>,

    /// Largest synthetic element (`{"size": N}`) accepted [default: 1GiB].
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_element_bytes: Option<u64>,

    /// How long shutdown waits for requests and persists in flight [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub drain_timeout: Option<Duration>,

    /// Require `Authorization: Bearer TOKEN` on admin routes, from any address.
    /// Without it, admin routes answer loopback clients only.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "ISIM_ADMIN_TOKEN",
        hide_env_values = true
    )]
    pub admin_token: Option<String>,
}

impl ServeArgs {
    /// Defaults, then the file, then the flags; validated.
    pub fn resolve(&self) -> anyhow::Result<ServerConfig> {
        let mut c = match &self.config {
            Some(path) => ServerConfig::from_file(path)?,
            None => ServerConfig::default(),
        };
        macro_rules! overlay {
            ($($field:ident),*) => { $( if let Some(v) = self.$field.clone() { c.$field = v; } )* };
        }
        overlay!(
            listen,
            permits,
            persist_latency,
            persist_cost_per_mib,
            network_delay,
            persist_error_rate,
            persist_stall_rate,
            persist_timeout,
            max_body_bytes,
            max_element_bytes,
            drain_timeout,
            header_read_timeout,
            body_read_timeout,
            max_connections
        );
        if self.persist_dir.is_some() {
            c.persist_dir = self.persist_dir.clone();
        }
        if self.admin_token.is_some() {
            c.admin_token = self.admin_token.clone();
        }
        c.persist_fsync |= self.persist_fsync;
        c.durable |= self.durable;
        c.validate()?;
        Ok(c)
    }
}

/// Parses `4096`, `64k`, `64KiB`, `16M`, `16MiB`, `1G`, `1GiB` (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a size: write e.g. 4096, 64k or 16MiB"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => {
            return Err(format!(
                "unknown size unit `{other}`: use k, M or G (powers of 1024)"
            ))
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// What `main` runs.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve(*args).await,
        Command::Demo(args) => crate::demo::run(args).await,
        Command::Clients(args) => simulator_clients::cli::run(*args).await,
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let config = args.resolve()?;
    probes::register();
    let listener = server::bind(config.listen)
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let addr = listener.local_addr()?;
    let pid = std::process::id();
    // The first line is a contract: tests and scripts read the address from it.
    println!("system-simulator listening on http://{addr} (pid {pid})");
    println!(
        "  permits {}, persist latency {}, network delay {} each way",
        config.permits, config.persist_latency, config.network_delay
    );
    for (i, command) in probes::trace_commands(pid).iter().enumerate() {
        let lead = if i == 0 { "trace it:" } else { "" };
        println!("  {lead:<10} {command}");
    }
    println!("  stop with Ctrl-C; final counts are printed on exit");
    tracing::info!(%addr, pid, ?config.permits, "serving");
    let report = server::run(listener, config, shutdown::signal()).await?;
    print!("{}", shutdown::final_report(&report));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("16MiB"), Ok(16 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5 parsecs").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
    }

    #[test]
    fn help_states_the_real_defaults() {
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("serve")
            .unwrap()
            .render_long_help()
            .to_string();
        let d = ServerConfig::default();
        for default in [
            format!("[default: {}]", d.listen),
            format!("[default: {}]", d.permits),
            format!("[default: {}]", d.persist_latency),
            format!("[default: {}]", d.network_delay),
            format!("[default: {}]", humantime::format_duration(d.drain_timeout)),
            format!(
                "[default: {}]",
                humantime::format_duration(d.header_read_timeout)
            ),
            format!(
                "[default: {}]",
                humantime::format_duration(d.body_read_timeout)
            ),
            format!(
                "[default: {}]",
                humantime::format_duration(d.persist_timeout)
            ),
            format!("[default: {}]", d.max_connections),
        ] {
            assert!(help.contains(&default), "--help lacks {default}");
        }
        assert_eq!(parse_size("16MiB"), Ok(d.max_body_bytes));
        assert_eq!(parse_size("1GiB"), Ok(d.max_element_bytes));
    }

    #[test]
    fn flags_override_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sim.toml");
        std::fs::write(&file, "permits = 64\npersist_latency = \"exp(10ms)\"\n").unwrap();
        let cli = Cli::try_parse_from([
            "system-simulator",
            "serve",
            "--config",
            file.to_str().unwrap(),
            "--permits",
            "3",
        ])
        .unwrap();
        let Command::Serve(args) = cli.command else {
            panic!("parsed as serve")
        };
        let c = args.resolve().unwrap();
        assert_eq!(c.permits, 3);
        assert_eq!(c.persist_latency.to_string(), "exp(10ms)");
    }

    #[test]
    fn invalid_values_fail_at_start_with_the_reason() {
        let cli = Cli::try_parse_from(["system-simulator", "serve", "--permits", "0"]).unwrap();
        let Command::Serve(args) = cli.command else {
            panic!("parsed as serve")
        };
        assert!(args
            .resolve()
            .unwrap_err()
            .to_string()
            .contains("permits must be between 1"));
        let err = Cli::try_parse_from(["system-simulator", "serve", "--persist-latency", "quick"])
            .unwrap_err();
        assert!(err.to_string().contains("quick"));
    }
}
