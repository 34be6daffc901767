//! cpu-usage.bt without a tracer: the server's CPU time a line every INTERVAL
//! seconds in the script's layout (TIMESTAMP PID %CPU CPU-MS PROCESS), from the
//! process's own accounting (`/stats`' `process_cpu_ns`, the kernel's utime and
//! stime of every thread) instead of samples at 1000 Hz. No probe: it reads no
//! tap. The two agree within the sampling's error (a sample is a millisecond;
//! the script misses bursts shorter than one, the kernel's clock ticks at 10 ms).

use std::time::Instant;

use simulator_api::Stats;

use crate::trace::script::{Event, Options, Script};

#[derive(Debug)]
pub struct CpuUsage {
    seconds: u64,
    every: u64,
    elapsed: u64,
    pid: u32,
    /// CPU ns at the line's start and now, and when each was read.
    line_began: Option<(u64, Instant)>,
    now: Option<(u64, Instant)>,
}

impl CpuUsage {
    pub fn new(options: Options) -> Self {
        CpuUsage {
            seconds: options.seconds,
            every: options.interval_s.max(1),
            elapsed: 0,
            pid: 0,
            line_began: None,
            now: None,
        }
    }

    /// A line for the time since the last, if the server said its CPU time.
    fn line(&mut self, clock: &str, out: &mut String) {
        if let (Some((began_ns, began_at)), Some((now_ns, now_at))) = (self.line_began, self.now) {
            let cpu_ns = now_ns.saturating_sub(began_ns);
            let wall_ns = now_at.duration_since(began_at).as_nanos().max(1) as u64;
            // Tenths of a percent, as the script prints them.
            let tenths = (u128::from(cpu_ns) * 1000 / u128::from(wall_ns)) as u64;
            out.push_str(&format!(
                "{:<9} {:>8} {:>4}.{} {:>7}  system-simulator\n",
                clock,
                self.pid,
                tenths / 10,
                tenths % 10,
                cpu_ns / 1_000_000
            ));
        }
        self.line_began = self.now;
    }
}

impl Script for CpuUsage {
    fn stats(&mut self, now: &Stats) {
        self.pid = now.pid;
        self.now = now.process_cpu_ns.map(|ns| (ns, Instant::now()));
        if self.line_began.is_none() {
            self.line_began = self.now;
        }
    }

    fn begin(&mut self, out: &mut String) {
        if self.now.is_none() {
            out.push_str("(the server does not say its CPU time on this OS: no lines)\n");
        }
        out.push_str(&format!(
            "{:<9} {:>8} {:>6} {:>7}  {}\n",
            "TIMESTAMP", "PID", "%CPU", "CPU-MS", "PROCESS"
        ));
    }

    fn on(&mut self, _event: &Event<'_>) {}

    fn second(&mut self, clock: &str, out: &mut String) {
        self.elapsed += 1;
        if self.elapsed.is_multiple_of(self.every) || self.elapsed >= self.seconds {
            self.line(clock, out);
        }
    }

    /// Ctrl-C between lines still reports the part-interval (of 100 ms or more).
    fn end(&mut self, _ran_s: u64, out: &mut String) {
        let part = match (self.line_began, self.now) {
            (Some((_, began)), Some((_, now))) => now.duration_since(began).as_millis() >= 100,
            _ => false,
        };
        if part && self.elapsed < self.seconds {
            let clock = crate::trace::clock();
            self.line(&clock, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_line_is_the_cpu_time_over_the_wall_time_since_the_last() {
        let mut twin = CpuUsage::new(Options {
            seconds: 60,
            interval_s: 2,
            ..Options::default()
        });
        let at = Instant::now();
        twin.pid = 7;
        twin.line_began = Some((1_000_000_000, at));
        twin.now = Some((1_350_000_000, at + Duration::from_secs(2)));
        let mut out = String::new();
        twin.second("05:18:53", &mut out);
        assert!(out.is_empty(), "a line every 2 s: {out}");
        twin.second("05:18:54", &mut out);
        assert_eq!(out, "05:18:54         7   17.5     350  system-simulator\n");
        assert_eq!(twin.line_began, twin.now, "the next line starts here");
    }
}
