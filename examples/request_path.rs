//! The request path on its own, for changes to it that HTTP's noise would hide:
//! `DataProcessor::submit` awaited N times in a row on one thread, at the
//! serving-path benchmark's zero simulated cost (1,000,000 permits, no network
//! delay, a persist that ends at once: `tools/bench/server-vs-axum.py`'s
//! server). Each request runs what `POST /requests` runs after its body is read:
//! request-start to request-done, the gate, the hand-off and the persist in place,
//! every event with its counts and histograms. No socket, no HTTP, no JSON.
//!
//! Prints the nanoseconds a request of each of several rounds, then their median;
//! compare two builds by running each (`tools/bench/request-path.py OLD NEW`
//! alternates them). Bench-only: not part of the product.
//!
//!     cargo run --release --example request_path -- [REQUESTS] [--rounds R]

use std::time::{Duration, Instant};

use simulator_api::{Delay, Settings};
use simulator_service::parts::{DataProcessor, Element};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut requests: u32 = 200_000;
    let mut rounds: usize = 7;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| anyhow::anyhow!("--rounds takes a count of rounds"))?
            }
            n => {
                requests = n
                    .parse()
                    .map_err(|_| anyhow::anyhow!("{n:?}: expected a count of requests"))?
            }
        }
    }
    let settings = Settings {
        permits: 1_000_000,
        network_delay: Delay::fixed(Duration::ZERO),
        persist_latency: Delay::fixed(Duration::ZERO),
        ..Settings::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let processor = DataProcessor::new(&settings)?;
        // A first round warms the allocator, the counters' parts and the histograms.
        run(&processor, requests / 10).await?;
        let mut each = Vec::with_capacity(rounds);
        for round in 1..=rounds {
            let ns = run(&processor, requests).await?;
            println!("round {round}: {ns:.0} ns a request");
            each.push(ns);
        }
        each.sort_by(f64::total_cmp);
        println!(
            "median {:.0} ns a request ({} rounds of {requests})",
            each[each.len() / 2],
            each.len()
        );
        anyhow::Ok(())
    })
}

/// `requests` requests one after another; the nanoseconds a request.
async fn run(processor: &DataProcessor, requests: u32) -> anyhow::Result<f64> {
    let started = Instant::now();
    for _ in 0..requests {
        processor.submit(Element::Synthetic(1024), 0).await?;
    }
    Ok(started.elapsed().as_nanos() as f64 / f64::from(requests.max(1)))
}
