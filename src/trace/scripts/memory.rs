//! memory.bt without a tracer: each second the server's resident memory, from
//! its own `/stats.memory` (the OS's count of its resident pages, which any
//! user may read), in the script's layout. The allocator's columns (its big
//! blocks, and what they still hold by stack) need the script's uprobes: the
//! twin prints `-` there, and the way without root to the same answer is the
//! server's heap profile (`system-simulator profile --heap`).

use simulator_api::{MemoryCounts, Stats};

use crate::trace::script::{Event, Options, Script};

#[derive(Debug)]
pub struct Memory {
    seconds: u64,
    pid: u32,
    /// The first reading and the newest.
    first: Option<MemoryCounts>,
    now: Option<MemoryCounts>,
}

impl Memory {
    pub fn new(options: Options) -> Self {
        Memory {
            seconds: options.seconds,
            pid: 0,
            first: None,
            now: None,
        }
    }
}

const MIB: u64 = 1024 * 1024;

impl Script for Memory {
    fn probes(&self) -> &'static [&'static str] {
        &[]
    }

    fn reads_stats(&self) -> bool {
        true
    }

    fn stats(&mut self, now: &Stats) {
        self.pid = now.pid;
        if self.first.is_none() {
            self.first = now.memory;
        }
        self.now = now.memory;
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Watching pid {}'s memory for {} s (Ctrl-C prints the summary so far).\n",
            self.pid, self.seconds
        ));
        out.push_str(
            "(no tracer: the allocator's columns need memory.bt's uprobes; \
             `system-simulator profile --heap` draws the live heap by allocation site)\n",
        );
        if self.now.is_none() {
            out.push_str("(the server reports no resident memory on this OS: RSS-MIB stays -)\n");
        }
        out.push_str(&format!(
            "{:<8} {:>8} {:>9} {:>10} {:>9}\n",
            "TIME", "RSS-MIB", "ANON-MIB", "BIG-ALLOCS", "HELD-MIB"
        ));
    }

    fn on(&mut self, _event: &Event<'_>) {}

    fn second(&mut self, clock: &str, out: &mut String) {
        let resident = self
            .now
            .map_or("-".to_owned(), |m| (m.resident_bytes / MIB).to_string());
        out.push_str(&format!(
            "{clock:<8} {resident:>8} {:>9} {:>10} {:>9}\n",
            "-", "-", "-"
        ));
    }

    fn end(&mut self, ran_s: u64, out: &mut String) {
        out.push_str(&format!(
            "\nSummary of pid {}'s memory over the whole run:\n",
            self.pid
        ));
        match (self.first, self.now) {
            (Some(first), Some(now)) => {
                let grown = now.resident_bytes as f64 - first.resident_bytes as f64;
                out.push_str(&format!(
                    "resident memory {} MiB to {} MiB in {ran_s} s: {:.2} MiB a second\n",
                    first.resident_bytes / MIB,
                    now.resident_bytes / MIB,
                    grown / MIB as f64 / ran_s.max(1) as f64
                ));
            }
            _ => out.push_str("resident memory: not reported on this OS\n"),
        }
        out.push_str(
            "allocations still held by user stack: memory.bt (root), or `system-simulator profile --heap`\n",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(resident_bytes: u64) -> Option<MemoryCounts> {
        Some(MemoryCounts {
            resident_bytes,
            resident_growth_bytes_per_s: None,
            limit_bytes: None,
        })
    }

    #[test]
    fn each_line_has_the_resident_memory_and_the_summary_its_growth() {
        let mut twin = Memory::new(Options {
            seconds: 10,
            ..Options::default()
        });
        twin.first = memory(10 * MIB);
        twin.now = memory(10 * MIB);
        let mut out = String::new();
        twin.begin(&mut out);
        assert!(out.contains("RSS-MIB  ANON-MIB"), "{out}");
        twin.now = memory(40 * MIB);
        out.clear();
        twin.second("10:00:01", &mut out);
        assert_eq!(out, "10:00:01       40         -          -         -\n");
        out.clear();
        twin.end(10, &mut out);
        assert!(
            out.contains("10 MiB to 40 MiB in 10 s: 3.00 MiB a second"),
            "{out}"
        );
    }
}
