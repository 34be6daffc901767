//! `trace waits`: what each slow request waited on. Each request's lifetime is
//! cut into the parts the probes bound by the service's own cutter
//! (`simulator-service/src/observe/waits.rs`, which the live view's slowest
//! request uses too): a permit, the index's lock (and which compaction held
//! it), a work slot, the CPU, the persistence queue, a persist the reply waits
//! for, a cache fill, and the rest no probe bounds. The request-done's own
//! `lifetime_ns` (the server's clock) is printed beside, as a check of the cut.
//!
//! A line a second names that second's slowest request and its longest part;
//! the end prints the [`SLOWEST`] slowest requests of the run, part by part,
//! and the share of each part over every request. No bpftrace twin: the cut
//! needs every event of a request at once, which the tap gives and a `.bt`
//! script would keep in maps per request id.

use crate::trace::script::{Event, Options, Script};
use simulator_service::parts::waits::{keep_slowest, Cut, Cutter, LOCK, PARTS, PROBES};

/// Requests the summary prints, slowest first.
pub const SLOWEST: usize = 5;

#[derive(Debug)]
pub struct Waits {
    cutter: Cutter,
    slowest: Vec<Cut>,
    second: Option<Cut>,
    totals: [u64; PARTS.len()],
    requests: u64,
    seconds: u64,
}

impl Waits {
    pub fn new(options: Options) -> Self {
        Waits {
            cutter: Cutter::default(),
            slowest: Vec::new(),
            second: None,
            totals: [0; PARTS.len()],
            requests: 0,
            seconds: options.seconds,
        }
    }

    fn done(&mut self, cut: Cut) {
        self.requests += 1;
        for (total, part) in self.totals.iter_mut().zip(cut.parts) {
            *total += part;
        }
        keep_slowest(&mut self.second, cut.clone());
        self.slowest.push(cut);
        self.slowest
            .sort_by_key(|c| std::cmp::Reverse(c.lifetime_ns));
        self.slowest.truncate(SLOWEST);
    }

    fn behind(&self, cut: &Cut) -> String {
        match cut
            .behind
            .and_then(|seq| self.cutter.compaction_held_ns(seq).map(|c| (seq, c)))
        {
            Some((seq, held)) => match held {
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

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl Script for Waits {
    fn probes(&self) -> &'static [&'static str] {
        &PROBES
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Cutting each request's lifetime into its waits for {} s; the slowest {SLOWEST} at the end (Ctrl-C prints them so far).\n{:<8} {:>10}  {}\n",
            self.seconds, "TIME", "SLOWEST-MS", "ITS LONGEST PART"
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        if let Some(cut) = self.cutter.on(event.probe, event.at_ns, &event.args) {
            self.done(cut);
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
    use simulator_api::events::probe;

    fn feed(waits: &mut Waits, at_ms: u64, probe: &'static str, args: [u64; 6]) {
        waits.on(&Event {
            at_ns: at_ms * 1_000_000,
            probe,
            args,
        });
    }

    /// The cut itself is `observe/waits.rs`'s, tested there; this script
    /// prints it, the lock's part beside the compaction behind it.
    #[test]
    fn the_summary_names_the_compaction_behind_a_lock_wait() {
        let mut w = Waits::new(Options::default());
        let ms = 1_000_000;
        feed(&mut w, 100, probe::compaction__start, [7, 0, 0, 0, 0, 0]);
        feed(&mut w, 101, probe::request__start, [1, 64, 0, 0, 0, 0]);
        feed(&mut w, 102, probe::lock__wait__start, [1, 10, 0, 0, 0, 0]);
        let held = [7, 0, 0, 299 * ms, 300 * ms, 0];
        feed(&mut w, 400, probe::compaction__done, held);
        feed(
            &mut w,
            400,
            probe::lock__wait__done,
            [1, 298 * ms, 0, 0, 0, 0],
        );
        feed(&mut w, 413, probe::request__done, [1, 312 * ms, 0, 0, 0, 0]);
        let mut out = String::new();
        w.end(1, &mut out);
        assert!(out.contains("request 1: 312.0 ms"), "{out}");
        assert!(
            out.contains("behind compaction 7, which held the lock 299.0 ms at once"),
            "{out}"
        );
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
        assert_eq!(w.cutter.in_flight(), 0);
    }
}
