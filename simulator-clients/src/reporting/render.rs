//! The text report: client and server counts side by side in the seed's count.d
//! words, then throughput, latency and a quantize laid out like DTrace's, so the
//! report can be put beside a script's output.

use std::fmt::Write as _;
use std::time::Duration;

use simulator_api::{Counts, SEED_COUNTS};

use crate::plan::shard::ShardInfo;
use crate::reporting::figures::{Latency, Shown};
use crate::reporting::report::{Bucket, Report};
use crate::reporting::units::duration;

/// A configured duration, exactly as it was given (`1s`, `5ms`).
fn human(ns: u64) -> humantime::FormattedDuration {
    humantime::format_duration(Duration::from_nanos(ns))
}

/// How the load was paced: open loop at a rate, or closed with a think time.
fn pacing(r: &Report) -> String {
    let paced = match (r.think_time_ns, r.rate_per_s, r.arrivals) {
        (_, Some(rate), Some(arrivals)) => format!(
            "open loop, {}/s {} arrivals over {} connections",
            // A plan's mean rate is seldom whole.
            (rate * 10.0).round() / 10.0,
            match arrivals {
                crate::plan::Arrivals::Uniform => "uniform",
                crate::plan::Arrivals::Poisson => "Poisson",
                crate::plan::Arrivals::Bursts => "burst-a-second",
            },
            r.clients
        ),
        (think, _, _) => format!(
            "{} clients, closed loop, think {}",
            r.clients,
            human(think.unwrap_or(0))
        ),
    };
    match &r.plan {
        Some(plan) => format!("{paced}; plan {plan}"),
        None => paced,
    }
}

/// A shard's line: which share of the load this process ran.
fn shard_line(r: &Report, shard: ShardInfo) -> String {
    format!(
        "  shard {}/{} ({}): {} of the {} {}{}; the server column counts every shard's",
        shard.index,
        shard.count,
        match shard.source {
            crate::plan::shard::ShardSource::Flag => "--shard",
            crate::plan::shard::ShardSource::Kubernetes => "JOB_COMPLETION_INDEX",
            crate::plan::shard::ShardSource::Nomad => "NOMAD_ALLOC_INDEX",
            crate::plan::shard::ShardSource::Slurm => "SLURM_PROCID",
        },
        shard.shard().share(r.clients),
        r.clients,
        if r.mode == "open" {
            format!(
                "connections, sends {}, {}+{}... of the timetable",
                shard.index,
                shard.index + shard.count,
                shard.index + 2 * shard.count
            )
        } else {
            "clients".to_owned()
        },
        r.run_id
            .as_ref()
            .map_or(String::new(), |id| format!(", run {id}")),
    )
}

fn header(r: &Report) -> String {
    let mut out = format!(
        "sim-clients: {}, ran {} against {}\n",
        pacing(r),
        duration(r.window_ns),
        r.target
    );
    if let Some(shard) = r.shard {
        let _ = writeln!(out, "{}", shard_line(r, shard));
    }
    if let Some(merged) = &r.merged {
        let shards: Vec<String> = merged.shards.iter().map(u32::to_string).collect();
        let _ = writeln!(
            out,
            "  merged: shards {} of {}{}; counts and percentiles exact (HDR histograms added)",
            shards.join(", "),
            merged.of,
            r.run_id
                .as_ref()
                .map_or(String::new(), |id| format!(", run {id}")),
        );
    }
    if let (Some(at), Some(late)) = (&r.start_at, r.start_late_ns) {
        let _ = writeln!(out, "  started at {at}, {} late", duration(late));
    }
    // A closed-loop client's last think time can end a hair after the window:
    // worth a line only when replies really were still on their way.
    if r.completed_after_window + r.unanswered > 0 {
        let _ = writeln!(
            out,
            "  then drained {} waiting for replies still queued at the server (at most {}, --max-drain): \
             {} came, {} unanswered; the rates count the {} window only, the latencies every reply",
            duration(r.drain_ns),
            human(r.max_drain_ns),
            r.completed_after_window,
            r.unanswered,
            duration(r.window_ns),
        );
    }
    out
}

/// The latency table's column heads, aligned with [`latency_row`].
fn latency_head(out: &mut String) {
    let _ = writeln!(
        out,
        "  {:<30} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "", "p50", "p90", "p99", "p99.9", "max", "mean"
    );
}

