//! `sim-clients merge FILE...`: the shards' JSON reports added into one report
//! of the whole run, offline, like `vegeta report a.bin b.bin` or Gatling's `-ro`.
//!
//! Exact, not estimated: the counts and sums add; the whole-run histograms (HDR,
//! same shape on every shard) add bucket by bucket, so min, max, mean and every
//! percentile are those of one histogram fed every request; the quantize rows
//! add; each second of the series adds the shards' same second, histogram and
//! all, and each stage of a plan the shards' same stage.
//! The merged report is then laid out by the very code that lays out one run's.
//!
//! It refuses what would make a wrong total: reports of different runs (another
//! plan, run id, shard count or start time) and the same shard twice. Missing
//! shards are merged with a warning: a pod that failed still leaves the others'
//! figures worth reading. The server's counters are left out: every shard
//! reports the whole server's, so adding them would count each request N times.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use hdrhistogram::Histogram;

use crate::plan::{Arrivals, LoadPlan, Pacing, Stop};
use crate::reporting::figures::Latency;
use crate::reporting::hdr::{self, DecodeError};
use crate::reporting::record::Tally;
use crate::reporting::report::{Merged, Report};
use crate::reporting::series::{Line, Second};
use crate::reporting::stages::StageFigures;
use simulator_api::Load;

/// `sim-clients merge`'s flags.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The shards' reports, as each wrote them with --json.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Also write the merged report as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Also write the merged per-second series (JSON lines) to FILE.
    #[arg(long, value_name = "FILE")]
    pub series: Option<PathBuf>,
}

/// Why reports cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("nothing to merge: name the shards' reports")]
    Nothing,
    #[error("{0}: {1} histogram: {2}")]
    Histogram(PathBuf, &'static str, DecodeError),
    #[error(
        "{0}: no {1} histogram under `histograms`: not a report sim-clients wrote with --json"
    )]
    MissingHistogram(PathBuf, &'static str),
    #[error("{0} is a merged report already; merge the shards' own reports")]
    AlreadyMerged(PathBuf),
    #[error("{a} and {b} are not shards of one run: {field} is {a_value} in one and {b_value} in the other")]
    DifferentRun {
        field: String,
        a: PathBuf,
        a_value: String,
        b: PathBuf,
        b_value: String,
    },
    #[error("{a} and {b} started {apart:?} apart, longer than the run: not shards of one run (name runs with --run-id or --start-at)")]
    NotTogether {
        a: PathBuf,
        b: PathBuf,
        apart: Duration,
    },
    #[error("{a} and {b} are both shard {index}: each shard's report must be given once")]
    DuplicateShard { index: u32, a: PathBuf, b: PathBuf },
    #[error("{0}: started_at `{1}` is not an RFC 3339 time")]
    StartedAt(PathBuf, String),
}

/// What must be equal in every shard's report of one run.
/// `start_at` is not among them: `+10s` is each process's own; an absolute time
/// names the run through `run_id`.
const SAME_RUN: [&str; 17] = [
    "target",
    "timeout_ns",
    "retry",
    "mode",
    "clients",
    "think_time_ns",
    "ramp_up_ns",
    "rate_per_s",
    "arrivals",
    "payload",
    "late_after_ns",
    "max_drain_ns",
    "planned_duration_ns",
    "requests_per_client",
    "run_id",
    "shard_count",
    "plan",
];

fn identity(report: &Report) -> serde_json::Value {
    let mut value = serde_json::to_value(report).unwrap_or_default();
    value["shard_count"] = report.shard.map_or(1, |s| s.count).into();
    value
}

/// Reads `files` (each a report written with `--json`), in the order given.
pub fn read(files: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, Report)>> {
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let report: Report = serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is not a sim-clients report written with --json",
                    path.display()
                )
            })?;
            Ok((path.clone(), report))
        })
        .collect()
}

