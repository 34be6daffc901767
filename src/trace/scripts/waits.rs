//! `trace waits`: what each slow request waited on. Each request's lifetime,
//! from its request-start to its request-done on the tap's clock, is cut into
//! the phases the probes bound: the wait for a permit (request-block to
//! request-unblock or request-shed), the wait for the index's lock (and which
//! compaction held it then), the wait for a work slot and the work on the CPU
//! (work-start to work-done, split by its `run_ns`), a place in the persistence
//! queue, a persist the reply waits for, and a read of the store for a cache
//! fill. What no probe bounds (the network both ways, normalising, the index's
//! insert, the runtime) is the rest, so the parts sum to the lifetime. The
//! request-done's own `lifetime_ns` (the server's clock) is printed beside, as a
//! check of the cut.
//!
//! A line a second names that second's slowest request and its longest part;
//! the end prints the [`SLOWEST`] slowest requests of the run, part by part,
//! and the share of each part over every request. No bpftrace twin: the cut
//! needs every event of a request at once, which the tap gives and a `.bt`
//! script would keep in maps per request id.

use std::collections::HashMap;

use crate::trace::script::{Event, Options, Script};
use simulator_api::events::probe;

/// Requests the summary prints, slowest first.
pub const SLOWEST: usize = 5;
/// Compactions kept to name the one behind a lock wait.
const COMPACTIONS_KEPT: usize = 64;

/// The parts of a lifetime, in the order the request path runs them; the last
/// is what no probe bounds.
pub const PARTS: [&str; 8] = [
    "waiting for the index's lock",
    "waiting for a work slot",
    "on the CPU (work)",
    "waiting for a permit",
    "queued for a persistence worker",
    "persisting, ended before the reply (durable: it waits)",
    "reading the store (a cache fill)",
    "no probe: the network both ways, normalising, the runtime",
];
const LOCK: usize = 0;
const SLOT: usize = 1;
const CPU: usize = 2;
const PERMIT: usize = 3;
const QUEUE: usize = 4;
const PERSIST: usize = 5;
const FILL: usize = 6;
const REST: usize = PARTS.len() - 1;

/// A request in flight: when it started, and its parts so far.
#[derive(Debug, Default)]
struct Open {
    start_ns: u64,
    /// Parts begun and not yet ended: (part, since).
    begun: Vec<(usize, u64)>,
    /// Parts ended: (part, from, to).
    spans: Vec<(usize, u64, u64)>,
    /// The compaction running when it began to wait for the lock.
    behind: Option<u64>,
}

/// A request done, cut into its parts.
#[derive(Debug, Clone)]
pub struct Cut {
    pub id: u64,
    /// On the tap's clock, start to done.
    pub lifetime_ns: u64,
    /// request-done's own figure.
    pub reported_ns: u64,
    /// ns in each of [`PARTS`]; they sum to `lifetime_ns`.
    pub parts: [u64; PARTS.len()],
    pub behind: Option<u64>,
}

