//! runqlat.bt without a tracer: each second the time the server's threads ran
//! and the time they waited runnable for a CPU, and the wait per millisecond
//! run, from the kernel's own accounting of the process (`/stats`'
//! `process_cpu_ns` and `runqueue_wait_ns`, the threads' schedstat, which any
//! user may read), in the script's layout; its summary's first line too.
//!
//! What only a tracer sees, it says it cannot show: each wait's length (the
//! script's histogram) and the tasks the threads waited behind (its table, from
//! `sched_switch`). The kernel's sums agree with the script's within a few per
//! cent (`tests/suite/tracing/scripts_live.rs`): the script's ON-CPU-MS is the time
//! between switches, the kernel's CPU time is the same time accounted at ticks
//! and switches.

use simulator_api::Stats;

use super::readings::Readings;
use crate::trace::script::{Event, Options, Script};

/// The kernel's two sums of the server, in ns: (on a CPU, waiting for one).
type Sums = Option<(u64, u64)>;

#[derive(Debug)]
pub struct Runqlat {
    seconds: u64,
    elapsed: u64,
    pid: u32,
    sums: Readings<Sums>,
}

impl Runqlat {
    pub fn new(options: Options) -> Self {
        Runqlat {
            seconds: options.seconds,
            elapsed: 0,
            pid: 0,
            sums: Readings::default(),
        }
    }
}

/// (ran ms, waited ms, waited per ms run in hundredths) from `then` to `now`.
fn since(now: Sums, then: Sums) -> (u64, u64, u64) {
    let (Some((ran, waited)), Some((ran_then, waited_then))) = (now, then) else {
        return (0, 0, 0);
    };
    let (ran, waited) = (
        ran.saturating_sub(ran_then),
        waited.saturating_sub(waited_then),
    );
    let per = match ran {
        0 => 0,
        ran => (u128::from(waited) * 100 / u128::from(ran)) as u64,
    };
    (ran / 1_000_000, waited / 1_000_000, per)
}

impl Script for Runqlat {
    fn stats(&mut self, now: &Stats) {
        self.pid = now.pid;
        self.sums.read(now.process_cpu_ns.zip(now.runqueue_wait_ns));
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Watching pid {}'s threads wait for a CPU for {} s (Ctrl-C prints the summary so far).\n",
            self.pid, self.seconds
        ));
        if self.sums.now().is_none() {
            out.push_str(
                "(the server reports no run-queue wait: the kernel here keeps no schedstat, \
                 so the columns stay 0)\n",
            );
        }
        out.push_str(&format!(
            "{:>6} {:>10} {:>10} {:>18}\n",
            "SEC", "ON-CPU-MS", "WAITED-MS", "WAITED-PER-MS-RUN"
        ));
    }

    fn on(&mut self, _event: &Event<'_>) {}

    fn second(&mut self, _clock: &str, out: &mut String) {
        let (now, then) = self.sums.line();
        let (ran, waited, per) = since(now, then);
        out.push_str(&format!(
            "{:>6} {ran:>10} {waited:>10} {:>15}.{:02}\n",
            self.elapsed + 1,
            per / 100,
            per % 100
        ));
        self.elapsed += 1;
    }

    fn end(&mut self, ran_s: u64, out: &mut String) {
        let (now, first) = self.sums.whole();
        let (ran, waited, per) = since(now, first);
        out.push_str(&format!(
            "\nSummary of pid {}'s threads in {ran_s} seconds:\n  on a CPU {ran} ms, waited for one {waited} ms: {}.{:02} ms waited per ms run\n",
            self.pid,
            per / 100,
            per % 100
        ));
        out.push_str(
            "\n(each wait's length and who the threads waited behind need the tracer: \
             sudo scripts/trace runqlat; without root, `top -H` shows who holds the CPUs \
             and /proc/pressure/cpu how much of the time anything waited)\n",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_is_the_kernels_sums_since_the_last_and_the_wait_per_ms_run() {
        let mut twin = Runqlat::new(Options {
            seconds: 2,
            ..Options::default()
        });
        let mut out = String::new();
        twin.pid = 42;
        twin.sums.read(Some((1_000_000_000, 5_000_000_000)));
        twin.begin(&mut out);
        assert!(
            out.starts_with("Watching pid 42's threads wait for a CPU for 2 s"),
            "{out}"
        );
        assert!(out.ends_with("   SEC  ON-CPU-MS  WAITED-MS  WAITED-PER-MS-RUN\n"));
        twin.sums.read(Some((1_352_000_000, 6_024_000_000)));
        out.clear();
        twin.second("00:00:01", &mut out);
        assert_eq!(out, "     1        352       1024               2.90\n");
        // A second in which nothing ran: no ratio to make.
        out.clear();
        twin.second("00:00:02", &mut out);
        assert_eq!(out, "     2          0          0               0.00\n");
        out.clear();
        twin.end(2, &mut out);
        assert!(
            out.starts_with(
                "\nSummary of pid 42's threads in 2 seconds:\n  on a CPU 352 ms, waited for one 1024 ms: 2.90 ms waited per ms run\n"
            ),
            "{out}"
        );
    }
}
