//! size.bt over the tap: requests and persists by element size class (under
//! 64 KiB, 64 KiB to 1 MiB, 1 MiB and over): how many, their average and longest
//! lifetime, and their average persist time. A request's size comes from its
//! request-start (a persist's from its persist-start), so those already under way
//! when the script starts are not counted.

use simulator_api::events::probe;
use std::collections::HashMap;

use crate::trace::report::{Avg, Count, Map, Max};
use crate::trace::script::{Event, Options, Script};

/// The three classes, as the twins' labels name them.
struct Class {
    requests: &'static str,
    life: &'static str,
    longest: &'static str,
    persist: &'static str,
}

const CLASSES: [Class; 3] = [
    Class {
        requests: "requests < 64 KiB",
        life: "average lifetime < 64 KiB",
        longest: "max lifetime < 64 KiB",
        persist: "average persist < 64 KiB",
    },
    Class {
        requests: "requests 64 KiB - 1 MiB",
        life: "average lifetime 64 KiB - 1 MiB",
        longest: "max lifetime 64 KiB - 1 MiB",
        persist: "average persist 64 KiB - 1 MiB",
    },
    Class {
        requests: "requests >= 1 MiB",
        life: "average lifetime >= 1 MiB",
        longest: "max lifetime >= 1 MiB",
        persist: "average persist >= 1 MiB",
    },
];

/// The class of a size; none for 0, which the twins read as "not seen".
fn class_of(bytes: u64) -> Option<&'static Class> {
    match bytes {
        0 => None,
        b if b < 65_536 => Some(&CLASSES[0]),
        b if b < 1_048_576 => Some(&CLASSES[1]),
        _ => Some(&CLASSES[2]),
    }
}

#[derive(Debug)]
pub struct Size {
    seconds: u64,
    request_bytes: HashMap<u64, u64>,
    persist_bytes: HashMap<u64, u64>,
    n: Map<Count>,
    life: Map<Avg>,
    longest: Map<Max>,
    persist: Map<Avg>,
}

impl Size {
    pub fn new(options: Options) -> Self {
        Size {
            seconds: options.seconds,
            request_bytes: HashMap::new(),
            persist_bytes: HashMap::new(),
            n: Map::new("n"),
            life: Map::new("life"),
            longest: Map::new("longest"),
            persist: Map::new("persist"),
        }
    }
}

impl Script for Size {
    fn probes(&self) -> &'static [&'static str] {
        &[
            probe::request__start,
            probe::persist__start,
            probe::request__done,
            probe::persist__done,
        ]
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Watching element sizes for {} s (Ctrl-C prints the summary so far).\n",
            self.seconds
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        let a = event.args;
        match event.probe {
            probe::request__start => {
                self.request_bytes.insert(a[0], a[1]);
            }
            probe::persist__start => {
                self.persist_bytes.insert(a[0], a[1]);
            }
            probe::request__done => {
                let bytes = self.request_bytes.remove(&a[0]).unwrap_or(0);
                if let Some(class) = class_of(bytes) {
                    self.n.add(class.requests, 1);
                    self.life.add(class.life, a[1]);
                    self.longest.add(class.longest, a[1]);
                }
            }
            probe::persist__done => {
                let bytes = self.persist_bytes.remove(&a[0]).unwrap_or(0);
                if let Some(class) = class_of(bytes) {
                    self.persist.add(class.persist, a[2]);
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, ran_s: u64, out: &mut String) {
        out.push_str(&format!(
            "\nSummary of the sizes in {ran_s} seconds represented in nanoseconds:\n"
        ));
        self.n.print(out);
        self.life.print(out);
        self.longest.print(out);
        self.persist.print(out);
    }
}