fn latency_row(out: &mut String, what: &str, l: &Latency) {
    let _ = writeln!(
        out,
        "  {what:<30} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        duration(l.p50_ns),
        duration(l.p90_ns),
        duration(l.p99_ns),
        duration(l.p999_ns),
        duration(l.max_ns),
        duration(l.mean_ns)
    );
}

impl Report {
    /// The report as text: the header, the counts beside the server's, the
    /// latency table, the notes on pacing and retries, the quantize.
    pub fn render(&self) -> String {
        let mut out = header(self);
        self.counts(&mut out);
        out.push('\n');
        self.latencies(&mut out);
        out.push('\n');
        if !self.stages.is_empty() {
            out.push_str(&crate::reporting::stages::table(&self.stages));
            out.push('\n');
        }
        self.notes(&mut out);
        out.push('\n');
        out.push_str(&quantize(&self.latency_quantize));
        if !self.thresholds.is_empty() {
            out.push('\n');
            let judged =
                crate::reporting::judged::render(&self.thresholds, self.aborted_by.as_deref());
            out.push_str(&judged);
        }
        out
    }

    /// The seed's count lines, the clients' own count beside the server's, and
    /// the throughput line.
    fn counts(&self, out: &mut String) {
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
            "\n  throughput {:.1}/s, {:.0}/min; blocked share {:.1} %; errors: connect {}, connect timeout {}, out of descriptors {}, timeout {}, http status {}, io {}",
            self.throughput_per_s,
            self.throughput_per_min,
            self.blocked_share * 100.0,
            e.connect,
            e.connect_timeout,
            e.file_limit,
            e.timeout,
            e.http_status,
            e.io
        );
        if let Some(why) = self.out_of_descriptors() {
            let _ = writeln!(out, "  {why}");
        }
        let d = &self.digests;
        if d.right + d.wrong > 0 {
            let _ = writeln!(
                out,
                "  records normalised (reply digests): right {}, wrong {}, none {}",
                d.right, d.wrong, d.absent
            );
        }
    }

    /// A row per declared figure (`figures.rs`) the run keeps and shows.
    fn latencies(&self, out: &mut String) {
        latency_head(out);
        let open_loop = self.mode == "open";
        for (figure, summary) in self.summary.iter() {
            let Some(summary) = summary else { continue };
            let hidden = match figure.shown {
                Shown::Always => false,
                Shown::WithRetries => self.retries == 0,
                Shown::WhenMeasured => summary.max_ns == 0,
            };
            if hidden {
                continue;
            }
            latency_row(out, figure.label(open_loop), &summary);
        }
    }

    /// Late and missed sends, the pacing, the attempts, the start-up spread.
    fn notes(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "  sends late by over {}: {} of {}",
            human(self.late_after_ns),
            self.sends_late,
            self.requests_sent,
        );
        let _ = match self.pacing_slack_ns {
            Some(slack) => writeln!(
                out,
                "  paced by a precise timer, each wait at most {} late (--precise-pacing)",
                human(slack)
            ),
            None => writeln!(
                out,
                "  paced by tokio's timer (1 ms ticks; --precise-pacing is finer)"
            ),
        };
        if self.retry.retries > 0 || self.errors_by_kind.timeout > 0 {
            let _ = writeln!(
                out,
                "  attempts: {} first, {} retries ({:.1}/s in all, --retries {} --backoff {}{}); \
                 requests given up: {}; goodput {:.1}/s (answered 2xx within the {} timeout)",
                self.first_attempts,
                self.retries,
                self.attempts_per_s,
                self.retry.retries,
                self.retry.backoff,
                self.retry
                    .budget_percent
                    .map_or(String::new(), |p| format!(" --retry-budget {p}")),
                self.requests_given_up,
                self.throughput_per_s,
                duration(self.timeout_ns)
            );
        }
        if self.sends_missed > 0 {
            let _ = writeln!(
                out,
                "  sends missed: {} were due within the window but still waiting for a free \
                 connection, late, when it closed: not sent (more --n, or a faster server)",
                self.sends_missed
            );
        }
        if self.mode == "closed" {
            let _ = writeln!(
                out,
                "  the last of the {} clients sent its first request {} after its due time",
                self.clients,
                duration(self.start_spread_ns)
            );
        }
    }
}

/// Rows in the layout of DTrace's quantize(): 40 `@` for the whole population.
pub fn quantize(buckets: &[Bucket]) -> String {
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    let mut out = String::from("  request lifetimes in ns, as DTrace's quantize() prints them\n           value  ------------- Distribution ------------- count\n");
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
