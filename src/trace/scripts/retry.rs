//! retry.bt over the tap: work done for clients still waiting against work done
//! for clients that have gone, a line a second, with the waits longer than the
//! clients' timeout and whether an incident was in force; then the run's totals
//! and the permit waits.

use super::incident::{self, IncidentColumn};
use crate::trace::report::{Count, Hist, Map};
use crate::trace::script::{Event, Options, Script};
use simulator_api::events::probe;

/// One second's figures, in the columns' order.
#[derive(Debug, Default, Clone, Copy)]
struct Second {
    done: u64,
    abandoned: u64,
    cancelled: u64,
    useful: u64,
    wasted: u64,
    late: u64,
}

#[derive(Debug)]
pub struct Retry {
    timeout_ns: u64,
    now: Second,
    incident: IncidentColumn,
    totals: Map<Count>,
    waits: Map<Hist>,
}

impl Retry {
    pub fn new(options: Options) -> Self {
        Retry {
            timeout_ns: options.client_timeout_ms.saturating_mul(1_000_000),
            now: Second::default(),
            incident: IncidentColumn::default(),
            totals: Map::new("totals"),
            waits: Map::new("waits"),
        }
    }
}

impl Script for Retry {
    fn probes(&self) -> &'static [&'static str] {
        &[
            probe::request__done,
            probe::request__abandoned,
            probe::persist__done,
            probe::request__unblock,
            probe::queue__dequeue,
            incident::PROBES[0],
            incident::PROBES[1],
            incident::PROBES[2],
        ]
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "{:<8} {:>9} {:>10} {:>10} {:>14} {:>14} {:>11} {:>9}\n",
            "TIME",
            "DONE",
            "ABANDONED",
            "CANCELLED",
            "USEFUL-WRITES",
            "WASTED-WRITES",
            "LATE-WAITS",
            "INCIDENT"
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        if self.incident.on(event.probe, &mut self.totals) {
            return;
        }
        let a = event.args;
        let totals = &mut self.totals;
        let now = &mut self.now;
        match event.probe {
            probe::request__done if a[3] == 0 => {
                now.done += 1;
                totals.add("requests done (not cancelled)", 1);
            }
            probe::request__done if a[3] == 1 => {
                now.cancelled += 1;
                totals.add("cancelled requests (client gone)", 1);
            }
            probe::request__abandoned => {
                now.abandoned += 1;
                totals.add("abandoned requests (client gone)", 1);
            }
            probe::persist__done => {
                if a[4] == 0 && a[1] == 1 {
                    now.useful += 1;
                    totals.add("useful persistent writes", 1);
                }
                if a[4] == 1 {
                    now.wasted += 1;
                    totals.add("wasted persistent writes (client gone)", 1);
                }
            }
            probe::request__unblock => {
                self.waits.add("permit waits (ns)", a[1]);
                if a[1] > self.timeout_ns {
                    now.late += 1;
                    totals.add("permit waits longer than the clients' timeout", 1);
                }
            }
            probe::queue__dequeue if a[1] > self.timeout_ns => {
                now.late += 1;
                totals.add("queue waits longer than the clients' timeout", 1);
            }
            _ => {}
        }
    }

    fn second(&mut self, clock: &str, out: &mut String) {
        let s = std::mem::take(&mut self.now);
        out.push_str(&format!(
            "{clock:<8} {:>9} {:>10} {:>10} {:>14} {:>14} {:>11} {:>9}\n",
            s.done,
            s.abandoned,
            s.cancelled,
            s.useful,
            s.wasted,
            s.late,
            self.incident.second()
        ));
    }

    fn end(&mut self, _ran_s: u64, out: &mut String) {
        out.push_str("\nSummary of work for waiting and gone clients over the whole run:\n");
        self.totals.print(out);
        self.waits.print(out);
    }
}
