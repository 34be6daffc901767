//! A plan's figures stage by stage (`--stages`): each stage's offered and
//! achieved rate, late and missed sends, errors by kind, and its latency from
//! the send's due time (corrected for coordinated omission) and, in an open
//! loop, from when it left (uncorrected), side by side. An attempt counts in
//! the stage it was due in (`record.rs`), so the stages add up to the run.
//! Each stage keeps its histograms' text, so `merge` adds shards' stages as
//! exactly as their whole runs.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::reporting::figures::Latency;
use crate::reporting::hdr;
use crate::reporting::record::{Errors, Interval};
use crate::reporting::units;
use simulator_api::load::{Shape, Stages, Unit};

/// One stage of a plan, as the report keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageFigures {
    pub name: String,
    pub shape: Shape,
    /// Clients or requests a second.
    pub unit: Unit,
    /// Seconds from the run's start.
    pub from_s: f64,
    pub to_s: f64,
    /// The level at the stage's start and end (equal but for a ramp).
    pub from_level: f64,
    pub to_level: f64,
    /// First attempts due in the stage (missed ones too), a second.
    pub offered_per_s: f64,
    /// Attempts answered 2xx while the stage lasted, a second.
    pub achieved_per_s: f64,
    /// Those answers: a server that cannot keep up answers fewer than were
    /// offered, the rest later (in `completed`, by when they were due).
    pub answered_in_stage: u64,
    pub sent: u64,
    pub completed: u64,
    pub blocked: u64,
    pub late: u64,
    pub missed: u64,
    pub retries: u64,
    pub given_up: u64,
    pub unanswered: u64,
    pub errors: Errors,
    /// From each send's due time: what a user waited.
    pub latency: Latency,
    /// From when each left; open loop only (in a closed loop it is `latency`).
    pub latency_from_send: Option<Latency>,
    pub latency_hdr: String,
    pub latency_from_send_hdr: Option<String>,
}

impl StageFigures {
    /// Stage `index` of `plan`, of its tally.
    pub fn of(plan: &Stages, index: usize, tally: &Interval, open_loop: bool) -> Self {
        let stage = &plan.stages[index];
        let (from_s, to_s) = plan.bounds_s().nth(index).unwrap_or_default();
        let mut figures = StageFigures {
            name: stage.name.clone(),
            shape: stage.shape,
            unit: plan.unit,
            from_s,
            to_s,
            from_level: stage.from_level,
            to_level: stage.to_level,
            offered_per_s: 0.0,
            achieved_per_s: 0.0,
            answered_in_stage: tally.answered_in_span,
            sent: tally.sent,
            completed: tally.completed,
            blocked: tally.blocked,
            late: tally.late,
            missed: tally.missed,
            retries: tally.retries,
            given_up: tally.given_up,
            unanswered: tally.unanswered,
            errors: tally.errors,
            latency: Latency::of(&tally.latency),
            latency_from_send: open_loop.then(|| Latency::of(&tally.latency_from_send)),
            latency_hdr: hdr::encode(&tally.latency),
            latency_from_send_hdr: open_loop.then(|| hdr::encode(&tally.latency_from_send)),
        };
        figures.set_rates();
        figures
    }

    /// The same stage with no count yet: what a merge adds shards' into.
    pub fn emptied(&self) -> Self {
        StageFigures {
            sent: 0,
            completed: 0,
            blocked: 0,
            late: 0,
            missed: 0,
            retries: 0,
            given_up: 0,
            unanswered: 0,
            answered_in_stage: 0,
            errors: Errors::default(),
            ..self.clone()
        }
    }

    /// Adds another shard's counts of the same stage (histograms aside).
    pub fn add_counts(&mut self, other: &StageFigures) {
        self.sent += other.sent;
        self.completed += other.completed;
        self.blocked += other.blocked;
        self.late += other.late;
        self.missed += other.missed;
        self.retries += other.retries;
        self.given_up += other.given_up;
        self.unanswered += other.unanswered;
        self.answered_in_stage += other.answered_in_stage;
        self.errors.add(&other.errors);
    }

    /// The rates of its counts over its span.
    pub fn set_rates(&mut self) {
        let secs = (self.to_s - self.from_s).max(f64::MIN_POSITIVE);
        let offered = self.sent - self.retries + self.missed;
        self.offered_per_s = offered as f64 / secs;
        self.achieved_per_s = self.answered_in_stage as f64 / secs;
    }
}

/// Every stage of `plan`, of the recorder's tallies.
pub fn figures(plan: &Stages, tallies: &[Interval], open_loop: bool) -> Vec<StageFigures> {
    tallies
        .iter()
        .enumerate()
        .map(|(k, tally)| StageFigures::of(plan, k, tally, open_loop))
        .collect()
}

/// The level as a table cell: `0→50` clients, `300/s`.
fn level(s: &StageFigures) -> String {
    let one = |l: f64| match s.unit {
        Unit::Clients => format!("{l}"),
        Unit::Rate => format!("{l}/s"),
    };
    if s.from_level == s.to_level {
        one(s.to_level)
    } else {
        format!("{}→{}", one(s.from_level), one(s.to_level))
    }
}

/// The header of the stage table.
pub const TABLE_HEAD: &str = "  stage        shape  level        from-to s  offered/s achieved/s   late  errors  p50      p99      p99.9    p99 sent";

/// One stage's row, as printed at its end and in the report.
pub fn row(s: &StageFigures) -> String {
    let ms = |ns: u64| units::duration(ns);
    let uncorrected = s.latency_from_send.map_or("-".to_owned(), |l| ms(l.p99_ns));
    format!(
        "  {:<12} {:<6} {:<12} {:>9} {:>9.1} {:>10.1} {:>6} {:>7}  {:<8} {:<8} {:<8} {}",
        s.name,
        s.shape.name(),
        level(s),
        format!("{:.0}-{:.0}", s.from_s, s.to_s),
        s.offered_per_s,
        s.achieved_per_s,
        s.late + s.missed,
        s.errors.total(),
        ms(s.latency.p50_ns),
        ms(s.latency.p99_ns),
        ms(s.latency.p999_ns),
        uncorrected,
    )
}

/// The stage table of a report.
pub fn table(stages: &[StageFigures]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "stages (latency from each send's due time; p99 sent: from when it left)"
    );
    let _ = writeln!(out, "{TABLE_HEAD}");
    for s in stages {
        let _ = writeln!(out, "{}", row(s));
    }
    out
}
