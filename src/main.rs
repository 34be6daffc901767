//! Run with: `cargo run --release -- serve` (then `curl -X POST localhost:7878/requests`).
//!
//! Prints the address, pid and ready-to-paste trace commands, serves until Ctrl-C or
//! SIGTERM, then prints the final counts in the seed's count.d layout. Logs go to
//! stderr, filtered by RUST_LOG (default `info` for `serve`, `warn` for the
//! commands that print tables).

use std::io::IsTerminal;

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// An error a person meets is one line: what went wrong and why (`{:#}`, every
/// cause after a colon). Returning it from `main` would print anyhow's Debug
/// form, which adds a stack backtrace whenever `RUST_BACKTRACE` is set, as many
/// Rust users' shells have it. A panic, a bug, still prints its own.
fn main() -> std::process::ExitCode {
    match start() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            // A load's failed threshold has a status of its own (`clients`).
            std::process::ExitCode::from(simulator_clients::cli::exit_status(&err))
        }
    }
}

fn start() -> anyhow::Result<std::process::ExitCode> {
    let cli = system_simulator::cli::Cli::parse();
    let mut runtime = if cli.command.runs_on_one_thread() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    // Whether each async worker is parked, for the no-root view of where the
    // threads wait (`profile::threads`): two stores a park, nothing else.
    runtime
        .on_thread_park(simulator_service::profile::threads::note_park)
        .on_thread_unpark(simulator_service::profile::threads::note_unpark);
    runtime.enable_all().build()?.block_on(run(cli))
}

async fn run(cli: system_simulator::cli::Cli) -> anyhow::Result<std::process::ExitCode> {
    // `serve` logs what an operator wants to see; the commands that print tables
    // (the demo, the clients) log only warnings unless RUST_LOG asks for more, so
    // no log line lands in the middle of a table on a terminal.
    let default = cli.command.default_log_level();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    system_simulator::cli::run(cli).await
}
