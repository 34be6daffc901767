//! listener.bt without a tracer: each second the server's requests done and
//! connections accepted beside the kernel's side of its listener, from what the
//! server reports in `/stats`: the listener's own figures (`TCP_INFO`'s queue and
//! limit, `SO_MEMINFO`'s drops) and its network namespace's `TcpExtListenOverflows`.
//!
//! The script sees each packet; the twin reads counters and works back:
//!
//! - ACCEPTED is every connection the accept loop took, served or refused (the
//!   script counts each `accept4()` of the process, the operator port's too);
//! - HANDSHAKES is ACCEPTED and the queue's growth over the second: a completed
//!   handshake waits in the queue until it is accepted;
//! - QUEUE-MAX is the longest queue of the second's readings, [`SAMPLES`] a
//!   second, each the longest the accept loop saw at an accept over the second
//!   before it (so a herd's peak shows in the line of the second after it too;
//!   a reading late by up to most of a second on a saturated machine still
//!   has it). The script follows every handshake: it also sees a peak that
//!   came and went without an accept, which the twin does not;
//! - DROPPED and SYN-AGAIN split the overflows: a SYN dropped at a full queue
//!   counts once on the listener and once in the namespace's overflows, a
//!   handshake's last ACK (or a request behind it) twice on the listener and
//!   once in the overflows, so of the listener's drops `d` and the overflows `o`
//!   over a second, `d - o` are ACKs and `2o - d` SYNs. The script counts the
//!   SYN when the client sends it again, one to three seconds later; the twin when
//!   it was dropped. Their sum is the overflows, as the script's is.
//!
//! LIMIT is the listener's limit once a handshake has been dropped, 0 before, as
//! the script reads it at a drop.

use simulator_api::Stats;

use super::readings::{print_totals, Readings};
use crate::trace::script::{Event, Options, Script};

/// /stats readings a second, for QUEUE-MAX.
pub const SAMPLES: u32 = 10;

/// The counts of one reading that the columns are differences of.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Reading {
    requests: u64,
    accepted: u64,
    queue: u64,
    /// The longest the queue was at an accept over the last second.
    queue_peak: u64,
    limit: u64,
    listener_drops: u64,
    overflows: u64,
}

impl Reading {
    fn of(stats: &Stats) -> Reading {
        let c = &stats.connections;
        Reading {
            requests: stats.counts.requests_done,
            accepted: c.accepted + c.refused,
            queue: c.listen_queue.map_or(0, u64::from),
            queue_peak: c.listen_queue_peak.map_or(0, u64::from),
            limit: c.listen_backlog.map_or(0, u64::from),
            listener_drops: c.listen_drops.unwrap_or(0),
            overflows: stats.tcp.map_or(0, |t| t.listen_overflows),
        }
    }

    /// (ACKs, SYNs) dropped at a full queue between `then` and `self`.
    fn drops_since(&self, then: &Reading) -> (u64, u64) {
        let on_listener = self.listener_drops.saturating_sub(then.listener_drops);
        let overflows = self.overflows.saturating_sub(then.overflows);
        (
            on_listener.saturating_sub(overflows),
            (2 * overflows).saturating_sub(on_listener),
        )
    }
}

#[derive(Debug)]
pub struct Listener {
    seconds: u64,
    elapsed: u64,
    pid: u32,
    kernel_figures: bool,
    readings: Readings<Reading>,
    queue_max: u64,
    limit: u64,
}

impl Listener {
    pub fn new(options: Options) -> Self {
        Listener {
            seconds: options.seconds,
            elapsed: 0,
            pid: 0,
            kernel_figures: true,
            readings: Readings::default(),
            queue_max: 0,
            limit: 0,
        }
    }
}

impl Listener {
    /// A reading of the server: its pid and its counts now.
    fn reading(&mut self, pid: u32, now: Reading, kernel_figures: bool) {
        self.pid = pid;
        self.kernel_figures = kernel_figures;
        self.readings.read(now);
        self.queue_max = self.queue_max.max(now.queue).max(now.queue_peak);
    }
}

impl Script for Listener {
    fn readings_per_second(&self) -> u32 {
        SAMPLES
    }

