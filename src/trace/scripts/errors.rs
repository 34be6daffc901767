//! errors.bt without a tracer: each second the server's failed accepts off the
//! probe tap (accept-error, as the script counts them), beside its
//! descriptors opened less closed since the trace began, from the count the
//! server reports in `/stats.descriptors` (the script adds up the calls that
//! open and close them; the two agree but for the descriptors the kernel
//! hands out some other way, which the script names). The summary has the
//! failed accepts by errno, as the script's; the kernel's failures of every
//! other call need the tracer, and it says so, with the limit and the count
//! at the end instead.

use std::collections::BTreeMap;

use simulator_api::events::probe;
use simulator_api::{DescriptorCounts, Stats};

use crate::trace::script::{Event, Options, Script};

#[derive(Debug)]
pub struct Errors {
    seconds: u64,
    pid: u32,
    errors: u64,
    by_errno: BTreeMap<u64, u64>,
    began: Option<DescriptorCounts>,
    now: Option<DescriptorCounts>,
}

impl Errors {
    pub fn new(options: Options) -> Self {
        Errors {
            seconds: options.seconds,
            pid: 0,
            errors: 0,
            by_errno: BTreeMap::new(),
            began: None,
            now: None,
        }
    }

    /// A reading of the server: its pid and its descriptors now.
    fn reading(&mut self, pid: u32, descriptors: Option<DescriptorCounts>) {
        self.pid = pid;
        self.now = descriptors;
        if self.began.is_none() {
            self.began = descriptors;
        }
    }

    /// Opened less closed since the first reading (0 where the OS gives none).
    fn net(&self) -> i64 {
        match (self.began, self.now) {
            (Some(began), Some(now)) => now.open as i64 - began.open as i64,
            _ => 0,
        }
    }
}

impl Script for Errors {
    fn probes(&self) -> &'static [&'static str] {
        &[probe::accept__error]
    }

    fn reads_stats(&self) -> bool {
        true
    }

    fn stats(&mut self, now: &Stats) {
        self.reading(now.pid, now.descriptors);
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Watching pid {}'s failed calls and descriptors for {} s (Ctrl-C prints the summary so far).\n",
            self.pid, self.seconds
        ));
        out.push_str(&format!(
            "{:<8} {:>13} {:>10}\n",
            "TIME", "ACCEPT-ERRORS", "NET-FDS"
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        if event.probe == probe::accept__error {
            self.errors += 1;
            *self.by_errno.entry(event.args[1]).or_default() += 1;
        }
    }

    fn second(&mut self, clock: &str, out: &mut String) {
        let errors = std::mem::take(&mut self.errors);
        out.push_str(&format!("{clock:<8} {errors:>13} {:>10}\n", self.net()));
    }

    fn end(&mut self, _ran_s: u64, out: &mut String) {
        out.push_str(&format!(
            "\nSummary of pid {}'s failed calls over the whole run:\n",
            self.pid
        ));
        out.push_str("failed accepts, by errno (probe accept-error):\n");
        for (errno, count) in &self.by_errno {
            out.push_str(&format!("@accept_errors[{errno}]: {count}\n"));
        }
        out.push_str(
            "the kernel's failed calls of the process, by call and errno: need the tracer (sudo scripts/trace errors)\n",
        );
        match self.now {
            Some(now) => out.push_str(&format!(
                "descriptors open at the end: {} of the {} its limit allows (/stats.descriptors)\n",
                now.open, now.limit
            )),
            None => out.push_str("descriptors open at the end: this OS does not say\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(open: u64) -> Option<DescriptorCounts> {
        Some(DescriptorCounts { open, limit: 64 })
    }

    #[test]
    fn a_second_counts_the_failed_accepts_and_the_descriptors_since_the_start() {
        let mut errors = Errors::new(Options::default());
        errors.reading(7, at(20));
        for errno in [24, 24, 23] {
            errors.on(&Event {
                at_ns: 0,
                probe: probe::accept__error,
                args: [1, errno, 0, 0, 0, 0],
            });
        }
        errors.reading(7, at(64));
        let mut out = String::new();
        errors.second("10:12:02", &mut out);
        assert_eq!(
            out.split_whitespace().collect::<Vec<_>>(),
            ["10:12:02", "3", "44"]
        );
        out.clear();
        errors.end(1, &mut out);
        assert!(
            out.contains("@accept_errors[23]: 1\n@accept_errors[24]: 2\n"),
            "{out}"
        );
        assert!(out.contains("64 of the 64"), "{out}");
    }
}
