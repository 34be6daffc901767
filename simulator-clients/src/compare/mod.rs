//! `sim-clients compare BEFORE.json AFTER.json`: two runs' reports (each
//! written with `--json`, which keeps every second) told apart from their
//! noise. For the whole run, and for each stage of a plan both share: the
//! change in throughput, error rate, blocked share and latency p50 and p99,
//! each with a 99 % interval from a moving-block bootstrap over the seconds
//! (`stats.rs` says why blocks), and a verdict in benchstat's words: better,
//! worse, or `~` (not told apart from noise). `--aa` names a second run of the
//! before: what that pair moved is the noise floor a change must clear. The
//! status is 99 when a figure got worse (a regression is a failed bar), 0
//! otherwise.

pub mod stats;

use std::path::PathBuf;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::reporting::hdr;
use crate::reporting::report::Report;
use stats::{Change, Figure, Interval, Second, Verdict};

/// `sim-clients compare`'s flags.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The run before (a report written with --json).
    pub before: PathBuf,
    /// The run after.
    pub after: PathBuf,
    /// Another run of the before, unchanged: the noise floor (an A/A pair).
    #[arg(long, value_name = "FILE")]
    pub aa: Option<PathBuf>,
    /// Bootstrap resamples of each run.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(100..=100_000))]
    pub resamples: u32,
    /// Seeds the resampling, so a comparison reads the same twice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How the interval is drawn from the resamples: `expanded` widens it for
    /// few blocks (a short run); `percentile` is the plain bootstrap's, too
    /// narrow under a minute (docs/load.md, "Before and after").
    #[arg(long, value_enum, default_value_t = Interval::Expanded)]
    pub interval: Interval,
    /// Also write the comparison as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// The figures compared, in the table's order.
pub const FIGURES: [Figure; 5] = [
    Figure::Throughput,
    Figure::ErrorRate,
    Figure::BlockedShare,
    Figure::Latency(50),
    Figure::Latency(99),
];

/// One figure of one span, compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `the run` or a stage's name.
    pub span: String,
    pub figure: String,
    pub before: f64,
    pub after: f64,
    /// After / before; for a share, after - before.
    pub change: f64,
    pub low: f64,
    pub high: f64,
    /// What an A/A pair moved, when one was given.
    pub floor: f64,
    pub verdict: Verdict,
}

impl Row {
    fn is_share(&self) -> bool {
        self.figure.contains("share") || self.figure.contains("rate")
    }

    /// One of the row's figures as the tables print it: a share in percent,
    /// a latency with its unit, a throughput a second.
    pub fn value_text(&self, v: f64) -> String {
        match (self.is_share(), self.figure.starts_with("latency")) {
            (true, _) => format!("{:.2} %", v * 100.0),
            (_, true) => crate::reporting::units::duration(v as u64),
            _ => format!("{v:.1}"),
        }
    }

    /// The change and its interval: points for a share, percent otherwise.
    pub fn change_text(&self) -> String {
        match self.is_share() {
            true => format!(
                "{:+.2} pt [{:+.2}, {:+.2}]",
                self.change * 100.0,
                self.low * 100.0,
                self.high * 100.0
            ),
            false => format!(
                "{:+.1} % [{:+.1}, {:+.1}]",
                (self.change - 1.0) * 100.0,
                (self.low - 1.0) * 100.0,
                (self.high - 1.0) * 100.0
            ),
        }
    }
}

/// A comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub before: String,
    pub after: String,
    pub aa: Option<String>,
    pub seconds: (usize, usize),
    pub block_seconds: (usize, usize),
    pub resamples: u32,
    /// How each interval was drawn (reports of earlier versions: expanded).
    #[serde(default)]
    pub interval: Interval,
    pub rows: Vec<Row>,
}

