//! The event path on its own, for `tools/bench/event-path.py`: the five events
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
//! atomics) would serialize them. With `--tap`, a subscriber on every event reads
//! the probe tap in a thread of its own all the while, so each event is also sent
//! into the tap's ring (its clock read, its slot claimed and written).
//! Bench-only: not part of the product.
//!
//!     cargo run --release --example event_path -- [REQUESTS] [--work-ns NS] [--tap]

use std::hint::black_box;
use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicBool, Ordering};

use simulator_service::parts::Events;

fn one_request(events: &Events, id: u64) {
    events.request_start(id, 1024, 0);
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
    let mut tapped = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--work-ns" => work_ns = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            "--tap" => tapped = true,
            n => requests = n.parse().unwrap_or(requests),
        }
    }
    let events = Events::default();
    // The first events register the metric handles and install the recorder.
    one_request(&events, 0);
    let done = AtomicBool::new(false);
    std::thread::scope(|outer| {
        if tapped {
            let done = &done;
            outer.spawn(move || read_the_tap(done));
        }
        run(&events, requests, work_ns);
        done.store(true, Ordering::Relaxed);
    });
    let counts = events.counts().snapshot();
    assert_eq!(
        counts.requests_started, counts.requests_done,
        "the counts balance"
    );
}

/// Reads every event of the probe tap until `done`, then says how many.
#[cfg(feature = "probes")]
fn read_the_tap(done: &AtomicBool) {
    use simulator_service::parts::tap;
    let mut subscription = tap::subscribe(u64::MAX).expect("a subscription to the tap");
    let (mut read, mut lost) = (0u64, 0u64);
    while !done.load(Ordering::Relaxed) {
        match subscription.read() {
            tap::Read::Event(_) => read += 1,
            tap::Read::Lost(n) => lost += n,
            tap::Read::Empty => std::hint::spin_loop(),
        }
    }
    println!("tap: read={read} lost={lost}");
}

#[cfg(not(feature = "probes"))]
fn read_the_tap(_: &AtomicBool) {
    eprintln!("--tap: a build without the `probes` feature has no probe tap");
    std::process::exit(2);
}

/// The events of `requests` requests on 1 thread, then on 2 at once, each line
/// printed.
fn run(events: &Events, requests: u64, work_ns: u64) {
    for threads in [1u64, 2] {
        let start = Instant::now();
        std::thread::scope(|scope| {
            for t in 0..threads {
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
}