    fn stats(&mut self, now: &Stats) {
        let kernel_figures = now.connections.listen_queue.is_some() && now.tcp.is_some();
        self.reading(now.pid, Reading::of(now), kernel_figures);
    }

    fn begin(&mut self, out: &mut String) {
        out.push_str(&format!(
            "Watching pid {}'s accept queue for {} s (Ctrl-C prints the summary so far).\n",
            self.pid, self.seconds
        ));
        if !self.kernel_figures {
            out.push_str(
                "(the server reports no listener figures or TCP counters: not Linux, so the \
                 kernel's columns stay 0)\n",
            );
        }
        out.push_str(&format!(
            "{:>6} {:>9} | {:>9} | {:>10} {:>10} {:>6} {:>8} {:>10}\n",
            "SEC",
            "REQUESTS",
            "ACCEPTED",
            "HANDSHAKES",
            "QUEUE-MAX",
            "LIMIT",
            "DROPPED",
            "SYN-AGAIN"
        ));
    }

    fn on(&mut self, _event: &Event<'_>) {}

    fn second(&mut self, _clock: &str, out: &mut String) {
        let (now, then) = self.readings.line();
        let accepted = now.accepted.saturating_sub(then.accepted);
        let handshakes = (accepted + now.queue).saturating_sub(then.queue);
        let (dropped, syns) = now.drops_since(&then);
        if dropped > 0 {
            self.limit = now.limit;
        }
        out.push_str(&format!(
            "{:>6} {:>9} | {:>9} | {:>10} {:>10} {:>6} {:>8} {:>10}\n",
            self.elapsed + 1,
            now.requests.saturating_sub(then.requests),
            accepted,
            handshakes,
            self.queue_max,
            self.limit,
            dropped,
            syns
        ));
        self.queue_max = now.queue;
        self.elapsed += 1;
    }

    fn end(&mut self, ran_s: u64, out: &mut String) {
        out.push_str(&format!(
            "\nSummary of pid {}'s accept queue in {ran_s} seconds (together: nstat's TcpExtListenOverflows):\n",
            self.pid
        ));
        let (now, first) = self.readings.whole();
        let (dropped, syns) = now.drops_since(&first);
        print_totals(
            out,
            &[
                ("dropped_at_a_full_queue", dropped),
                ("syns_sent_again", syns),
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(
        twin: &mut Listener,
        requests: u64,
        accepted: u64,
        queue: u64,
        drops: u64,
        overflows: u64,
    ) {
        let now = Reading {
            requests,
            accepted,
            queue,
            queue_peak: queue,
            limit: 64,
            listener_drops: drops,
            overflows,
        };
        twin.reading(42, now, true);
    }

    #[test]
    fn the_listeners_drops_and_the_overflows_split_into_acks_and_syns() {
        let mut twin = Listener::new(Options {
            seconds: 2,
            ..Options::default()
        });
        let mut out = String::new();
        at(&mut twin, 0, 0, 0, 0, 0);
        twin.begin(&mut out);
        assert!(
            out.starts_with("Watching pid 42's accept queue for 2 s"),
            "{out}"
        );
        // A herd: 65 queued at the peak, 33 SYNs and 30 ACKs dropped (drops on
        // the listener 33 + 2 x 30, overflows 63), 80 accepted, 5 still queued.
        at(&mut twin, 0, 0, 65, 0, 0);
        at(&mut twin, 75, 80, 5, 93, 63);
        out.clear();
        twin.second("00:00:01", &mut out);
        assert_eq!(
            out,
            "     1        75 |        80 |         85         65     64       30         33\n"
        );
        at(&mut twin, 100, 100, 0, 93, 63);
        out.clear();
        twin.second("00:00:02", &mut out);
        assert_eq!(
            out,
            "     2        25 |        20 |         15          5     64        0          0\n"
        );
        out.clear();
        twin.end(2, &mut out);
        assert_eq!(
            out,
            "\nSummary of pid 42's accept queue in 2 seconds (together: nstat's TcpExtListenOverflows):\n\
             @dropped_at_a_full_queue: 30\n\n@syns_sent_again: 33\n\n"
        );
    }
}