/// A report's seconds as the statistics read them.
fn seconds_of(report: &Report, stage: Option<&str>) -> anyhow::Result<Vec<Second>> {
    report
        .seconds
        .iter()
        .filter(|s| stage.is_none_or(|name| s.line.stage.as_deref() == Some(name)))
        .map(|s| {
            let h = hdr::decode(&s.latency_hdr).context("a second's latency histogram")?;
            let latency = h
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect();
            Ok(Second {
                sent: s.line.sent,
                completed: s.line.completed,
                errors: s.line.errors,
                blocked: s.line.blocked,
                blocked_of: s.line.completed,
                latency,
            })
        })
        .collect()
}

fn read(path: &PathBuf) -> anyhow::Result<Report> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let report: Report = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a sim-clients report written with --json",
            path.display()
        )
    })?;
    anyhow::ensure!(
        report.seconds.len() >= 2,
        "{} keeps {} seconds: a comparison needs a run's seconds (write it with --json, and run at least 2 s)",
        path.display(),
        report.seconds.len()
    );
    Ok(report)
}

/// The spans both runs share: the run, then each stage of a plan both have.
fn spans(before: &Report, after: &Report) -> Vec<Option<String>> {
    let mut spans = vec![None];
    if before.plan.is_some() && before.plan == after.plan {
        spans.extend(before.stages.iter().map(|s| Some(s.name.clone())));
    }
    spans
}

/// One span both runs have, as seconds: the before, the after and, with
/// `--aa`, the before again.
#[derive(Debug, Clone)]
pub struct Span {
    pub name: String,
    pub before: Vec<Second>,
    pub after: Vec<Second>,
    pub again: Option<Vec<Second>>,
}

/// How a comparison resamples: how many times, from which seed, and how it
/// draws each interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resampling {
    pub resamples: u32,
    pub seed: u64,
    pub interval: Interval,
}

impl Resampling {
    pub fn of(args: &CompareArgs) -> Self {
        Resampling {
            resamples: args.resamples,
            seed: args.seed,
            interval: args.interval,
        }
    }
}

impl Default for Resampling {
    /// `compare`'s defaults.
    fn default() -> Self {
        Resampling {
            resamples: 2000,
            seed: 1,
            interval: Interval::Expanded,
        }
    }
}

/// Compares the runs of `args`.
pub fn compare(args: &CompareArgs) -> anyhow::Result<Comparison> {
    let (before, after) = (read(&args.before)?, read(&args.after)?);
    let aa = args.aa.as_ref().map(read).transpose()?;
    let runs = Runs {
        before: &before,
        after: &after,
        aa: aa.as_ref(),
    };
    compare_reports(&Names::of(args), &runs, &Resampling::of(args))
}

/// Two reports to compare, and an A/A run of the before where there is one.
#[derive(Debug, Clone, Copy)]
pub struct Runs<'a> {
    pub before: &'a Report,
    pub after: &'a Report,
    pub aa: Option<&'a Report>,
}

/// Compares two reports held in memory, as `compare` does two files: the
/// demo compares its two runs so. Each needs its seconds (a run with
/// `Outputs::seconds`).
pub fn compare_reports(
    names: &Names,
    runs: &Runs<'_>,
    resampling: &Resampling,
) -> anyhow::Result<Comparison> {
    let spans = spans(runs.before, runs.after)
        .into_iter()
        .map(|span| {
            let of = |r: &Report| seconds_of(r, span.as_deref());
            Ok(Span {
                name: span.clone().unwrap_or_else(|| "the run".into()),
                before: of(runs.before)?,
                after: of(runs.after)?,
                again: runs.aa.map(of).transpose()?,
            })
        })
        .collect::<anyhow::Result<Vec<Span>>>()?;
    Ok(compare_spans(names, &spans, resampling))
}

