//! The event path on its own, for `scripts/bench/event-path.py`: the five events
//! of one unblocked request (request-start, request-nonblock, persist-start,
//! persist-done, request-done), each firing its probe (or not, in a build without
//! the `probes` feature), moving the `/stats` counters and the lifetime counters
//! and histograms (each in this thread's part) exactly as the server does.
//!
//! It runs the events of N requests on 1 thread, then on 2 threads at once, with
//! optionally some other work between requests (`--work-ns`, the rest of a
//! request's CPU), and prints the cost of one request's events and the throughput.
//! With no other work it is the worst case for counting: two threads doing
//! nothing but recording, where counts that both threads write (one lock, shared
//! atomics) would serialize them. Bench-only: not part of the product.
//!
//!     cargo run --release --example event_path -- [REQUESTS] [--work-ns NS]

use std::hint::black_box;
use std::time::{Duration, Instant};

use system_simulator::observe::Events;

fn one_request(events: &Events, id: u64) {
    events.request_start(id, 1024);
    events.request_nonblock(id, 7);
    events.persist_start(id, 1024, 7);
    events.persist_done(id, true, false, false, Duration::from_micros(1));
    events.request_done(id, Duration::from_micros(3), false, false);
}

/// Spins for about `ns` nanoseconds: the rest of a request's work, off the lock.
fn other_work(ns: u64) {
    if ns == 0 {
        return;
    }
    let until = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < until {
        black_box(());
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut requests: u64 = 2_000_000;
    let mut work_ns: u64 = 0;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--work-ns" => work_ns = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            n => requests = n.parse().unwrap_or(requests),
        }
    }
    let events = Events::default();
    // The first events register the metric handles and install the recorder.
    one_request(&events, 0);
    for threads in [1u64, 2] {
        let start = Instant::now();
        std::thread::scope(|scope| {
            for t in 0..threads {
                let events = &events;
                scope.spawn(move || {
                    for i in 0..requests {
                        one_request(events, t * requests + i);
                        other_work(work_ns);
                    }
                });
            }
        });
        let elapsed = start.elapsed().as_secs_f64();
        let total = (threads * requests) as f64;
        println!(
            "threads={threads} work_ns={work_ns} ns_per_request_per_thread={:.1} requests_per_s={:.0}",
            elapsed * 1e9 / requests as f64,
            total / elapsed
        );
    }
    let counts = events.counts().snapshot();
    assert_eq!(
        counts.requests_started, counts.requests_done,
        "the counts balance"
    );
}