/// The reports added into one, with warnings worth printing (missing shards).
pub fn merge(reports: &[(PathBuf, Report)]) -> Result<(Report, Vec<String>), MergeError> {
    let Some((_, first)) = reports.first() else {
        return Err(MergeError::Nothing);
    };
    check_one_run(reports)?;
    let mut tally = Tally::default();
    let mut shards = Vec::new();
    for (path, report) in reports {
        add_report(&mut tally, path, report)?;
        shards.push(report.shard.map_or(0, |s| s.index));
    }
    shards.sort_unstable();
    let of = first.shard.map_or(1, |s| s.count);
    let mut warnings = Vec::new();
    if shards.len() < of as usize {
        let missing: Vec<String> = (0..of)
            .filter(|k| !shards.contains(k))
            .map(|k| k.to_string())
            .collect();
        warnings.push(format!(
            "merged {} of {of} shards; missing shard {}: the totals are of the shards given",
            shards.len(),
            missing.join(", ")
        ));
    }
    let elapsed = reports.iter().map(|(_, r)| r.elapsed_ns).max().unwrap_or(0);
    let plan = plan_of(first);
    let mut merged = Report::new(
        &plan,
        first.seed,
        &tally,
        Duration::from_nanos(elapsed),
        None,
    );
    merged.shard = None;
    merged.merged = Some(Merged { shards, of });
    merged.started_at = earliest_start(reports)?;
    merged.start_at.clone_from(&first.start_at);
    merged.start_late_ns = reports.iter().filter_map(|(_, r)| r.start_late_ns).max();
    merged.window_ns = reports.iter().map(|(_, r)| r.window_ns).max().unwrap_or(0);
    merged.seconds = merge_seconds(reports)?;
    merged.plan.clone_from(&first.plan);
    merged.stages = merge_stages(reports)?;
    Ok((merged, warnings))
}

fn check_one_run(reports: &[(PathBuf, Report)]) -> Result<(), MergeError> {
    let (first_path, first) = &reports[0];
    let first_id = identity(first);
    let mut seen: Vec<(u32, &PathBuf)> = Vec::new();
    for (path, report) in reports {
        if report.merged.is_some() {
            return Err(MergeError::AlreadyMerged(path.clone()));
        }
        let id = identity(report);
        for field in SAME_RUN {
            if id[field] != first_id[field] {
                return Err(MergeError::DifferentRun {
                    field: field.to_owned(),
                    a: first_path.clone(),
                    a_value: first_id[field].to_string(),
                    b: path.clone(),
                    b_value: id[field].to_string(),
                });
            }
        }
        let index = report.shard.map_or(0, |s| s.index);
        if let Some((_, earlier)) = seen.iter().find(|(k, _)| *k == index) {
            return Err(MergeError::DuplicateShard {
                index,
                a: (*earlier).clone(),
                b: path.clone(),
            });
        }
        seen.push((index, path));
        // Without a run id two runs of the same plan look alike; shards of one
        // run at least ran at the same time.
        if first.run_id.is_none() {
            let (a, b) = (started(first_path, first)?, started(path, report)?);
            let apart = a.duration_since(b).unwrap_or_else(|e| e.duration());
            if apart > Duration::from_nanos(first.elapsed_ns.max(report.elapsed_ns)) {
                return Err(MergeError::NotTogether {
                    a: first_path.clone(),
                    b: path.clone(),
                    apart,
                });
            }
        }
    }
    Ok(())
}

fn started(path: &Path, report: &Report) -> Result<SystemTime, MergeError> {
    humantime::parse_rfc3339(&report.started_at)
        .map_err(|_| MergeError::StartedAt(path.to_owned(), report.started_at.clone()))
}

fn earliest_start(reports: &[(PathBuf, Report)]) -> Result<String, MergeError> {
    let mut earliest: Option<SystemTime> = None;
    for (path, report) in reports {
        let t = started(path, report)?;
        earliest = Some(earliest.map_or(t, |e| e.min(t)));
    }
    Ok(earliest
        .map(crate::reporting::report::rfc3339)
        .unwrap_or_default())
}

