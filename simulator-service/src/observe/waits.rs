//! What a request waited on: its lifetime, from its request-start to its
//! request-done on the tap's clock, cut into the parts the probes bound. The
//! wait for a permit (request-block to request-unblock or request-shed), for the
//! index's lock (and which compaction held it then), for a work slot, the work
//! on the CPU (work-start to work-done, split by its `run_ns`), a place in the
//! persistence queue, a persist the reply waits for, and a read of the store for
//! a cache fill. What no probe bounds (the network both ways, normalising, the
//! index's insert, the runtime) is the rest, so the parts sum to the lifetime.
//!
//! One cutter serves three readers: `trace waits` (over the tap's stream or a
//! recording), the live view's slowest request of each second
//! (`serving/live/slowest.rs`, over the tap in process) and a recording's
//! replay. It keeps the requests in flight and the last [`COMPACTIONS_KEPT`]
//! compactions, nothing else.

use std::collections::HashMap;

use simulator_api::events::probe;
use simulator_api::live::{SlowestRequest, WaitPart};

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
pub const LOCK: usize = 0;
pub const SLOT: usize = 1;
pub const CPU: usize = 2;
pub const PERMIT: usize = 3;
pub const QUEUE: usize = 4;
pub const PERSIST: usize = 5;
pub const FILL: usize = 6;
pub const REST: usize = PARTS.len() - 1;

/// The probes the cut reads.
pub const PROBES: [&str; 19] = [
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
];

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub id: u64,
    /// On the tap's clock, start to done.
    pub lifetime_ns: u64,
    /// request-done's own figure.
    pub reported_ns: u64,
    /// ns in each of [`PARTS`]; they sum to `lifetime_ns`.
    pub parts: [u64; PARTS.len()],
    /// The compaction that held the lock it waited for.
    pub behind: Option<u64>,
}

impl Cut {
    /// The part it spent longest in.
    pub fn longest(&self) -> usize {
        (0..PARTS.len())
            .max_by_key(|&p| self.parts[p])
            .unwrap_or(REST)
    }

    /// As the live view's second carries it: each part with time in it.
    pub fn slowest_request(&self) -> SlowestRequest {
        let ms = |ns: u64| ns as f64 / 1e6;
        SlowestRequest {
            id: self.id,
            lifetime_ms: ms(self.lifetime_ns),
            parts: PARTS
                .iter()
                .zip(self.parts)
                .filter(|(_, ns)| *ns > 0)
                .map(|(part, ns)| WaitPart {
                    part: (*part).to_owned(),
                    ms: ms(ns),
                })
                .collect(),
            behind_compaction: self.behind,
        }
    }
}

/// Keeps in `kept` the slower of it and `cut`.
pub fn keep_slowest(kept: &mut Option<Cut>, cut: Cut) {
    if kept
        .as_ref()
        .is_none_or(|k| cut.lifetime_ns > k.lifetime_ns)
    {
        *kept = Some(cut);
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Compaction {
    seq: u64,
    held_ns: Option<u64>,
}

/// Events in, each request's [`Cut`] out at its request-done.
#[derive(Debug, Default)]
pub struct Cutter {
    open: HashMap<u64, Open>,
    compactions: Vec<Compaction>,
    running: Option<u64>,
}

impl Cutter {
    /// Takes one event (`probe` by name, `at_ns` on the tap's clock); the
    /// request's cut when it is a request-done.
    pub fn on(&mut self, probe: &str, at: u64, a: &[u64; 6]) -> Option<Cut> {
        let id = a[0];
        match probe {
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
            probe::request__done => {
                let open = self.open.remove(&id)?;
                return Some(cut(id, &open, at, a[1]));
            }
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
        None
    }

    /// Compaction `seq`, when still kept: the longest it held the lock at once,
    /// once it ended.
    pub fn compaction_held_ns(&self, seq: u64) -> Option<Option<u64>> {
        self.compactions
            .iter()
            .find(|c| c.seq == seq)
            .map(|c| c.held_ns)
    }

    /// Requests begun and not yet done.
    pub fn in_flight(&self) -> usize {
        self.open.len()
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

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn feed(c: &mut Cutter, at_ms: u64, probe: &str, args: [u64; 6]) -> Option<Cut> {
        c.on(probe, at_ms * MS, &args)
    }

    #[test]
    fn a_lifetime_is_cut_into_its_parts_and_the_rest_and_they_sum_to_it() {
        let mut c = Cutter::default();
        feed(&mut c, 100, probe::compaction__start, [7, 0, 0, 0, 0, 0]);
        feed(&mut c, 101, probe::request__start, [1, 64, 0, 0, 0, 0]);
        feed(&mut c, 102, probe::lock__wait__start, [1, 10, 0, 0, 0, 0]);
        feed(
            &mut c,
            400,
            probe::lock__wait__done,
            [1, 298 * MS, 0, 0, 0, 0],
        );
        feed(&mut c, 401, probe::work__start, [1, 64, 2, 0, 0, 0]);
        feed(&mut c, 411, probe::work__done, [1, 6 * MS, 4 * MS, 2, 0, 0]);
        let done = [7, 0, 0, 299 * MS, 300 * MS, 0];
        feed(&mut c, 401, probe::compaction__done, done);
        let cut = feed(&mut c, 413, probe::request__done, [1, 312 * MS, 0, 0, 0, 0]).unwrap();
        assert_eq!(cut.lifetime_ns, 312 * MS);
        assert_eq!(cut.parts[LOCK], 298 * MS);
        assert_eq!(cut.parts[SLOT], 4 * MS, "the work's wait for a slot");
        assert_eq!(cut.parts[CPU], 6 * MS, "its run");
        assert_eq!(cut.parts[REST], 4 * MS);
        assert_eq!(cut.parts.iter().sum::<u64>(), cut.lifetime_ns);
        assert_eq!(cut.behind, Some(7));
        assert_eq!(c.compaction_held_ns(7), Some(Some(299 * MS)));
        assert_eq!(c.in_flight(), 0);
        let shown = cut.slowest_request();
        let parts: Vec<(&str, f64)> = shown.parts.iter().map(|p| (&*p.part, p.ms)).collect();
        assert_eq!(
            parts,
            [
                (PARTS[LOCK], 298.0),
                (PARTS[SLOT], 4.0),
                (PARTS[CPU], 6.0),
                (PARTS[REST], 4.0)
            ]
        );
        assert_eq!(shown.behind_compaction, Some(7));
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
    fn a_request_whose_start_was_not_seen_gives_no_cut() {
        let mut c = Cutter::default();
        assert_eq!(
            feed(&mut c, 5, probe::request__done, [9, MS, 0, 0, 0, 0]),
            None
        );
        assert_eq!(
            feed(&mut c, 5, probe::lock__wait__done, [9, MS, 0, 0, 0, 0]),
            None
        );
        assert_eq!(c.in_flight(), 0);
    }
}
