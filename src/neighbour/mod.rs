//! The noisy neighbour (exercise 14): a process that is not the server, as a
//! batch job on the same host is, with more CPU-bound threads than the CPUs it
//! may use, so the server's threads are runnable and wait for a CPU while its
//! own CPU use looks lower than usual. `system-simulator neighbour` is the
//! process itself (this file); a world with `neighbour_threads_per_cpu` starts
//! one beside the server and reads its work (`beside.rs`).
//!
//! Its work is counted, so that a fix which kills it or stops it is seen: each
//! thread runs a fixed unit of integer work over and over, and every 25 ms the
//! process prints the units done so far, `work N`, on stdout. A closed stdout
//! (the server that started it is gone) ends it within those 25 ms, whatever
//! killed the server. Every thread, the main one too, is named
//! [`PROCESS_NAME`], so `pgrep -x isim-neighbour` finds it and `pgrep -w -x
//! isim-neighbour` its threads, for `renice`, `chrt` and `taskset`.

pub mod beside;

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the neighbour's process and threads are called (`comm`, 15 bytes at most).
pub const PROCESS_NAME: &str = "isim-neighbour";

/// How often it prints its work (a rate over a second is then within 2.5 %).
pub const REPORT_EVERY: Duration = Duration::from_millis(25);

/// The largest number of threads it runs.
pub const MAX_THREADS: usize = 1024;

/// What `neighbour` takes.
#[derive(Debug, clap::Args)]
pub struct NeighbourArgs {
    /// CPU-bound threads to run (1 to 1024; default: twice the CPUs this
    /// process may use).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

/// `system-simulator neighbour`: runs until its stdout closes or it is killed.
pub fn run(args: &NeighbourArgs) -> anyhow::Result<()> {
    crate::platform::process::name_this_thread(PROCESS_NAME);
    let threads = args.threads.map_or_else(
        || 2 * std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    let done = Arc::new(AtomicU64::new(0));
    for _ in 0..threads.min(MAX_THREADS) {
        let done = Arc::clone(&done);
        std::thread::Builder::new()
            .name(PROCESS_NAME.into())
            .spawn(move || loop {
                std::hint::black_box(unit_of_work());
                done.fetch_add(1, Ordering::Relaxed);
            })?;
    }
    let mut out = std::io::stdout().lock();
    loop {
        std::thread::sleep(REPORT_EVERY);
        // A closed pipe: whoever read it is gone, and so is the reason to run.
        if writeln!(out, "work {}", done.load(Ordering::Relaxed))
            .and_then(|()| out.flush())
            .is_err()
        {
            return Ok(());
        }
    }
}

/// One unit of the neighbour's work: about 20-50 µs of integer arithmetic
/// (xorshift), touching no memory, so its rate is the CPU it got.
fn unit_of_work() -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// The units done so far, from one of its `work N` lines.
pub fn parse_report(line: &str) -> Option<u64> {
    line.strip_prefix("work ")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_line_is_read_and_anything_else_is_not() {
        assert_eq!(parse_report("work 42\n"), Some(42));
        assert_eq!(parse_report("work -1"), None);
        assert_eq!(parse_report("hello"), None);
    }
}
