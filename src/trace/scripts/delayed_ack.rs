//! delayed-ack.bt without a tracer: each second the server's requests done and
//! their mean time inside the server, its replies' writes and the pairs among
//! them, and the acknowledgements the kernel sent late, all from what the server
//! reports in `/stats`: its requests and their summed time, the writes its
//! data-port connections made (`serving/counted_writes.rs`, counted as the script
//! counts `writev`), and its network namespace's `TcpExtDelayedACKs`, which is
//! what the script counts from the delayed-ACK timer (its test holds the two
//! together).
//!
//! The twin reads no tap: a tap's stream is written to the operator's
//! connection, and a tracer beside the twin would count those writes as the
//! server's.

use simulator_api::Stats;

use super::readings::{print_totals, Readings};
use crate::trace::script::{Event, Options, Script};

/// The counts of one reading that the columns are differences of.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Reading {
    requests: u64,
    inside_ns: u64,
    writes: u64,
    pairs: u64,
    delayed_acks: u64,
}

impl Reading {
    fn of(stats: &Stats) -> Reading {
        Reading {
            requests: stats.counts.requests_done,
            inside_ns: stats.requests_done_ns,
            writes: stats.connections.writes,
            pairs: stats.connections.write_pairs,
            delayed_acks: stats.tcp.map_or(0, |t| t.delayed_acks),
        }
    }

    fn since(&self, then: &Reading) -> Reading {
        Reading {
            requests: self.requests.saturating_sub(then.requests),
            inside_ns: self.inside_ns.saturating_sub(then.inside_ns),
            writes: self.writes.saturating_sub(then.writes),
            pairs: self.pairs.saturating_sub(then.pairs),
            delayed_acks: self.delayed_acks.saturating_sub(then.delayed_acks),
        }
    }
}

#[derive(Debug)]
pub struct DelayedAck {
    seconds: u64,
    elapsed: u64,
    pid: u32,
    kernel_figures: bool,
    readings: Readings<Reading>,
}

impl DelayedAck {
    pub fn new(options: Options) -> Self {
        DelayedAck {
            seconds: options.seconds,
            elapsed: 0,
            pid: 0,
            kernel_figures: true,
            readings: Readings::default(),
        }
    }

    /// A reading of the server: its pid and its counts now.
    fn reading(&mut self, pid: u32, now: Reading, kernel_figures: bool) {
        self.pid = pid;
        self.kernel_figures = kernel_figures;
        self.readings.read(now);
    }
}

impl Script for DelayedAck {
    fn stats(&mut self, now: &Stats) {
        self.reading(now.pid, Reading::of(now), now.tcp.is_some());
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Watching pid {}'s replies for {} s (Ctrl-C prints the summary so far).\n",
            self.pid, self.seconds
        ));
        if !self.kernel_figures {
            out.push_str(
                "(the server reports no TCP counters: not Linux, so DELAYED-ACKS stays 0)\n",
            );
        }
        out.push_str(&format!(
            "{:>6} {:>9} {:>10} | {:>7} {:>6} | {:>12}\n",
            "SEC", "REQUESTS", "SERVER-US", "WRITES", "PAIRS", "DELAYED-ACKS"
        ));
    }

    fn on(&mut self, _event: &Event<'_>) {}

    fn second(&mut self, _clock: &str, out: &mut String) {
        let (now, then) = self.readings.line();
        let d = now.since(&then);
        let server_us = d.inside_ns.checked_div(d.requests).unwrap_or(0) / 1000;
        out.push_str(&format!(
            "{:>6} {:>9} {:>10} | {:>7} {:>6} | {:>12}\n",
            self.elapsed + 1,
            d.requests,
            server_us,
            d.writes,
            d.pairs,
            d.delayed_acks
        ));
        self.elapsed += 1;
    }

    fn end(&mut self, ran_s: u64, out: &mut String) {
        out.push_str(&format!(
            "\nSummary of pid {}'s replies in {ran_s} seconds (delayed ACKs: nstat's TcpExtDelayedACKs):\n",
            self.pid
        ));
        let (now, first) = self.readings.whole();
        let all = now.since(&first);
        print_totals(
            out,
            &[
                ("write_pairs", all.pairs),
                ("delayed_acks", all.delayed_acks),
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(
        twin: &mut DelayedAck,
        requests: u64,
        inside_ns: u64,
        writes: u64,
        pairs: u64,
        acks: u64,
    ) {
        let now = Reading {
            requests,
            inside_ns,
            writes,
            pairs,
            delayed_acks: acks,
        };
        twin.reading(7, now, true);
    }

    #[test]
    fn each_line_is_the_seconds_change_and_the_mean_time_inside() {
        let mut twin = DelayedAck::new(Options {
            seconds: 2,
            ..Options::default()
        });
        let mut out = String::new();
        at(&mut twin, 1000, 50_000_000, 2000, 1000, 900);
        twin.begin(&mut out);
        assert!(out.starts_with("Watching pid 7's replies for 2 s"), "{out}");
        at(&mut twin, 1153, 50_000_000 + 153 * 92_400, 2306, 1153, 1053);
        out.clear();
        twin.second("00:00:01", &mut out);
        assert_eq!(
            out,
            "     1       153         92 |     306    153 |          153\n"
        );
        out.clear();
        twin.second("00:00:02", &mut out);
        assert_eq!(
            out,
            "     2         0          0 |       0      0 |            0\n"
        );
        out.clear();
        twin.end(2, &mut out);
        assert_eq!(
            out,
            "\nSummary of pid 7's replies in 2 seconds (delayed ACKs: nstat's TcpExtDelayedACKs):\n\
             @write_pairs: 153\n\n@delayed_acks: 153\n\n"
        );
    }
}
