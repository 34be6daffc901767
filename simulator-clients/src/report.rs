//! The report of a run: every figure as JSON (`--json`), and as text laid out like
//! the seed's DTrace output so the two can be put side by side.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::plan::{LoadPlan, PayloadSize};
use crate::record::{Errors, Tally};
use crate::server::ServerWindow;

/// Latency figures, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub min_ns: u64,
    pub mean_ns: u64,
}

/// One quantize row: latencies in [value, 2 * value) ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Bucket {
    pub value: u64,
    pub count: u64,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub target: String,
    pub mode: &'static str,
    pub clients: usize,
    pub think_time_ns: u64,
    pub payload: PayloadSize,
    pub elapsed_ns: u64,
    pub requests_sent: u64,
    pub requests_completed: u64,
    pub requests_blocked: u64,
    pub requests_nonblocked: u64,
    pub errors: u64,
    pub errors_by_kind: Errors,
    pub throughput_per_s: f64,
    pub throughput_per_min: f64,
    pub blocked_share: f64,
    pub latency: Latency,
    pub latency_quantize: Vec<Bucket>,
    /// The server's own counters for the window, when `/stats` answered.
    pub server: Option<ServerWindow>,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Report {
    pub fn new(
        plan: &LoadPlan,
        tally: &Tally,
        elapsed: Duration,
        server: Option<ServerWindow>,
    ) -> Self {
        let h = &tally.latency;
        let q = |p: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p)
            }
        };
        let secs = elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
        let first = tally.pow2.iter().position(|&c| c > 0);
        let last = tally.pow2.iter().rposition(|&c| c > 0);
        let latency_quantize = match (first, last) {
            // One empty row either side, as DTrace prints it.
            (Some(a), Some(b)) => (a.saturating_sub(1)..=(b + 1).min(63))
                .map(|k| Bucket {
                    value: 1 << k,
                    count: tally.pow2[k],
                })
                .collect(),
            _ => Vec::new(),
        };
        Report {
            target: plan.target.clone(),
            mode: "closed",
            clients: plan.clients,
            think_time_ns: ns(plan.think_time),
            payload: plan.payload,
            elapsed_ns: ns(elapsed),
            requests_sent: tally.sent,
            requests_completed: tally.completed,
            requests_blocked: tally.blocked,
            requests_nonblocked: tally.completed - tally.blocked,
            errors: tally.errors.total(),
            errors_by_kind: tally.errors,
            throughput_per_s: tally.completed as f64 / secs,
            throughput_per_min: tally.completed as f64 * 60.0 / secs,
            blocked_share: if tally.completed == 0 {
                0.0
            } else {
                tally.blocked as f64 / tally.completed as f64
            },
            latency: Latency {
                p50_ns: q(0.5),
                p90_ns: q(0.9),
                p99_ns: q(0.99),
                p999_ns: q(0.999),
                max_ns: h.max(),
                min_ns: if h.is_empty() { 0 } else { h.min() },
                mean_ns: h.mean() as u64,
            },
            latency_quantize,
            server,
        }
    }

    /// The text report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "sim-clients: {} clients, closed loop, think {}, ran {:.1}s against {}\n",
            self.clients,
            humantime::format_duration(Duration::from_nanos(self.think_time_ns)),
            self.elapsed_ns as f64 / 1e9,
            self.target
        );
        let _ = writeln!(out, "  {:<40} {:>12} {:>12}", "", "client", "server");
        let server = |k: &str| {
            self.server
                .as_ref()
                .map_or("-".to_owned(), |s| s.get(k).to_string())
        };
        let rows = [
            (
                "requests started",
                self.requests_sent.to_string(),
                server("requests_started"),
            ),
            (
                "requests done",
                self.requests_completed.to_string(),
                server("requests_done"),
            ),
            (
                "blocked requests",
                self.requests_blocked.to_string(),
                server("requests_blocked"),
            ),
            (
                "non blocked requests",
                self.requests_nonblocked.to_string(),
                server("requests_nonblocked"),
            ),
            (
                "persistent writes started",
                "-".into(),
                server("persists_started"),
            ),
            (
                "persistent writes done",
                "-".into(),
                server("persists_done"),
            ),
            (
                "persistent writes failed",
                "-".into(),
                server("persists_failed"),
            ),
            ("errors", self.errors.to_string(), "-".into()),
        ];
        for (label, client, server) in rows {
            let _ = writeln!(out, "  {label:<40} {client:>12} {server:>12}");
        }
        let e = &self.errors_by_kind;
        let _ = writeln!(
            out,
            "\n  throughput {:.1}/s, {:.0}/min; blocked share {:.1} %; errors: connect {}, timeout {}, http status {}, io {}",
            self.throughput_per_s,
            self.throughput_per_min,
            self.blocked_share * 100.0,
            e.connect,
            e.timeout,
            e.http_status,
            e.io
        );
        let l = &self.latency;
        let _ = writeln!(
            out,
            "  latency (ns): p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  mean {}\n",
            l.p50_ns, l.p90_ns, l.p99_ns, l.p999_ns, l.max_ns, l.mean_ns
        );
        out.push_str(&quantize(&self.latency_quantize));
        out
    }
}

/// Rows in the layout of DTrace's quantize(): 40 `@` for the whole population.
pub fn quantize(buckets: &[Bucket]) -> String {
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    let mut out = String::from("  request lifetimes visualisation\n           value  ------------- Distribution ------------- count\n");
    for b in buckets {
        let width = (b.count * 40 + total / 2).checked_div(total).unwrap_or(0) as usize;
        let _ = writeln!(
            out,
            "{:>16} |{:<40} {}",
            b.value,
            "@".repeat(width),
            b.count
        );
    }
    out
}
