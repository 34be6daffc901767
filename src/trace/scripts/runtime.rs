//! runtime.bt over the tap: is the async runtime blocked? The timer canary's
//! lateness, and the CPU work on elements: how many, where they ran, how long
//! each ran and waited for a slot.

use crate::trace::report::{Avg, Count, Hist, Map, Max};
use crate::trace::script::{Event, Options, Script};
use simulator_api::events::probe;

#[derive(Debug)]
pub struct Runtime {
    seconds: u64,
    ticks: Map<Count>,
    late: Map<Avg>,
    latest: Map<Max>,
    started: Map<Count>,
    done: Map<Count>,
    place: Map<Count>,
    ran: Map<Avg>,
    waited: Map<Avg>,
    spread: Map<Hist>,
}

impl Runtime {
    pub fn new(options: Options) -> Self {
        Runtime {
            seconds: options.seconds,
            ticks: Map::new("ticks"),
            late: Map::new("late"),
            latest: Map::new("latest"),
            started: Map::new("started"),
            done: Map::new("done"),
            place: Map::new("where"),
            ran: Map::new("ran"),
            waited: Map::new("waited"),
            spread: Map::new("spread"),
        }
    }
}

impl Script for Runtime {
    fn probes(&self) -> &'static [&'static str] {
        &[probe::canary__tick, probe::work__start, probe::work__done]
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Watching the runtime for {} s (Ctrl-C prints the summary so far).\n",
            self.seconds
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        let a = event.args;
        match event.probe {
            probe::canary__tick => {
                self.ticks.add("canary wake-ups", 1);
                self.late.add("average canary lateness", a[1]);
                self.latest.add("max canary lateness", a[1]);
                self.spread.add("canary lateness visualisation", a[1]);
            }
            probe::work__start => self.started.add("works started", 1),
            probe::work__done => {
                self.done.add("works done", 1);
                self.ran.add("average work time", a[1]);
                self.waited.add("average wait for a work slot", a[2]);
                match a[3] {
                    0 => self.place.add("works on async workers", 1),
                    1 => self.place.add("works on the blocking pool", 1),
                    2 => self.place.add("works on rayon", 1),
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, ran_s: u64, out: &mut String) {
        out.push_str(&format!(
            "\nSummary of the runtime in {ran_s} seconds represented in nanoseconds:\n"
        ));
        self.ticks.print(out);
        self.late.print(out);
        self.latest.print(out);
        self.started.print(out);
        self.done.print(out);
        self.place.print(out);
        self.ran.print(out);
        self.waited.print(out);
        self.spread.print(out);
    }
}
