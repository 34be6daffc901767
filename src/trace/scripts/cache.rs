//! cache.bt over the tap: the look-aside cache's reads and fills a line a
//! second (hits, misses, reads answered stale, the hit ratio, fills done, abandoned and wasted, misses
//! refused, fills in flight since the start, whether an incident was in force);
//! then the run's totals and the fills' latency.

use super::incident::{self, IncidentColumn};
use crate::trace::report::{Count, Hist, Map};
use crate::trace::script::{Event, Options, Script};
use simulator_api::events::probe;

/// One second's figures, in the columns' order.
#[derive(Debug, Default, Clone, Copy)]
struct Second {
    hits: u64,
    misses: u64,
    stale: u64,
    filled: u64,
    abandoned: u64,
    wasted: u64,
    refused: u64,
}

#[derive(Debug)]
pub struct Cache {
    now: Second,
    /// Fills begun and ended since the start (FILLING is the difference).
    started: u64,
    ended: u64,
    incident: IncidentColumn,
    totals: Map<Count>,
    latency: Map<Hist>,
}

impl Cache {
    pub fn new(_options: Options) -> Self {
        Cache {
            now: Second::default(),
            started: 0,
            ended: 0,
            incident: IncidentColumn::default(),
            totals: Map::new("totals"),
            latency: Map::new("latency"),
        }
    }
}

impl Script for Cache {
    fn probes(&self) -> &'static [&'static str] {
        &[
            probe::cache__hit,
            probe::cache__miss,
            probe::cache__stale__hit,
            probe::cache__fill__start,
            probe::cache__fill__done,
            probe::cache__fill__abandoned,
            probe::cache__fill__refuse,
            incident::PROBES[0],
            incident::PROBES[1],
            incident::PROBES[2],
        ]
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "{:<8} {:>6} {:>7} {:>6} {:>5} {:>7} {:>10} {:>7} {:>8} {:>8} {:>9}\n",
            "TIME",
            "HITS",
            "MISSES",
            "STALE",
            "HIT%",
            "FILLED",
            "ABANDONED",
            "WASTED",
            "REFUSED",
            "FILLING",
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
            probe::cache__hit => {
                now.hits += 1;
                totals.add("reads that hit", 1);
            }
            probe::cache__miss => {
                now.misses += 1;
                totals.add("reads that missed", 1);
            }
            probe::cache__stale__hit => {
                now.stale += 1;
                totals.add("reads answered stale", 1);
            }
            probe::cache__fill__start => {
                self.started += 1;
                totals.add("fills begun", 1);
            }
            probe::cache__fill__done => {
                now.filled += 1;
                self.ended += 1;
                totals.add("fills that filled the cache", 1);
                self.latency.add("fill latency (ns)", a[2]);
            }
            probe::cache__fill__abandoned => {
                now.abandoned += 1;
                self.ended += 1;
                totals.add("fills abandoned (client gone)", 1);
                if a[2] == 1 {
                    now.wasted += 1;
                    totals.add("abandoned fills the store had read (wasted)", 1);
                }
            }
            probe::cache__fill__refuse => {
                now.refused += 1;
                totals.add("misses refused at fill_limit", 1);
            }
            _ => {}
        }
    }

    fn second(&mut self, clock: &str, out: &mut String) {
        let s = std::mem::take(&mut self.now);
        let reads = s.hits + s.misses + s.stale;
        let hit_percent = match reads {
            0 => 0,
            _ => s.hits * 100 / reads,
        };
        out.push_str(&format!(
            "{clock:<8} {:>6} {:>7} {:>6} {:>5} {:>7} {:>10} {:>7} {:>8} {:>8} {:>9}\n",
            s.hits,
            s.misses,
            s.stale,
            hit_percent,
            s.filled,
            s.abandoned,
            s.wasted,
            s.refused,
            self.started.saturating_sub(self.ended),
            self.incident.second()
        ));
    }

    fn end(&mut self, _ran_s: u64, out: &mut String) {
        out.push_str("\nSummary of the cache over the whole run:\n");
        self.totals.print(out);
        self.latency.print(out);
    }
}
