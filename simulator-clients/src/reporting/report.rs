//! The figures of a run, as `--json` writes them (the schema is
//! `simulator-clients/report.schema.json`); `render.rs` lays them out as text.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::plan::shard::ShardInfo;
use crate::plan::{Arrivals, LoadPlan, Pacing, PayloadSize};
use crate::plan::{Connections, RetryPolicy};
use crate::reporting::figures::{PerFigure, Summaries};
use crate::reporting::hdr;
use crate::reporting::record::{Digests, Errors, Tally};
use crate::reporting::series::Second;
use crate::reporting::stages::StageFigures;
use simulator_api::Counts;

/// One quantize row: latencies in [value, 2 * value) ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub value: u64,
    pub count: u64,
}

/// A report that `merge` made of several shards' reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Merged {
    /// The shards added, by index.
    pub shards: Vec<u32>,
    /// How many shards the run had.
    pub of: u32,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub target: String,
    /// `closed` or `open`.
    pub mode: String,
    /// Closed loop: clients. Open loop: connections.
    pub clients: usize,
    /// Closed loop only.
    pub think_time_ns: Option<u64>,
    pub ramp_up_ns: Option<u64>,
    /// Open loop only: the offered rate, requests per second in total.
    pub rate_per_s: Option<f64>,
    pub arrivals: Option<Arrivals>,
    pub payload: PayloadSize,
    /// Reproduces the run's Poisson arrivals and payload sizes with `--seed`.
    pub seed: u64,
    /// The whole run: the planned window and the drain after it.
    pub elapsed_ns: u64,
    /// The planned duration, as far as the run got (less when stopped early); the
    /// rates count the replies within it.
    pub window_ns: u64,
    /// After the window, how long the run waited for replies still in flight
    /// (queued at a saturated server); at most `max_drain_ns`.
    pub drain_ns: u64,
    pub max_drain_ns: u64,
    pub requests_sent: u64,
    pub requests_completed: u64,
    /// Of `requests_completed`, the replies that came during the drain: in the
    /// latency figures, not in the rates.
    pub completed_after_window: u64,
    /// Requests given up on when the drain reached `max_drain_ns`.
    pub unanswered: u64,
    pub requests_blocked: u64,
    pub requests_nonblocked: u64,
    pub errors: u64,
    pub errors_by_kind: Errors,
    /// The 2xx replies' record digests against the reference (a server with
    /// `normalise = off` sends none: all `absent`). Reports of earlier versions
    /// have none: read as 0.
    #[serde(default)]
    pub digests: Digests,
    /// Requests answered with success within their timeout, a second, over the
    /// window: the goodput (with retries a request counts once, however many
    /// attempts it took).
    pub throughput_per_s: f64,
    pub throughput_per_min: f64,
    /// How long a client waited for an attempt before giving up (`--timeout`).
    pub timeout_ns: u64,
    /// What a client did after a failed attempt (`--retries`, `--backoff`,
    /// `--retry-budget`).
    pub retry: RetryPolicy,
    /// How clients held connections (`--connections`): `keep-alive`, or
    /// `per-request`, whose every attempt's handshake is in `connect`. Reports of
    /// earlier versions have none: read as keep-alive.
    #[serde(default)]
    pub connections: Connections,
    /// Requests' first attempts (`requests_sent` less `retries`).
    pub first_attempts: u64,
    /// Of `requests_sent`, the attempts that retried a failed one.
    pub retries: u64,
    /// Requests that ended without a success: every attempt they were allowed failed.
    pub requests_given_up: u64,
    /// Attempts sent a second over the window, retries included: the load the
    /// server saw, beside the goodput it turned into.
    pub attempts_per_s: f64,
    pub blocked_share: f64,
    /// Each declared figure's percentiles (`figures.rs`): `latency`,
    /// `latency_from_send`, `request_latency`, `schedule_lag`, ...
    #[serde(flatten)]
    pub summary: Summaries,
    /// Power-of-two buckets of `latency`, as DTrace's quantize().
    pub latency_quantize: Vec<Bucket>,
    /// Closed loop: how long after its due time the last client's first send
    /// left; with no ramp-up, how long the start-up burst took to go out.
    pub start_spread_ns: u64,
    pub late_after_ns: u64,
    /// How sends and think times were paced: `--precise-pacing`'s slack (each
    /// wait at most this late), or `None` for tokio's 1 ms timer. Reports of
    /// earlier versions have none: read as tokio's.
    #[serde(default)]
    pub pacing_slack_ns: Option<u64>,
    /// Sends that left more than `late_after_ns` behind schedule.
    pub sends_late: u64,
    /// Open loop: sends due within the window that were still waiting for a free
    /// connection, late, when it closed: not sent, not in the latencies.
    pub sends_missed: u64,
    /// The server's own counters for the window, when `/stats` answered. They
    /// count every client of the server, other shards' too.
    pub server: Option<Counts>,
    /// The plan's duration; `None` when it stops by request count only.
    pub planned_duration_ns: Option<u64>,
    pub requests_per_client: Option<u64>,
    /// This process's share of a split load; `None` when it ran it all.
    pub shard: Option<ShardInfo>,
    /// Set by `merge`: the shards it added.
    pub merged: Option<Merged>,
    /// The run's name, shared by its shards (`--run-id`).
    pub run_id: Option<String>,
    /// When the run's clock started, by this machine's wall clock (RFC 3339).
    pub started_at: String,
    /// `--start-at`, and how late after it the first sends could go.
    pub start_at: Option<String>,
    pub start_late_ns: Option<u64>,
    /// Each declared figure's whole histogram, HDR V2 + DEFLATE in base64
    /// (`hdr.rs`): what `merge` adds exactly. `null` where the run's loop does
    /// not keep the figure.
    pub histograms: PerFigure<Option<String>>,
    /// The run second by second, when it was asked for a report or a series.
    pub seconds: Vec<Second>,
    /// The plan of stages (`--stages`), in its own grammar; absent without one
    /// (and in reports of earlier versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// The plan's figures stage by stage (`stages.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageFigures>,
    /// The bars the run was judged by (`--threshold`), each with its figure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<crate::reporting::judged::Judged>,
    /// The bar that ended the run early (`abort`), and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted_by: Option<String>,
}

