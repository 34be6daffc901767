//! locks.bt over the tap: how long requests waited for the index's lock, a
//! line a second, beside the compactions that ended that second and the
//! longest any of them held the lock; then the run's totals and the waits'
//! distribution.

use crate::trace::report::{Count, Hist, Map};
use crate::trace::script::{Event, Options, Script};
use simulator_api::events::probe;

/// One second's figures, in the columns' order (nanoseconds until printed).
#[derive(Debug, Default, Clone, Copy)]
struct Second {
    waits: u64,
    waited_ns: u64,
    longest_ns: u64,
    compactions: u64,
    held_ns: u64,
}

#[derive(Debug)]
pub struct Locks {
    now: Second,
    totals: Map<Count>,
    waited: Map<Hist>,
}

impl Locks {
    pub fn new(_options: Options) -> Self {
        Locks {
            now: Second::default(),
            totals: Map::new("totals"),
            waited: Map::new("waited"),
        }
    }
}

impl Script for Locks {
    fn probes(&self) -> &'static [&'static str] {
        &[
            probe::lock__wait__start,
            probe::lock__wait__done,
            probe::compaction__start,
            probe::compaction__done,
        ]
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "{:<8} {:>9} {:>11} {:>11} {:>11} {:>10}\n",
            "TIME", "WAITS", "WAITED-MS", "LONGEST-MS", "COMPACTIONS", "HELD-MS"
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        let a = event.args;
        let now = &mut self.now;
        match event.probe {
            probe::lock__wait__start => self.totals.add("requests that found the lock held", 1),
            probe::lock__wait__done => {
                now.waits += 1;
                now.waited_ns += a[1];
                now.longest_ns = now.longest_ns.max(a[1]);
                self.totals.add("lock waits ended", 1);
                self.waited.add("lock waits (ns)", a[1]);
            }
            probe::compaction__start => self.totals.add("compactions begun", 1),
            probe::compaction__done => {
                now.compactions += 1;
                now.held_ns = now.held_ns.max(a[3]);
                self.totals.add("compactions done", 1);
            }
            _ => {}
        }
    }

    fn second(&mut self, clock: &str, out: &mut String) {
        let s = std::mem::take(&mut self.now);
        out.push_str(&format!(
            "{clock:<8} {:>9} {:>11} {:>11} {:>11} {:>10}\n",
            s.waits,
            s.waited_ns / 1_000_000,
            s.longest_ns / 1_000_000,
            s.compactions,
            s.held_ns / 1_000_000
        ));
    }

    fn end(&mut self, _ran_s: u64, out: &mut String) {
        out.push_str("\nSummary of the index's lock over the whole run:\n");
        self.totals.print(out);
        self.waited.print(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(probe: &'static str, args: [u64; 6]) -> Event<'static> {
        Event {
            at_ns: 0,
            probe,
            args,
        }
    }

    #[test]
    fn a_second_sums_the_waits_and_keeps_the_longest_hold() {
        let mut locks = Locks::new(Options::default());
        for wait_ms in [300, 20] {
            locks.on(&event(
                probe::lock__wait__done,
                [1, wait_ms * 1_000_000, 0, 0, 0, 0],
            ));
        }
        locks.on(&event(
            probe::compaction__done,
            [1, 500, 10, 310_000_000, 0, 0],
        ));
        let mut out = String::new();
        locks.second("21:40:02", &mut out);
        let columns: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(columns, ["21:40:02", "2", "320", "300", "1", "310"]);
        out.clear();
        locks.second("21:40:03", &mut out);
        assert_eq!(out.split_whitespace().skip(1).collect::<Vec<_>>(), ["0"; 5]);
    }
}
