//! request-lifetime.bt, persist-time.bt and permit-wait.bt over the tap: one
//! logic, the time between an opening and a closing probe of the same request
//! (paired by arg0, never by thread), counted, averaged and put in power-of-two
//! buckets; each script adds one count of its own. Requests already open when the
//! script starts are skipped, as the twins skip them.

use simulator_api::events::probe;
use std::collections::HashMap;

use crate::trace::report::{Avg, Count, Hist, Map, Max, Min};
use crate::trace::script::{Event, Options, Script};

/// The words one of the three scripts uses.
#[derive(Debug, Clone, Copy)]
struct Words {
    opener: &'static str,
    closer: &'static str,
    begin: &'static str,
    summary: &'static str,
    total: &'static str,
    average: &'static str,
    longest: &'static str,
    shortest: &'static str,
    spread: &'static str,
    /// A count of its own: on the opener (permit-wait's blocked requests) or on a
    /// closer whose arg1 is 0 (persist-time's failed writes).
    extra: Extra,
}

#[derive(Debug, Clone, Copy)]
enum Extra {
    OnOpener(&'static str, &'static str),
    FailedCloser(&'static str, &'static str),
}

#[derive(Debug)]
pub struct Timings {
    words: Words,
    seconds: u64,
    open: HashMap<u64, u64>,
    extra: Map<Count>,
    total: Map<Count>,
    average: Map<Avg>,
    longest: Map<Max>,
    shortest: Map<Min>,
    spread: Map<Hist>,
}

pub fn request_lifetime(options: Options) -> Timings {
    Timings::new(
        options,
        Words {
            opener: probe::request__start,
            closer: probe::request__done,
            begin: "Timing request lifetimes",
            summary:
                "Summary of all request lifetimes taken in {} seconds represented in nanoseconds:",
            total: "total requests",
            average: "average request lifetime",
            longest: "max request lifetime",
            shortest: "min request lifetime",
            spread: "request lifetimes visualisation",
            extra: Extra::FailedCloser("", ""),
        },
    )
}

pub fn persist_time(options: Options) -> Timings {
    Timings::new(
        options,
        Words {
            opener: probe::persist__start,
            closer: probe::persist__done,
            begin: "Timing persists",
            summary: "Summary of all writes to persistent storage taken in {} seconds represented in nanoseconds:",
            total: "total writes",
            average: "average write",
            longest: "max write",
            shortest: "min write",
            spread: "visualisation of writes",
            extra: Extra::FailedCloser("failed", "failed writes"),
        },
    )
}

pub fn permit_wait(options: Options) -> Timings {
    Timings::new(
        options,
        Words {
            opener: probe::request__block,
            closer: probe::request__unblock,
            begin: "Timing permit waits",
            summary: "Summary of permit waits taken in {} seconds represented in nanoseconds:",
            total: "permits granted",
            average: "average permit wait",
            longest: "max permit wait",
            shortest: "min permit wait",
            spread: "permit waits visualisation",
            extra: Extra::OnOpener("blocked", "blocked requests"),
        },
    )
}

impl Timings {
    fn new(options: Options, words: Words) -> Self {
        let (extra_map, total_map) = match words.extra {
            Extra::OnOpener(map, _) => (map, "granted"),
            Extra::FailedCloser(map, _) => (map, "total"),
        };
        Timings {
            words,
            seconds: options.seconds,
            open: HashMap::new(),
            extra: Map::new(extra_map),
            total: Map::new(total_map),
            average: Map::new("average"),
            longest: Map::new("longest"),
            shortest: Map::new("shortest"),
            spread: Map::new("spread"),
        }
    }
}

impl Script for Timings {
    fn probes(&self) -> &'static [&'static str] {
        match self.words.opener {
            probe::request__start => &[probe::request__start, probe::request__done],
            probe::persist__start => &[probe::persist__start, probe::persist__done],
            _ => &[probe::request__block, probe::request__unblock],
        }
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "{} for {} s (Ctrl-C prints the summary so far).\n",
            self.words.begin, self.seconds
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        let w = self.words;
        let id = event.args[0];
        if event.probe == w.opener {
            self.open.insert(id, event.at_ns);
            if let Extra::OnOpener(_, label) = w.extra {
                self.extra.add(label, 1);
            }
        } else if event.probe == w.closer {
            if let Some(began) = self.open.remove(&id) {
                let ns = event.at_ns.saturating_sub(began);
                self.total.add(w.total, 1);
                self.average.add(w.average, ns);
                self.longest.add(w.longest, ns);
                self.shortest.add(w.shortest, ns);
                self.spread.add(w.spread, ns);
            }
            if let Extra::FailedCloser(_, label) = w.extra {
                if !label.is_empty() && event.args[1] == 0 {
                    self.extra.add(label, 1);
                }
            }
        }
    }

    fn end(&mut self, ran_s: u64, out: &mut String) {
        out.push('\n');
        out.push_str(&self.words.summary.replace("{}", &ran_s.to_string()));
        out.push('\n');
        match self.words.extra {
            Extra::OnOpener(..) => {
                self.extra.print(out);
                self.total.print(out);
            }
            Extra::FailedCloser(..) => {
                self.total.print(out);
                self.extra.print(out);
            }
        }
        self.average.print(out);
        self.longest.print(out);
        self.shortest.print(out);
        self.spread.print(out);
    }
}