/// Adds the histogram `text` of `path` into `into`.
fn add_histogram(
    into: &mut Histogram<u64>,
    path: &Path,
    what: &'static str,
    text: &str,
) -> Result<(), MergeError> {
    let h = hdr::decode(text).map_err(|e| MergeError::Histogram(path.to_owned(), what, e))?;
    // decode gave it the run's shape, so adding it cannot fail; were it to, say so.
    into.add(&h).map_err(|_| {
        let shape = DecodeError::Shape {
            high: h.high(),
            digits: h.sigfig(),
        };
        MergeError::Histogram(path.to_owned(), what, shape)
    })
}

/// Adds one shard's figures into `tally`.
fn add_report(tally: &mut Tally, path: &Path, r: &Report) -> Result<(), MergeError> {
    tally.sent += r.requests_sent;
    tally.completed += r.requests_completed;
    tally.completed_after_window += r.completed_after_window;
    tally.unanswered += r.unanswered;
    tally.blocked += r.requests_blocked;
    tally.errors.add(&r.errors_by_kind);
    tally.digests.add(&r.digests);
    tally.late += r.sends_late;
    tally.missed += r.sends_missed;
    tally.retries += r.retries;
    tally.given_up += r.requests_given_up;
    tally.start_spread = tally
        .start_spread
        .max(Duration::from_nanos(r.start_spread_ns));
    let open_loop = r.mode == "open";
    for ((figure, into), (_, text)) in tally.histograms.iter_mut().zip(r.histograms.iter()) {
        match text {
            Some(text) => add_histogram(into, path, figure.key, text)?,
            None if figure.kept_in(open_loop) => {
                return Err(MergeError::MissingHistogram(path.to_owned(), figure.key))
            }
            None => {}
        }
    }
    for bucket in &r.latency_quantize {
        let k = bucket.value.trailing_zeros() as usize;
        if let Some(slot) = tally.pow2.get_mut(k) {
            *slot += bucket.count;
        }
    }
    Ok(())
}

/// The plan a report describes, as far as the report's figures need it.
fn plan_of(r: &Report) -> LoadPlan {
    let pacing = match (r.rate_per_s, r.arrivals) {
        (Some(rate), arrivals) => Pacing::Open {
            rate,
            arrivals: arrivals.unwrap_or(Arrivals::Uniform),
        },
        (None, _) => Pacing::Closed {
            think_time: Duration::from_nanos(r.think_time_ns.unwrap_or(0)),
            ramp_up: Duration::from_nanos(r.ramp_up_ns.unwrap_or(0)),
        },
    };
    let mut load = Load::default();
    load.clients = r.clients;
    load.pacing = pacing;
    load.payload = r.payload;
    load.timeout = Duration::from_nanos(r.timeout_ns);
    load.retry = r.retry;
    load.connections = r.connections;
    load.seed = Some(r.seed);
    LoadPlan {
        target: r.target.clone(),
        load,
        stop: Stop {
            duration: r.planned_duration_ns.map(Duration::from_nanos),
            requests_per_client: r.requests_per_client,
        },
        late_after: Duration::from_nanos(r.late_after_ns),
        max_drain: Duration::from_nanos(r.max_drain_ns),
        run_id: r.run_id.clone(),
        ..LoadPlan::default()
    }
}

