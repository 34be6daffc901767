//! Run with: `cargo run --release -p simulator-clients --bin sim-clients -- --n 135 --duration 30s`
//! against a running `system-simulator serve`.
//!
//! Prints live progress on a terminal, then the report: client and server counts
//! side by side (in the seed's count.d words), throughput, blocked share, latency
//! percentiles and a DTrace-style quantize of request lifetimes.

use clap::Parser;
use simulator_clients::cli::{self, Args};

/// An error is one line, what went wrong and why, without the backtrace
/// anyhow's Debug form adds when `RUST_BACKTRACE` is set (`src/main.rs` of the
/// server says more).
fn main() -> std::process::ExitCode {
    let args = Args::parse();
    // The server's trail tells the load from the attendee's looks.
    simulator_api::client::name_caller("clients");
    let ran = cli::runtime(args.threads)
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(cli::run(args)));
    match ran {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::from(simulator_clients::cli::exit_status(&err))
        }
    }
}
