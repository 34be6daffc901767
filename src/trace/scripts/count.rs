//! count.bt over the tap: how many times each isim probe fired, in the seed's
//! words.

use simulator_api::events::probe;
use simulator_api::SEED_COUNTS;

use crate::trace::report::{Count as Counted, Map};
use crate::trace::script::{Event, Options, Script};

/// The seed's label of the `/stats` count `field`, from the one list
/// (`SEED_COUNTS`), so the twin prints what count.d prints and the demo shows.
fn seed_label(field: &'static str) -> &'static str {
    SEED_COUNTS
        .iter()
        .find(|count| count.field == field)
        .map_or(field, |count| count.label)
}

#[derive(Debug)]
pub struct Count {
    seconds: u64,
    counts: Map<Counted>,
}

impl Count {
    pub fn new(options: Options) -> Self {
        Count {
            seconds: options.seconds,
            counts: Map::new("counts"),
        }
    }
}

impl Script for Count {
    fn probes(&self) -> &'static [&'static str] {
        &[
            probe::request__start,
            probe::request__done,
            probe::request__block,
            probe::request__nonblock,
            probe::request__shed,
            probe::request__abandoned,
            probe::persist__start,
            probe::persist__done,
            probe::persist__hedge,
        ]
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Counting isim probes for {} s (Ctrl-C prints the counts so far).\n",
            self.seconds
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        let a = event.args;
        let mut count = |label| self.counts.add(label, 1);
        match event.probe {
            probe::request__start => count(seed_label("requests_started")),
            probe::request__done => {
                count(seed_label("requests_done"));
                if a[3] == 1 {
                    count("cancelled requests (client gone)");
                }
            }
            probe::request__block => count(seed_label("requests_blocked")),
            probe::request__nonblock => count(seed_label("requests_nonblocked")),
            probe::request__shed => count("shed requests (503)"),
            probe::request__abandoned => count("abandoned requests (client gone)"),
            probe::persist__start => count(seed_label("persists_started")),
            probe::persist__done => {
                count(seed_label("persists_done"));
                if a[1] == 0 {
                    count("persistent writes failed");
                }
                if a[4] == 1 {
                    count("wasted persistent writes (client gone)");
                }
            }
            probe::persist__hedge => count("hedged persistent writes"),
            _ => {}
        }
    }

    fn end(&mut self, _ran_s: u64, out: &mut String) {
        out.push('\n');
        self.counts.print(out);
    }
}
