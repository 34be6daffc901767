//! queue.bt over the tap: the persistence queue (`persistence = pool`): elements
//! queued, taken, refused and dropped, its deepest, and the waits for a worker.

use crate::trace::report::{Avg, Count, Hist, Map, Max};
use crate::trace::script::{Event, Options, Script};
use simulator_api::events::probe;

#[derive(Debug)]
pub struct Queue {
    seconds: u64,
    queued: Map<Count>,
    taken: Map<Count>,
    refused: Map<Count>,
    dropped: Map<Count>,
    deepest: Map<Max>,
    average: Map<Avg>,
    longest: Map<Max>,
    spread: Map<Hist>,
}

impl Queue {
    pub fn new(options: Options) -> Self {
        Queue {
            seconds: options.seconds,
            queued: Map::new("queued"),
            taken: Map::new("taken"),
            refused: Map::new("refused"),
            dropped: Map::new("dropped"),
            deepest: Map::new("deepest"),
            average: Map::new("average"),
            longest: Map::new("longest"),
            spread: Map::new("spread"),
        }
    }
}

impl Script for Queue {
    fn probes(&self) -> &'static [&'static str] {
        &[
            probe::queue__enqueue,
            probe::queue__dequeue,
            probe::queue__refuse,
            probe::queue__drop,
        ]
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Watching the persistence queue for {} s (Ctrl-C prints the summary so far).\n",
            self.seconds
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        let a = event.args;
        match event.probe {
            probe::queue__enqueue => {
                self.queued.add("elements queued", 1);
                self.deepest.add("max queue depth", a[1]);
            }
            probe::queue__dequeue => {
                self.taken.add("elements dequeued", 1);
                self.average.add("average queue wait", a[1]);
                self.longest.add("max queue wait", a[1]);
                self.spread.add("queue waits visualisation", a[1]);
            }
            probe::queue__refuse => self.refused.add("elements refused (queue full)", 1),
            probe::queue__drop => self.dropped.add("elements dropped (waited too long)", 1),
            _ => {}
        }
    }

    fn end(&mut self, ran_s: u64, out: &mut String) {
        out.push_str(&format!(
            "\nSummary of the persistence queue in {ran_s} seconds represented in nanoseconds:\n"
        ));
        self.queued.print(out);
        self.taken.print(out);
        self.refused.print(out);
        self.dropped.print(out);
        self.deepest.print(out);
        self.average.print(out);
        self.longest.print(out);
        self.spread.print(out);
    }
}