/// Stage k of the merge adds stage k of every shard (one plan: `SAME_RUN`
/// holds them to it), histograms and all.
fn merge_stages(reports: &[(PathBuf, Report)]) -> Result<Vec<StageFigures>, MergeError> {
    let Some((_, first)) = reports.first() else {
        return Ok(Vec::new());
    };
    let mut merged = Vec::with_capacity(first.stages.len());
    for (k, template) in first.stages.iter().enumerate() {
        let mut stage = template.emptied();
        let mut latency = crate::reporting::hdr::new_histogram();
        let mut from_send = crate::reporting::hdr::new_histogram();
        for (path, report) in reports {
            let Some(s) = report.stages.get(k) else {
                continue;
            };
            stage.add_counts(s);
            add_histogram(&mut latency, path, "a stage's latency", &s.latency_hdr)?;
            if let Some(text) = &s.latency_from_send_hdr {
                add_histogram(&mut from_send, path, "a stage's latency from send", text)?;
            }
        }
        stage.latency = Latency::of(&latency);
        stage.latency_hdr = hdr::encode(&latency);
        if stage.latency_from_send.is_some() {
            stage.latency_from_send = Some(Latency::of(&from_send));
            stage.latency_from_send_hdr = Some(hdr::encode(&from_send));
        }
        stage.set_rates();
        merged.push(stage);
    }
    Ok(merged)
}

/// Second k of the merge adds second k of every shard (they share a start with
/// `--start-at`; without it the seconds are each shard's own).
fn merge_seconds(reports: &[(PathBuf, Report)]) -> Result<Vec<Second>, MergeError> {
    let longest = reports
        .iter()
        .map(|(_, r)| r.seconds.len())
        .max()
        .unwrap_or(0);
    let mut merged = Vec::with_capacity(longest);
    for k in 0..longest {
        let mut interval = crate::reporting::record::Interval::default();
        let mut t_s: f64 = 0.0;
        for (path, report) in reports {
            let Some(second) = report.seconds.get(k) else {
                continue;
            };
            let line = &second.line;
            t_s = t_s.max(line.t_s);
            interval.sent += line.sent;
            interval.completed += line.completed;
            interval.retries += line.retries;
            interval.given_up += line.given_up;
            interval.blocked += line.blocked;
            // A line keeps the errors' total only, which is all it shows again.
            interval.errors.io += line.errors;
            interval.late += line.late;
            add_histogram(
                &mut interval.latency,
                path,
                "a second's latency",
                &second.latency_hdr,
            )?;
            if !second.connect_hdr.is_empty() {
                add_histogram(
                    &mut interval.connect,
                    path,
                    "a second's handshakes",
                    &second.connect_hdr,
                )?;
            }
        }
        merged.push(Second {
            line: Line::new(t_s, &interval),
            latency_hdr: hdr::encode(&interval.latency),
            connect_hdr: if interval.connect.is_empty() {
                String::new()
            } else {
                hdr::encode(&interval.connect)
            },
        });
    }
    Ok(merged)
}

