//! Run with: `cargo run --release -- serve` (then `curl -X POST localhost:7878/requests`).
//!
//! Prints the address, pid and ready-to-paste trace commands, serves until Ctrl-C or
//! SIGTERM, then prints the final counts in the seed's count.d layout. Logs go to
//! stderr, filtered by RUST_LOG (default `info`).

use std::io::IsTerminal;

use clap::Parser;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    system_simulator::cli::run(system_simulator::cli::Cli::parse()).await
}
