//! `system-simulator neighbour`: the noisy neighbour of exercise 14 as a process
//! of its own, CPU-bound threads counting the units of work they do and printing
//! the count every 25 ms until nobody reads it. What the server's side agrees
//! with it on (its name, the report's line) is `simulator_service::neighbour`'s.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use simulator_service::server::neighbour::{write_report, MAX_THREADS, PROCESS_NAME, REPORT_EVERY};

/// What `neighbour` takes.
#[derive(Debug, clap::Args)]
pub struct NeighbourArgs {
    /// CPU-bound threads to run (1 to 1024; default: twice the CPUs this
    /// process may use).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

/// This command run with `threads` threads, as the server starts its world's
/// neighbour (`simulator_service::server::neighbour::start`): this binary's own
/// `neighbour`, which a test in `cli.rs` parses back.
pub fn program(threads: u32) -> anyhow::Result<std::process::Command> {
    let mut program = std::process::Command::new(std::env::current_exe()?);
    program.args(["neighbour", "--threads", &threads.to_string()]);
    Ok(program)
}

/// `system-simulator neighbour`: runs until its stdout closes or it is killed.
pub fn run(args: &NeighbourArgs) -> anyhow::Result<()> {
    simulator_service::os::name_this_thread(PROCESS_NAME);
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
        if write_report(&mut out, done.load(Ordering::Relaxed)).is_err() {
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