/// `sim-clients merge`: prints the merged report, writes the JSON and series asked for.
pub fn run(args: &MergeArgs) -> anyhow::Result<()> {
    let json = args
        .json
        .as_deref()
        .map(crate::reporting::reserve)
        .transpose()?;
    let reports = read(&args.files)?;
    let (merged, warnings) = merge(&reports)?;
    for warning in warnings {
        eprintln!("sim-clients merge: warning: {warning}");
    }
    print!("{}", merged.render());
    if let Some(out) = json {
        crate::reporting::write_json(out, &merged)?;
    }
    if let Some(path) = &args.series {
        let mut text = String::new();
        for second in &merged.seconds {
            text.push_str(&serde_json::to_string(&second.line)?);
            text.push('\n');
        }
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::shard::{ShardInfo, ShardSource};
    use crate::plan::PayloadSize;
    use crate::reporting::figures::FIGURES;
    use crate::reporting::lag::Lag;
    use crate::reporting::record::{Recorder, Timing};
    use simulator_api::Reply;

    /// Shard `index` of 2 of an open-loop run (a loop that keeps every figure),
    /// with `n` requests, each retried once, in every histogram.
    fn shard(index: u32, n: u64) -> (PathBuf, Report) {
        let plan = LoadPlan {
            stop: Stop {
                duration: Some(Duration::from_secs(1)),
                requests_per_client: None,
            },
            run_id: Some("every-figure".into()),
            shard: Some(ShardInfo {
                index,
                count: 2,
                source: ShardSource::Flag,
            }),
            ..LoadPlan::default()
        }
        .with_load(|load| {
            load.pacing = Pacing::Open {
                rate: 100.0,
                arrivals: Arrivals::Uniform,
            };
            load.payload = PayloadSize::Fixed { bytes: 64 };
        });
        let recorder = Recorder::new(Duration::from_millis(5), false);
        let ms = Duration::from_millis;
        for k in 1..=n {
            recorder.retry();
            recorder.record(
                &Ok(Reply {
                    id: k,
                    blocked: false,
                    permit_wait_ns: 0,
                    digest: None,
                }),
                Timing {
                    from_due: ms(k + 3),
                    from_send: Some(ms(k)),
                    lag: Some(Lag {
                        connection: ms(2),
                        timer: ms(1),
                    }),
                    after_window: false,
                    connect: Some(ms(k + 1)),
                },
            );
            recorder.request_done(ms(k + 10));
        }
        let report = Report::new(&plan, 7, &recorder.tally(), Duration::from_secs(1), None);
        (PathBuf::from(format!("shard-{index}.json")), report)
    }

    #[test]
    fn the_shards_stages_add_up_stage_by_stage() {
        let plan: simulator_api::load::Stages = "a: step 10/s 1s, b: step 20/s 1s".parse().unwrap();
        let with_stages = |index, latencies: &[u64]| {
            let (path, mut report) = shard(index, 1);
            let mut tally = crate::reporting::record::Interval::default();
            for ms in latencies {
                tally.sent += 1;
                tally.completed += 1;
                tally.answered_in_span += 1;
                tally.latency.record(ms * 1_000_000).unwrap();
            }
            report.plan = Some(plan.to_string());
            report.stages =
                crate::reporting::stages::figures(&plan, &[tally.clone(), tally], false);
            (path, report)
        };
        let (merged, _) = merge(&[with_stages(0, &[1, 2]), with_stages(1, &[3, 100])]).unwrap();
        assert_eq!(merged.plan.as_deref(), Some(plan.to_string().as_str()));
        assert_eq!(merged.stages.len(), 2);
        let b = &merged.stages[1];
        assert_eq!((b.name.as_str(), b.sent, b.completed), ("b", 4, 4));
        assert!(
            (b.achieved_per_s - 4.0).abs() < 1e-9,
            "{}",
            b.achieved_per_s
        );
        // The merged histogram's max is the slowest of either shard's.
        assert!(b.latency.max_ns >= 99_000_000, "{:?}", b.latency);
    }

    fn count(report: &Report, key: &str) -> u64 {
        let value = serde_json::to_value(&report.histograms).unwrap();
        let text = value[key]
            .as_str()
            .unwrap_or_else(|| panic!("the report has no {key} histogram: {value}"));
        hdr::decode(text).unwrap().len()
    }

    #[test]
    fn a_merged_report_holds_every_declared_figure_of_every_shard() {
        let shards = [shard(0, 3), shard(1, 5)];
        let (merged, warnings) = merge(&shards).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        for figure in FIGURES {
            assert_eq!(count(&shards[0].1, figure.key), 3, "{}", figure.key);
            assert_eq!(count(&merged, figure.key), 8, "{}: not merged", figure.key);
        }
        for (figure, summary) in merged.summary.iter() {
            let summary = summary.unwrap_or_else(|| panic!("{}: no percentiles", figure.key));
            assert!(summary.max_ns > 0, "{}: {summary:?}", figure.key);
        }
    }

    #[test]
    fn a_shard_without_a_histogram_it_must_have_is_refused() {
        let mut shards = [shard(0, 3), shard(1, 5)];
        shards[1].1.histograms.schedule_lag_timer = None;
        let err = merge(&shards).unwrap_err().to_string();
        assert!(
            err.contains("shard-1.json: no schedule_lag_timer histogram"),
            "{err}"
        );
    }
}