/// The report's fields of the pacing: a closed loop's think time and ramp-up
/// (ns), or an open loop's rate and arrivals.
fn pacing_fields(pacing: Pacing) -> (Option<u64>, Option<u64>, Option<f64>, Option<Arrivals>) {
    match pacing {
        Pacing::Closed {
            think_time,
            ramp_up,
        } => (Some(ns(think_time)), Some(ns(ramp_up)), None, None),
        Pacing::Open { rate, arrivals } => (None, None, Some(rate), Some(arrivals)),
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Report {
    pub fn new(
        plan: &LoadPlan,
        seed: u64,
        tally: &Tally,
        elapsed: Duration,
        server: Option<Counts>,
    ) -> Self {
        let (think_time, ramp_up, rate, arrivals) = pacing_fields(plan.load.pacing);
        let open_loop = rate.is_some();
        let window = plan.stop.duration.map_or(elapsed, |d| d.min(elapsed));
        let secs = window.as_secs_f64().max(f64::MIN_POSITIVE);
        let in_window = tally.completed - tally.completed_after_window;
        let started_at = std::time::SystemTime::now()
            .checked_sub(elapsed)
            .unwrap_or(std::time::UNIX_EPOCH);
        Report {
            target: plan.target.clone(),
            mode: plan.load.pacing.mode().to_owned(),
            clients: plan.load.clients,
            think_time_ns: think_time,
            ramp_up_ns: ramp_up,
            rate_per_s: rate,
            arrivals,
            payload: plan.load.payload,
            seed,
            elapsed_ns: ns(elapsed),
            window_ns: ns(window),
            drain_ns: ns(elapsed.saturating_sub(window)),
            max_drain_ns: ns(plan.max_drain),
            requests_sent: tally.sent,
            requests_completed: tally.completed,
            completed_after_window: tally.completed_after_window,
            unanswered: tally.unanswered,
            requests_blocked: tally.blocked,
            requests_nonblocked: tally.completed - tally.blocked,
            errors: tally.errors.total(),
            errors_by_kind: tally.errors,
            digests: tally.digests,
            throughput_per_s: in_window as f64 / secs,
            throughput_per_min: in_window as f64 * 60.0 / secs,
            timeout_ns: ns(plan.load.timeout),
            retry: plan.load.retry,
            connections: plan.load.connections,
            first_attempts: tally.sent - tally.retries,
            retries: tally.retries,
            requests_given_up: tally.given_up,
            attempts_per_s: tally.sent as f64 / secs,
            blocked_share: tally.blocked as f64 / tally.completed.max(1) as f64,
            summary: Summaries::of(&tally.histograms, open_loop),
            latency_quantize: quantize_rows(&tally.pow2),
            start_spread_ns: ns(tally.start_spread),
            late_after_ns: ns(plan.late_after),
            pacing_slack_ns: plan.precise_pacing.map(ns),
            sends_late: tally.late,
            sends_missed: tally.missed,
            server,
            planned_duration_ns: plan.stop.duration.map(ns),
            requests_per_client: plan.stop.requests_per_client,
            shard: plan.shard,
            merged: None,
            run_id: plan.run_id.clone(),
            started_at: rfc3339(started_at),
            start_at: plan.start_at.map(rfc3339),
            start_late_ns: None,
            histograms: tally
                .histograms
                .map(|figure, h| figure.kept_in(open_loop).then(|| hdr::encode(h))),
            seconds: Vec::new(),
            plan: plan.load.stages.as_ref().map(ToString::to_string),
            stages: Vec::new(),
            thresholds: Vec::new(),
            aborted_by: None,
        }
    }
}

impl Report {
    /// The report of `plan` run for no time, nothing sent: what a test
    /// builds the report it needs from, field by field.
    pub fn of_nothing(plan: &LoadPlan) -> Self {
        Report::new(plan, 0, &Tally::default(), Duration::ZERO, None)
    }

    /// Why the run's figures are the driver's own failure rather than the
    /// server's, where its connects ran out of file descriptors: the words the
    /// report prints and the error the command exits with.
    pub fn out_of_descriptors(&self) -> Option<String> {
        let failed = self.errors_by_kind.file_limit;
        (failed > 0).then(|| {
            format!(
                "{failed} of {} attempts could not connect: sim-clients ran out of file \
                 descriptors (EMFILE), so these figures measure its limit, not the server. \
                 Raise the limit (`ulimit -n`, up to `ulimit -Hn`; above it, as root) \
                 or run fewer clients in each process (--shard K/N).",
                self.requests_sent
            )
        })
    }
}

/// The quantize rows of the power-of-two counts, from the first bucket with a
/// count to the last, with one empty row either side, as DTrace prints them.
fn quantize_rows(pow2: &[u64; 64]) -> Vec<Bucket> {
    let first = pow2.iter().position(|&c| c > 0);
    let last = pow2.iter().rposition(|&c| c > 0);
    match (first, last) {
        (Some(a), Some(b)) => (a.saturating_sub(1)..=(b + 1).min(63))
            .map(|k| Bucket {
                value: 1 << k,
                count: pow2[k],
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A wall-clock time as the report writes it: RFC 3339, UTC, to the microsecond.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plan::Stop;
    use crate::reporting::lag::Lag;
    use crate::reporting::outcome::Failure;
    use crate::reporting::record::{Recorder, Timing};
    use simulator_api::Reply;

    /// Checks `value` against one of the schemas in `simulator-clients/schema/`.
    pub(crate) fn schema_errors(schema_file: &str, value: &serde_json::Value) -> Vec<String> {
        let path = format!("{}/schema/{schema_file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let schema: serde_json::Value = serde_json::from_str(&text).expect("schema is JSON");
        let validator = jsonschema::validator_for(&schema).expect("schema is valid");
        validator
            .iter_errors(value)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect()
    }

    fn tally() -> Tally {
        let r = Recorder::new(Duration::from_millis(5), false);
        let ms = Duration::from_millis;
        r.record(
            &Ok(Reply {
                id: 1,
                blocked: true,
                permit_wait_ns: 0,
                digest: None,
            }),
            Timing {
                from_due: ms(40),
                from_send: Some(ms(3)),
                lag: Some(Lag {
                    connection: ms(30),
                    timer: ms(7),
                }),
                after_window: true,
                connect: Some(ms(1_001)),
            },
        );
        r.record(&Err(Failure::Status(503)), Timing::on_time(ms(1), None));
        r.tally()
    }

    fn open_plan() -> LoadPlan {
        LoadPlan {
            stop: Stop {
                duration: Some(Duration::from_secs(1)),
                requests_per_client: None,
            },
            ..LoadPlan::default()
        }
        .with_load(|load| {
            load.pacing = Pacing::Open {
                rate: 250.5,
                arrivals: Arrivals::Poisson,
            };
            load.payload = PayloadSize::Uniform { low: 1, high: 9 };
        })
    }

    #[test]
    fn reports_of_both_modes_match_the_schema() {
        let server = Counts {
            requests_done: 1,
            ..Counts::default()
        };
        let closed = Report::new(
            &LoadPlan::default(),
            9,
            &tally(),
            Duration::from_secs(1),
            None,
        );
        let open = Report::new(
            &open_plan(),
            9,
            &tally(),
            Duration::from_secs(1),
            Some(server),
        );
        let empty = Report::new(
            &LoadPlan::default(),
            0,
            &Tally::default(),
            Duration::ZERO,
            None,
        );
        for report in [closed, open, empty] {
            let value = serde_json::to_value(&report).unwrap();
            assert_eq!(
                schema_errors("report.schema.json", &value),
                Vec::<String>::new()
            );
        }
    }

    #[test]
    fn the_handshakes_row_shows_only_when_connections_were_opened() {
        let with = Report::new(
            &LoadPlan::default(),
            9,
            &tally(),
            Duration::from_secs(1),
            None,
        );
        // One handshake of 1.001 s, at HDR's three significant digits.
        let connect = with.summary.connect;
        assert!(
            (1_000_000_000..1_002_000_000).contains(&connect.p50_ns),
            "{connect:?}"
        );
        let text = with.render();
        assert!(text.contains("connect (TCP handshake)"), "{text}");
        let without = Report::new(
            &LoadPlan::default(),
            9,
            &Tally::default(),
            Duration::from_secs(1),
            None,
        );
        assert!(!without.render().contains("connect (TCP handshake)"));
    }

    #[test]
    fn the_human_report_has_no_bare_nanoseconds_outside_the_quantize() {
        let r = Recorder::new(Duration::from_millis(5), false);
        let ok = Ok(Reply {
            id: 1,
            blocked: false,
            permit_wait_ns: 0,
            digest: None,
        });
        for ns in [6_631_194_623, 6_656_360_447, 850, 12_345, 1_380_000] {
            let d = Duration::from_nanos(ns);
            r.record(&ok, Timing::on_time(d, Some(Lag::timer(d))));
        }
        for plan in [LoadPlan::default(), open_plan()] {
            let text = Report::new(&plan, 9, &r.tally(), Duration::from_secs(12), None).render();
            let (head, quantize) = text
                .split_once("request lifetimes in ns")
                .expect("the quantize says its unit");
            let big: Vec<&str> = head
                .split(|c: char| !c.is_ascii_digit())
                .filter(|n| n.len() >= 5)
                .collect();
            assert!(big.is_empty(), "bare figures {big:?} in\n{head}");
            assert!(
                head.contains("6.66 s") && head.contains("1.38 ms"),
                "{head}"
            );
            assert!(
                quantize.contains("4294967296"),
                "the quantize keeps ns:\n{quantize}"
            );
        }
    }

    #[test]
    fn the_report_says_how_sends_were_paced() {
        let tally = Recorder::new(Duration::from_millis(5), false).tally();
        let report = |precise_pacing| {
            let plan = LoadPlan {
                precise_pacing,
                ..open_plan()
            };
            Report::new(&plan, 9, &tally, Duration::from_secs(1), None)
        };
        let tokio = report(None);
        assert_eq!(tokio.pacing_slack_ns, None);
        assert!(tokio
            .render()
            .contains("paced by tokio's timer (1 ms ticks"));
        let precise = report(Some(Duration::from_micros(50)));
        assert_eq!(precise.pacing_slack_ns, Some(50_000));
        assert!(
            precise
                .render()
                .contains("paced by a precise timer, each wait at most 50us late"),
            "{}",
            precise.render()
        );
        // A report of an earlier version, without the field, reads as tokio's.
        let mut old = serde_json::to_value(&precise).unwrap();
        old.as_object_mut().unwrap().remove("pacing_slack_ns");
        let read: Report = serde_json::from_value(old).unwrap();
        assert_eq!(read.pacing_slack_ns, None);
    }

    #[test]
    fn the_schema_rejects_a_report_that_drifted() {
        let report = Report::new(&open_plan(), 9, &tally(), Duration::from_secs(1), None);
        let mut missing = serde_json::to_value(&report).unwrap();
        missing
            .as_object_mut()
            .unwrap()
            .remove("requests_completed");
        assert!(!schema_errors("report.schema.json", &missing).is_empty());
        let mut extra = serde_json::to_value(&report).unwrap();
        extra["latency"]["p42_ns"] = 1.into();
        assert!(!schema_errors("report.schema.json", &extra).is_empty());
        let mut fractional = serde_json::to_value(&report).unwrap();
        fractional["errors"] = 0.5.into();
        assert!(!schema_errors("report.schema.json", &fractional).is_empty());
    }

    #[test]
    fn connects_the_driver_had_no_descriptor_for_are_named_in_the_report_and_its_json() {
        let clean = Report::new(&open_plan(), 9, &tally(), Duration::from_secs(1), None);
        assert_eq!(clean.out_of_descriptors(), None);
        assert!(clean.render().contains("out of descriptors 0"));
        let r = Recorder::new(Duration::from_millis(5), false);
        let ms = Duration::from_millis;
        for _ in 0..3 {
            r.record(&Err(Failure::FileLimit), Timing::on_time(ms(1), None));
        }
        r.record(&Err(Failure::Connect), Timing::on_time(ms(1), None));
        let report = Report::new(&open_plan(), 9, &r.tally(), Duration::from_secs(1), None);
        assert_eq!(
            (
                report.errors_by_kind.file_limit,
                report.errors_by_kind.connect,
                report.errors
            ),
            (3, 1, 4)
        );
        let why = report
            .out_of_descriptors()
            .expect("three connects had no descriptor");
        assert!(
            why.starts_with("3 of 4 attempts could not connect"),
            "{why}"
        );
        assert!(why.contains("ulimit -n"), "{why}");
        let text = report.render();
        assert!(
            text.contains("out of descriptors 3") && text.contains(&why),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert!(schema_errors("report.schema.json", &json).is_empty());
        // A report of an earlier version, without the count, reads as none.
        let mut old = json;
        old["errors_by_kind"]
            .as_object_mut()
            .unwrap()
            .remove("file_limit");
        let read: Report = serde_json::from_value(old).unwrap();
        assert_eq!(read.errors_by_kind.file_limit, 0);
    }

    #[test]
    fn open_loop_reports_both_latencies() {
        let report = Report::new(&open_plan(), 9, &tally(), Duration::from_secs(1), None);
        let corrected = report.summary.latency.p50_ns;
        let uncorrected = report.summary.latency_from_send.expect("open loop").p50_ns;
        assert!(corrected > 39_000_000 && uncorrected < 4_000_000);
        assert_eq!((report.sends_late, report.errors), (1, 1));
        let closed = Report::new(
            &LoadPlan::default(),
            9,
            &tally(),
            Duration::from_secs(1),
            None,
        );
        assert!(closed.summary.latency_from_send.is_none());
        assert!(closed.histograms.latency_from_send.is_none());
    }
}
