//! in-flight.bt over the tap: the persistence gate a line a second (persists in
//! flight, the most in the second, the fewest permits free, requests that
//! blocked), and the whole run's most, fewest and blocked.

use crate::trace::report::{Count, Map, Max, Min};
use crate::trace::script::{Event, Script};
use simulator_api::events::probe;

#[derive(Debug)]
pub struct InFlight {
    in_flight: u64,
    peak: u64,
    free_now: Option<u64>,
    fewest_free: Option<u64>,
    blocked_this_second: u64,
    most: Map<Max>,
    least: Map<Min>,
    blocks: Map<Count>,
}

impl InFlight {
    pub fn new() -> Self {
        InFlight {
            in_flight: 0,
            peak: 0,
            free_now: None,
            fewest_free: None,
            blocked_this_second: 0,
            most: Map::new("most"),
            least: Map::new("least"),
            blocks: Map::new("blocks"),
        }
    }
}

impl Script for InFlight {
    fn probes(&self) -> &'static [&'static str] {
        &[
            probe::persist__start,
            probe::persist__done,
            probe::request__block,
        ]
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "{:<8} {:>10} {:>14} {:>17} {:>8}\n",
            "TIME", "IN-FLIGHT", "MAX-IN-FLIGHT", "MIN-PERMITS-FREE", "BLOCKED"
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        let a = event.args;
        match event.probe {
            probe::persist__start => {
                self.most.add("max persists in flight", a[2]);
                self.least.add("min permits free", a[3]);
                self.in_flight = a[2];
                self.peak = self.peak.max(a[2]);
                self.free_now = Some(a[3]);
                self.fewest_free = Some(self.fewest_free.map_or(a[3], |f| f.min(a[3])));
            }
            probe::persist__done => self.in_flight = a[3],
            probe::request__block => {
                self.blocks.add("blocked requests", 1);
                self.blocked_this_second += 1;
            }
            _ => {}
        }
    }

    fn second(&mut self, clock: &str, out: &mut String) {
        let fewest = self
            .fewest_free
            .map_or_else(|| "-".to_owned(), |f| f.to_string());
        out.push_str(&format!(
            "{clock:<8} {:>10} {:>14} {fewest:>17} {:>8}\n",
            self.in_flight, self.peak, self.blocked_this_second
        ));
        self.peak = self.in_flight;
        self.fewest_free = self.free_now;
        self.blocked_this_second = 0;
    }

    fn end(&mut self, _ran_s: u64, out: &mut String) {
        out.push_str("\nSummary of the persistence gate over the whole run:\n");
        self.most.print(out);
        self.least.print(out);
        self.blocks.print(out);
    }
}