/// Two reports held in memory compared by `compare`'s defaults, with no A/A
/// run: the demo's two runs, and a workshop check's before and after a fix.
/// `names`: what the before and the after are called.
pub fn before_and_after(
    before: &Report,
    after: &Report,
    names: [&str; 2],
) -> anyhow::Result<Comparison> {
    let names = Names {
        before: names[0].into(),
        after: names[1].into(),
        aa: None,
    };
    let runs = Runs {
        before,
        after,
        aa: None,
    };
    compare_reports(&names, &runs, &Resampling::default())
}

/// What the two runs (and the A/A run) are called in the comparison.
#[derive(Debug, Clone)]
pub struct Names {
    pub before: String,
    pub after: String,
    pub aa: Option<String>,
}

impl Names {
    pub fn of(args: &CompareArgs) -> Self {
        Names {
            before: args.before.display().to_string(),
            after: args.after.display().to_string(),
            aa: args.aa.as_ref().map(|p| p.display().to_string()),
        }
    }
}

/// Compares each span's seconds: what `compare` does with two reports and
/// `system-simulator compare` with two recordings.
pub fn compare_spans(names: &Names, spans: &[Span], resampling: &Resampling) -> Comparison {
    let Resampling {
        resamples,
        seed,
        interval,
    } = *resampling;
    let mut rows = Vec::new();
    for span in spans {
        let (b, a) = (
            stats::Indexed::new(&span.before),
            stats::Indexed::new(&span.after),
        );
        let again = span.again.as_deref().map(stats::Indexed::new);
        for figure in FIGURES {
            let c = stats::change(figure, &b, &a, resamples as usize, seed, interval);
            let floor = again.as_ref().map_or(0.0, |aa| {
                let moved = stats::change(figure, &b, aa, 0, seed, interval).change;
                match figure.is_share() {
                    true => moved.abs(),
                    false => (moved - 1.0).abs(),
                }
            });
            rows.push(row(Some(&span.name), figure, &c, floor));
        }
    }
    let whole = spans.first();
    let count = |f: fn(&Span) -> usize| whole.map_or(0, f);
    Comparison {
        before: names.before.clone(),
        after: names.after.clone(),
        aa: names.aa.clone(),
        seconds: (count(|s| s.before.len()), count(|s| s.after.len())),
        block_seconds: (
            stats::block_length(count(|s| s.before.len())),
            stats::block_length(count(|s| s.after.len())),
        ),
        resamples,
        interval,
        rows,
    }
}

/// The status of a comparison: [`Regressed`] when a figure got worse.
pub fn status(c: &Comparison) -> anyhow::Result<()> {
    let worse = c
        .rows
        .iter()
        .filter(|r| r.verdict == Verdict::Worse)
        .count();
    match worse {
        0 => Ok(()),
        n => Err(Regressed {
            worse: n,
            of: c.rows.len(),
        }
        .into()),
    }
}

fn row(span: Option<&str>, figure: Figure, c: &Change, floor: f64) -> Row {
    Row {
        span: span.unwrap_or("the run").to_owned(),
        figure: figure.name(),
        before: c.before,
        after: c.after,
        change: c.change,
        low: c.low,
        high: c.high,
        floor: if floor.is_finite() { floor } else { 0.0 },
        verdict: stats::verdict(figure, c, if floor.is_finite() { floor } else { 0.0 }),
    }
}

/// The comparison as text.
pub fn render(c: &Comparison) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "{} -> {}: {} and {} seconds, blocks of {} and {}, {} resamples{}{}\n",
        c.before,
        c.after,
        c.seconds.0,
        c.seconds.1,
        c.block_seconds.0,
        c.block_seconds.1,
        c.resamples,
        match c.interval {
            Interval::Expanded => "",
            Interval::Percentile => ", percentile intervals (not widened)",
        },
        c.aa.as_ref()
            .map_or(String::new(), |aa| format!(", noise floor from {aa}")),
    );
    let _ = writeln!(
        out,
        "  {:<12} {:<14} {:>12} {:>12} {:>28}  verdict",
        "span", "figure", "before", "after", "change [99 % interval]"
    );
    for r in &c.rows {
        let _ = writeln!(
            out,
            "  {:<12} {:<14} {:>12} {:>12} {:>28}  {}",
            r.span,
            r.figure,
            r.value_text(r.before),
            r.value_text(r.after),
            r.change_text(),
            r.verdict.word()
        );
    }
    out
}

