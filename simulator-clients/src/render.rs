//! The text report: client and server counts side by side in the seed's count.d
//! words, then throughput, latency and a quantize laid out like DTrace's, so the
//! report can be put beside a script's output.

use std::fmt::Write as _;
use std::time::Duration;

use simulator_api::{Counts, SEED_COUNTS};

use crate::report::{Bucket, Latency, Report};

fn human(ns: u64) -> humantime::FormattedDuration {
    humantime::format_duration(Duration::from_nanos(ns))
}

/// Microsecond precision is all a lag needs; humantime would print nanoseconds.
fn millis(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

fn header(r: &Report) -> String {
    let pacing = match (r.think_time_ns, r.rate_per_s, r.arrivals) {
        (_, Some(rate), Some(arrivals)) => format!(
            "open loop, {rate}/s {} arrivals over {} connections",
            match arrivals {
                crate::plan::Arrivals::Uniform => "uniform",
                crate::plan::Arrivals::Poisson => "Poisson",
            },
            r.clients
        ),
        (think, _, _) => format!(
            "{} clients, closed loop, think {}",
            r.clients,
            human(think.unwrap_or(0))
        ),
    };
    format!(
        "sim-clients: {pacing}, ran {:.1}s against {}\n",
        r.elapsed_ns as f64 / 1e9,
        r.target
    )
}

fn latency_line(out: &mut String, what: &str, l: &Latency) {
    let _ = writeln!(
        out,
        "  {what:<34} p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  mean {}",
        l.p50_ns, l.p90_ns, l.p99_ns, l.p999_ns, l.max_ns, l.mean_ns
    );
}

impl Report {
    pub fn render(&self) -> String {
        let mut out = header(self);
        let _ = writeln!(out, "  {:<40} {:>12} {:>12}", "", "client", "server");
        let server = |get: fn(&Counts) -> u64| {
            self.server
                .as_ref()
                .map_or("-".to_owned(), |s| get(s).to_string())
        };
        // The client's own count beside each of the seed's lines, where it has one.
        let client = [
            self.requests_sent.to_string(),
            self.requests_completed.to_string(),
            self.requests_blocked.to_string(),
            self.requests_nonblocked.to_string(),
            "-".into(),
            "-".into(),
        ];
        for (seed, client) in SEED_COUNTS.iter().zip(client) {
            let label = seed.label;
            let _ = writeln!(out, "  {label:<40} {client:>12} {:>12}", server(seed.get));
        }
        let _ = writeln!(
            out,
            "  {:<40} {:>12} {:>12}",
            "persistent writes failed",
            "-",
            server(|c| c.persists_failed)
        );
        let _ = writeln!(out, "  {:<40} {:>12} {:>12}", "errors", self.errors, "-");
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
        match &self.latency_from_send {
            Some(uncorrected) => {
                latency_line(&mut out, "latency from scheduled send (ns):", &self.latency);
                latency_line(&mut out, "latency from actual send (ns):", uncorrected);
            }
            None => latency_line(&mut out, "latency (ns):", &self.latency),
        }
        let lag = &self.schedule_lag;
        let _ = writeln!(
            out,
            "  sends late by over {}: {} of {}; lag behind schedule p50 {}  p99 {}  max {}",
            human(self.late_after_ns),
            self.sends_late,
            self.requests_sent,
            millis(lag.p50_ns),
            millis(lag.p99_ns),
            millis(lag.max_ns)
        );
        if self.mode == "closed" {
            let _ = writeln!(
                out,
                "  the last of the {} clients sent its first request {} after its due time",
                self.clients,
                millis(self.start_spread_ns)
            );
        }
        out.push('\n');
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