impl Cut {
    fn longest(&self) -> usize {
        (0..PARTS.len())
            .max_by_key(|&p| self.parts[p])
            .unwrap_or(REST)
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Compaction {
    seq: u64,
    held_ns: Option<u64>,
}

#[derive(Debug)]
pub struct Waits {
    open: HashMap<u64, Open>,
    compactions: Vec<Compaction>,
    running: Option<u64>,
    slowest: Vec<Cut>,
    second: Option<Cut>,
    totals: [u64; PARTS.len()],
    requests: u64,
    seconds: u64,
}

impl Waits {
    pub fn new(options: Options) -> Self {
        Waits {
            open: HashMap::new(),
            compactions: Vec::new(),
            running: None,
            slowest: Vec::new(),
            second: None,
            totals: [0; PARTS.len()],
            requests: 0,
            seconds: options.seconds,
        }
    }

    fn begin_part(&mut self, id: u64, part: usize, at: u64) {
        if let Some(open) = self.open.get_mut(&id) {
            open.begun.push((part, at));
        }
    }

    fn end_part(&mut self, id: u64, part: usize, at: u64) {
        if let Some(open) = self.open.get_mut(&id) {
            if let Some(i) = open.begun.iter().position(|(p, _)| *p == part) {
                let (_, since) = open.begun.swap_remove(i);
                open.spans.push((part, since, at));
            }
        }
    }

    fn done(&mut self, id: u64, at: u64, reported_ns: u64) {
        let Some(open) = self.open.remove(&id) else {
            return;
        };
        let cut = cut(id, &open, at, reported_ns);
        self.requests += 1;
        for (total, part) in self.totals.iter_mut().zip(cut.parts) {
            *total += part;
        }
        if self
            .second
            .as_ref()
            .is_none_or(|s| cut.lifetime_ns > s.lifetime_ns)
        {
            self.second = Some(cut.clone());
        }
        self.slowest.push(cut);
        self.slowest
            .sort_by_key(|c| std::cmp::Reverse(c.lifetime_ns));
        self.slowest.truncate(SLOWEST);
    }

    fn compaction(&self, seq: u64) -> Option<&Compaction> {
        self.compactions.iter().find(|c| c.seq == seq)
    }

    fn behind(&self, cut: &Cut) -> String {
        match cut
            .behind
            .and_then(|seq| self.compaction(seq).map(|c| (seq, c)))
        {
            Some((seq, c)) => match c.held_ns {
                Some(held) => format!(
                    "  behind compaction {seq}, which held the lock {:.1} ms at once",
                    ms(held)
                ),
                None => format!("  behind compaction {seq}"),
            },
            None => String::new(),
        }
    }

    /// The slowest requests, part by part.
    #[cfg(test)]
    fn slowest(&self) -> &[Cut] {
        &self.slowest
    }
}

/// The parts of a request's lifetime: each span clipped to the lifetime and to
/// the end of the span before it (so no moment counts twice), the rest what no
/// probe bounds.
fn cut(id: u64, open: &Open, done_ns: u64, reported_ns: u64) -> Cut {
    let mut spans = open.spans.clone();
    spans.sort_by_key(|&(_, from, _)| from);
    let mut parts = [0; PARTS.len()];
    let mut covered_to = open.start_ns;
    for (part, from, to) in spans {
        let from = from.max(covered_to);
        let to = to.min(done_ns);
        if to > from {
            parts[part] += to - from;
            covered_to = to;
        }
    }
    let lifetime_ns = done_ns.saturating_sub(open.start_ns);
    parts[REST] = lifetime_ns - parts[..REST].iter().sum::<u64>();
    Cut {
        id,
        lifetime_ns,
        reported_ns,
        parts,
        behind: open.behind.filter(|_| parts[LOCK] > 0),
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl Script for Waits {
    fn probes(&self) -> &'static [&'static str] {
        &[
            probe::request__start,
            probe::request__block,
            probe::request__unblock,
            probe::request__shed,
            probe::lock__wait__start,
            probe::lock__wait__done,
            probe::work__start,
            probe::work__done,
            probe::queue__enqueue,
            probe::queue__dequeue,
            probe::queue__drop,
            probe::persist__start,
            probe::persist__done,
            probe::cache__fill__start,
            probe::cache__fill__done,
            probe::cache__fill__abandoned,
            probe::request__done,
            probe::compaction__start,
            probe::compaction__done,
        ]
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Cutting each request's lifetime into its waits for {} s; the slowest {SLOWEST} at the end (Ctrl-C prints them so far).\n{:<8} {:>10}  {}\n",
            self.seconds, "TIME", "SLOWEST-MS", "ITS LONGEST PART"
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        let (a, at) = (event.args, event.at_ns);
        let id = a[0];
        match event.probe {
            probe::request__start => {
                self.open.insert(
                    id,
                    Open {
                        start_ns: at,
                        ..Open::default()
                    },
                );
            }
            probe::request__block => self.begin_part(id, PERMIT, at),
            probe::request__unblock | probe::request__shed => self.end_part(id, PERMIT, at),
            probe::lock__wait__start => {
                self.begin_part(id, LOCK, at);
                let running = self.running;
                if let Some(open) = self.open.get_mut(&id) {
                    open.behind = running;
                }
            }
            probe::lock__wait__done => self.end_part(id, LOCK, at),
            probe::work__start => self.begin_part(id, SLOT, at),
            probe::work__done => {
                // work-done says how long the work ran; before that it waited.
                let ran_from = at.saturating_sub(a[1]);
                self.end_part(id, SLOT, ran_from);
                if let Some(open) = self.open.get_mut(&id) {
                    open.spans.push((CPU, ran_from, at));
                }
            }
            probe::queue__enqueue => self.begin_part(id, QUEUE, at),
            probe::queue__dequeue | probe::queue__drop => self.end_part(id, QUEUE, at),
            probe::persist__start => self.begin_part(id, PERSIST, at),
            probe::persist__done => self.end_part(id, PERSIST, at),
            probe::cache__fill__start => self.begin_part(id, FILL, at),
            probe::cache__fill__done | probe::cache__fill__abandoned => self.end_part(id, FILL, at),
            probe::request__done => self.done(id, at, a[1]),
            probe::compaction__start => {
                self.running = Some(id);
                if self.compactions.len() == COMPACTIONS_KEPT {
                    self.compactions.remove(0);
                }
                self.compactions.push(Compaction {
                    seq: id,
                    held_ns: None,
                });
            }
            probe::compaction__done => {
                if self.running == Some(id) {
                    self.running = None;
                }
                if let Some(c) = self.compactions.iter_mut().find(|c| c.seq == id) {
                    c.held_ns = Some(a[3]);
                }
            }
            _ => {}
        }
    }

    fn second(&mut self, clock: &str, out: &mut String) {
        match self.second.take() {
            Some(cut) => {
                let part = cut.longest();
                out.push_str(&format!(
                    "{clock:<8} {:>10.1}  {} {:.0} %{}\n",
                    ms(cut.lifetime_ns),
                    PARTS[part],
                    share(cut.parts[part], cut.lifetime_ns),
                    if part == LOCK {
                        self.behind(&cut)
                    } else {
                        String::new()
                    }
                ));
            }
            None => out.push_str(&format!("{clock:<8} {:>10}\n", "-")),
        }
    }

    fn end(&mut self, _ran_s: u64, out: &mut String) {
        out.push_str(&format!(
            "\nThe slowest {} of {} requests, part by part:\n",
            self.slowest.len(),
            self.requests
        ));
        for cut in &self.slowest {
            out.push_str(&format!(
                "\nrequest {}: {:.1} ms (its request-done says {:.1} ms)\n",
                cut.id,
                ms(cut.lifetime_ns),
                ms(cut.reported_ns)
            ));
            for (part, &ns) in cut.parts.iter().enumerate().filter(|(_, ns)| **ns > 0) {
                let behind = if part == LOCK {
                    self.behind(cut)
                } else {
                    String::new()
                };
                out.push_str(&format!(
                    "  {:<58} {:>9.1} ms {:>5.1} %{behind}\n",
                    PARTS[part],
                    ms(ns),
                    share(ns, cut.lifetime_ns)
                ));
            }
        }
        let all: u64 = self.totals.iter().sum();
        out.push_str(&format!(
            "\nWhere every request's time went ({} requests):\n",
            self.requests
        ));
        for (part, &ns) in self.totals.iter().enumerate().filter(|(_, ns)| **ns > 0) {
            out.push_str(&format!(
                "  {:<58} {:>5.1} %\n",
                PARTS[part],
                share(ns, all)
            ));
        }
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(waits: &mut Waits, at_ms: u64, probe: &'static str, args: [u64; 6]) {
        waits.on(&Event {
            at_ns: at_ms * 1_000_000,
            probe,
            args,
        });
    }

    #[test]
    fn a_lifetime_is_cut_into_its_parts_and_the_rest_and_they_sum_to_it() {
        let mut w = Waits::new(Options::default());
        let ms = 1_000_000;
        feed(&mut w, 100, probe::compaction__start, [7, 0, 0, 0, 0, 0]);
        feed(&mut w, 101, probe::request__start, [1, 64, 0, 0, 0, 0]);
        feed(&mut w, 102, probe::lock__wait__start, [1, 10, 0, 0, 0, 0]);
        feed(
            &mut w,
            400,
            probe::lock__wait__done,
            [1, 298 * ms, 0, 0, 0, 0],
        );
        feed(&mut w, 401, probe::work__start, [1, 64, 2, 0, 0, 0]);
        feed(&mut w, 411, probe::work__done, [1, 6 * ms, 4 * ms, 2, 0, 0]);
        feed(
            &mut w,
            401,
            probe::compaction__done,
            [7, 0, 0, 299 * ms, 300 * ms, 0],
        );
        feed(&mut w, 413, probe::request__done, [1, 312 * ms, 0, 0, 0, 0]);
        let cut = &w.slowest()[0];
        assert_eq!(cut.lifetime_ns, 312 * ms);
        assert_eq!(cut.parts[LOCK], 298 * ms);
        assert_eq!(cut.parts[SLOT], 4 * ms, "the work's wait for a slot");
        assert_eq!(cut.parts[CPU], 6 * ms, "its run");
        assert_eq!(cut.parts[REST], 4 * ms);
        assert_eq!(cut.parts.iter().sum::<u64>(), cut.lifetime_ns);
        assert_eq!(cut.behind, Some(7));
        let mut out = String::new();
        w.end(1, &mut out);
        assert!(
            out.contains("behind compaction 7, which held the lock 299.0 ms at once"),
            "{out}"
        );
    }

    #[test]
    fn overlapping_spans_count_once_and_what_outlives_the_reply_is_clipped_or_left_out() {
        let open = Open {
            start_ns: 0,
            begun: vec![(QUEUE, 90)],
            spans: vec![(PERMIT, 10, 50), (SLOT, 40, 60), (PERSIST, 95, 200)],
            behind: None,
        };
        let cut = cut(1, &open, 100, 100);
        assert_eq!(cut.parts[PERMIT], 40);
        assert_eq!(cut.parts[SLOT], 10, "from where the permit's wait ended");
        assert_eq!(cut.parts[PERSIST], 5, "clipped at the reply");
        assert_eq!(
            cut.parts[QUEUE], 0,
            "still queued at the reply: not waited for"
        );
        assert_eq!(cut.parts.iter().sum::<u64>(), 100);
    }

    #[test]
    fn the_slowest_are_kept_and_the_rest_forgotten() {
        let mut w = Waits::new(Options::default());
        for id in 0..20u64 {
            feed(&mut w, 0, probe::request__start, [id, 0, 0, 0, 0, 0]);
            feed(&mut w, id + 1, probe::request__done, [id, 0, 0, 0, 0, 0]);
        }
        let ids: Vec<u64> = w.slowest().iter().map(|c| c.id).collect();
        assert_eq!(ids, [19, 18, 17, 16, 15]);
        assert!(w.open.is_empty());
    }
}
