//! Run with: `cargo run --release -p simulator-clients --bin sim-clients -- --n 135 --duration 30s`
//! against a running `system-simulator serve`.
//!
//! Prints live progress on a terminal, then the report: client and server counts
//! side by side (in the seed's count.d words), throughput, blocked share, latency
//! percentiles and a DTrace-style quantize of request lifetimes.

use clap::Parser;

// One thread: the clients spend their time waiting, a single-threaded runtime
// wakes them without handing tasks between threads, and the other core is left
// to the server under test (scripts/bench/clients-vs-wrk.py measures the result).
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    simulator_clients::args::run(simulator_clients::args::Args::parse()).await
}
