//! Run with: `cargo run --release -p simulator-clients --bin sim-clients -- --n 135 --duration 30s`
//! against a running `system-simulator serve`.
//!
//! Prints live progress on a terminal, then the report: client and server counts
//! side by side (in the seed's count.d words), throughput, blocked share, latency
//! percentiles and a DTrace-style quantize of request lifetimes.

use clap::Parser;
use simulator_clients::cli::{self, Args};

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    cli::runtime(args.threads)?.block_on(cli::run(args))
}