/// A comparison in which a figure got worse: status 99, as a failed bar.
#[derive(Debug, thiserror::Error)]
#[error("{worse} of {of} figures got worse (exit status 99)")]
pub struct Regressed {
    pub worse: usize,
    pub of: usize,
}

/// `sim-clients compare`: prints the comparison; fails with [`Regressed`]
/// when a figure got worse.
pub fn run(args: &CompareArgs) -> anyhow::Result<()> {
    let json = args
        .json
        .as_deref()
        .map(crate::reporting::reserve)
        .transpose()?;
    let c = compare(args)?;
    print!("{}", render(&c));
    if let Some(out) = json {
        crate::reporting::write_json(out, &c)?;
    }
    status(&c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reporting::series::{Line, Second as ReportSecond};

    /// A report of 20 seconds, the first 10 in stage `base` and the rest in
    /// `peak`, each second 100 replies of latencies around `base_ms` and
    /// `peak_ms` (a spread of ±10 % over the second's replies).
    fn report(base_ms: u64, peak_ms: u64, seed: u64) -> Report {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut r = Report::of_nothing(&crate::plan::LoadPlan::default());
        r.plan = Some("base: step 100/s 10s, peak: step 100/s 10s".into());
        let stages: simulator_api::load::Stages = r.plan.as_deref().unwrap().parse().unwrap();
        r.stages = crate::reporting::stages::figures(
            &stages,
            &[Default::default(), Default::default()],
            false,
        );
        r.seconds = (0..20)
            .map(|k| {
                let ms = if k < 10 { base_ms } else { peak_ms };
                let mut h = hdr::new_histogram();
                for _ in 0..100 {
                    let ns = ms * 1_000_000 * rng.random_range(90..=110) / 100;
                    h.record(ns).unwrap();
                }
                let mut line = Line::new(f64::from(k + 1), &Default::default());
                (line.sent, line.completed) = (100, 100);
                line.stage = Some(if k < 10 { "base" } else { "peak" }.into());
                ReportSecond {
                    line,
                    latency_hdr: hdr::encode(&h),
                    connect_hdr: String::new(),
                }
            })
            .collect();
        r
    }

    #[test]
    fn a_stage_that_slowed_is_worse_alone_and_the_run_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str, r: &Report| {
            let p = dir.path().join(name);
            std::fs::write(&p, serde_json::to_string(r).unwrap()).unwrap();
            p
        };
        let args = CompareArgs {
            before: path("before.json", &report(10, 10, 1)),
            after: path("after.json", &report(10, 20, 2)),
            aa: None,
            resamples: 500,
            seed: 1,
            interval: Interval::Expanded,
            json: None,
        };
        let c = compare(&args).unwrap();
        let verdict = |span: &str, figure: &str| {
            c.rows
                .iter()
                .find(|r| r.span == span && r.figure == figure)
                .map(|r| r.verdict)
                .unwrap()
        };
        assert_eq!(
            verdict("peak", "latency p50"),
            Verdict::Worse,
            "{}",
            render(&c)
        );
        assert_eq!(
            verdict("base", "latency p50"),
            Verdict::Same,
            "{}",
            render(&c)
        );
        assert_eq!(
            verdict("the run", "latency p99"),
            Verdict::Worse,
            "{}",
            render(&c)
        );
        assert_eq!(
            verdict("the run", "throughput /s"),
            Verdict::Same,
            "{}",
            render(&c)
        );
        let ran = run(&args).unwrap_err();
        assert!(ran.downcast_ref::<Regressed>().is_some(), "{ran}");
    }
}
