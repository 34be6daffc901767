//! cgroup-cpu.bt without a tracer: each second the server's requests done, works
//! done and its canary's worst lateness off the probe tap, beside what the kernel
//! did to its CPU quota read from the cgroup's own `cpu.stat` (`/stats`'
//! `cpu_cgroup`, which any user may read), in the script's layout.
//!
//! The kernel's columns are the kernel's own counts, which the script
//! reconstructs from scheduler tracepoints (its test holds the two together):
//! PERIODS is `nr_periods` (periods in which the group wanted CPU; the script
//! counts the period timer's firings), THROTTLED is `nr_throttled`, and WAITED-MS
//! is `throttled_usec`, summed per CPU where the script sums each thread's wait:
//! the same when one thread waits, larger in the script when several do.

use simulator_api::events::probe;
use simulator_api::{CpuCgroup, Stats};

use super::readings::Readings;
use crate::trace::script::{Event, Options, Script};

#[derive(Debug)]
pub struct CgroupCpu {
    seconds: u64,
    elapsed: u64,
    pid: u32,
    requests: u64,
    works: u64,
    canary_max_ns: u64,
    /// The cgroup's readings: at the start, at the last line, and now.
    cgroup: Readings<Option<CpuCgroup>>,
}

impl CgroupCpu {
    pub fn new(options: Options) -> Self {
        CgroupCpu {
            seconds: options.seconds,
            elapsed: 0,
            pid: 0,
            requests: 0,
            works: 0,
            canary_max_ns: 0,
            cgroup: Readings::default(),
        }
    }

    /// A reading of the server: its pid and its cgroup's counts now.
    fn reading(&mut self, pid: u32, cgroup: Option<CpuCgroup>) {
        self.pid = pid;
        self.cgroup.read(cgroup);
    }
}

/// `now - then` of the kernel's three counts: (periods, throttled, waited us).
fn since(now: Option<&CpuCgroup>, then: Option<&CpuCgroup>) -> (u64, u64, u64) {
    match (now, then) {
        (Some(now), Some(then)) => (
            now.periods.saturating_sub(then.periods),
            now.throttled_periods.saturating_sub(then.throttled_periods),
            now.throttled_us.saturating_sub(then.throttled_us),
        ),
        _ => (0, 0, 0),
    }
}

impl Script for CgroupCpu {
    fn probes(&self) -> &'static [&'static str] {
        &[probe::request__done, probe::work__done, probe::canary__tick]
    }

    fn reads_stats(&self) -> bool {
        true
    }

    fn stats(&mut self, now: &Stats) {
        self.reading(now.pid, now.cpu_cgroup.clone());
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Watching pid {}'s CPU quota for {} s (Ctrl-C prints the summary so far).\n",
            self.pid, self.seconds
        ));
        if self.cgroup.now().is_none() {
            out.push_str(
                "(the server reports no CPU cgroup: no cgroup cpu controller here, so the \
                 kernel's columns stay 0)\n",
            );
        }
        out.push_str(&format!(
            "{:>6} {:>9} {:>6} {:>14} | {:>8} {:>10} {:>10}\n",
            "SEC", "REQUESTS", "WORKS", "CANARY-MAX-MS", "PERIODS", "THROTTLED", "WAITED-MS"
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        match event.probe {
            probe::request__done => self.requests += 1,
            probe::work__done => self.works += 1,
            probe::canary__tick => self.canary_max_ns = self.canary_max_ns.max(event.args[1]),
            _ => {}
        }
    }

    fn second(&mut self, _clock: &str, out: &mut String) {
        let (now, then) = self.cgroup.line();
        let (periods, throttled, waited_us) = since(now.as_ref(), then.as_ref());
        out.push_str(&format!(
            "{:>6} {:>9} {:>6} {:>14} | {:>8} {:>10} {:>10}\n",
            self.elapsed + 1,
            self.requests,
            self.works,
            self.canary_max_ns / 1_000_000,
            periods,
            throttled,
            waited_us / 1000
        ));
        self.requests = 0;
        self.works = 0;
        self.canary_max_ns = 0;
        self.elapsed += 1;
    }

    fn end(&mut self, ran_s: u64, out: &mut String) {
        let (now, first) = self.cgroup.whole();
        let (_, throttled, waited_us) = since(now.as_ref(), first.as_ref());
        out.push_str(&format!(
            "\nSummary of pid {}'s CPU quota in {ran_s} seconds:\n  throttled periods {throttled}, waited {} ms\n",
            self.pid,
            waited_us / 1000
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cgroup(periods: u64, throttled_periods: u64, throttled_us: u64) -> Option<CpuCgroup> {
        Some(CpuCgroup {
            periods,
            throttled_periods,
            throttled_us,
            ..CpuCgroup::default()
        })
    }

    #[test]
    fn each_line_has_the_seconds_events_and_the_kernels_counts_since_the_last() {
        let mut twin = CgroupCpu::new(Options {
            seconds: 2,
            ..Options::default()
        });
        let mut out = String::new();
        twin.reading(42, cgroup(100, 40, 900_000));
        twin.begin(&mut out);
        assert!(
            out.starts_with("Watching pid 42's CPU quota for 2 s"),
            "{out}"
        );
        for (probe, late) in [
            (probe::request__done, 0),
            (probe::work__done, 0),
            (probe::canary__tick, 31_200_000),
        ] {
            twin.on(&Event {
                at_ns: 1,
                probe,
                args: [1, late, 0, 0, 0, 0],
            });
        }
        twin.reading(42, cgroup(110, 43, 1_090_000));
        out.clear();
        twin.second("00:00:01", &mut out);
        assert_eq!(
            out,
            "     1         1      1             31 |       10          3        190\n"
        );
        twin.reading(42, cgroup(120, 47, 1_330_000));
        out.clear();
        twin.second("00:00:02", &mut out);
        assert!(
            out.starts_with(
                "     2         0      0              0 |       10          4        240"
            ),
            "{out}"
        );
        out.clear();
        twin.end(2, &mut out);
        assert_eq!(
            out,
            "\nSummary of pid 42's CPU quota in 2 seconds:\n  throttled periods 7, waited 430 ms\n"
        );
    }
}
