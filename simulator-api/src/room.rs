//! The workshop room (`system-simulator room`, docs/api.md "The room"): what an
//! attendee's `workshop check` sends it (`POST /room/join`, `POST /room/report`)
//! and the board its page reads (`GET /room/events`, `GET /room/board`). The
//! room is opt-in: a check reports only when given `--room` and `--seat`.

use serde::{Deserialize, Serialize};

use crate::live::CheckProgress;
use crate::trail::{DrillFindings, TrailEntry, TRAIL_TEXT_MAX};

/// `POST /room/join`: a seat asks for its token with the room's password.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JoinRequest {
    pub seat: String,
    pub password: String,
}

/// The seat's token: every report of the seat carries it (`Authorization:
/// Bearer`). Given once; a second join of a taken seat is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JoinAnswer {
    pub seat: String,
    pub token: String,
}

/// `POST /room/report`: one check's progress, as the check tells its own
/// server's live view (`PUT /admin/check`), once a second and at its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeatReport {
    pub seat: String,
    /// One number per `workshop check` run: a new one is a new attempt.
    pub attempt: u64,
    pub progress: CheckProgress,
}

/// `PUT /room/reveal`: whether the seats see each other's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reveal {
    pub revealed: bool,
}

/// The longest seat name (`[A-Za-z0-9._-]`, so it reads the same in a URL, a
/// file name and a CSV cell).
pub const SEAT_NAME_MAX: usize = 32;

/// Why `name` cannot name a seat, if it cannot.
pub fn seat_name_error(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > SEAT_NAME_MAX {
        return Some(format!(
            "a seat's name has 1 to {SEAT_NAME_MAX} characters, not {}",
            name.len()
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    (!name.chars().all(allowed))
        .then(|| format!("seat {name:?}: use letters, digits, '.', '_' and '-' only (no spaces)"))
}

/// Who is looking at the board, and so what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Viewer {
    /// With the room's key: every seat, the controls.
    Facilitator,
    /// With a seat's token: its own row (every row once revealed).
    Seat,
    /// Neither (the projector): the totals, and every row once revealed.
    Projector,
}

/// The room as one viewer may see it: sent whole on every change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Board {
    /// The room's clock, in milliseconds since the Unix epoch.
    pub now_ms: u64,
    pub started_ms: u64,
    pub viewer: Viewer,
    /// The seat looking, for [`Viewer::Seat`].
    pub seat: Option<String>,
    pub revealed: bool,
    /// A seat on one exercise this long without solving it is marked stuck.
    pub stuck_after_s: u64,
    /// How many seats have joined (whether or not their rows are shown).
    pub seat_count: usize,
    /// Every exercise, in the workshop's order.
    pub exercises: Vec<String>,
    /// The rows this viewer may see, by seat name.
    pub seats: Vec<SeatRow>,
    /// One per exercise anyone has checked, in the workshop's order.
    pub per_exercise: Vec<ExerciseSummary>,
    /// Seats whose last readiness report said ready / not ready (of
    /// `seat_count`; the rest have sent none).
    #[serde(default)]
    pub ready: usize,
    #[serde(default)]
    pub not_ready: usize,
    /// Newest first: the last [`TIMELINE_SHOWN`] this viewer may see.
    pub timeline: Vec<TimelineEntry>,
    /// The drill's seed the facilitator gave the room (`room --drill-seed`).
    #[serde(default)]
    pub drill_seed: Option<String>,
}

/// How many of the timeline's entries a board carries.
pub const TIMELINE_SHOWN: usize = 100;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeatRow {
    pub seat: String,
    pub joined_ms: u64,
    pub last_report_ms: Option<u64>,
    /// The exercise of its last report.
    pub current: Option<String>,
    pub stuck: Option<Stuck>,
    /// One per exercise the seat has checked, in the workshop's order; an
    /// exercise missing here is not started.
    pub cells: Vec<Cell>,
    /// The laptop's last readiness report (`doctor` with the room's line);
    /// none before it sends one.
    #[serde(default)]
    pub ready: Option<SeatReadiness>,
    /// The seat's last drill report, its trail left out (`GET
    /// /room/trails` has it); none before `drill` reports.
    #[serde(default)]
    pub drill: Option<SeatDrill>,
    /// The seat's last before and after, its figures left out (`GET
    /// /room/comparisons` has them); none before `compare` reports.
    #[serde(default)]
    pub compared: Option<SeatCompared>,
}

/// `POST /room/drill`: a seat's drill as its server's trail tells it (`drill
/// report`, `drill diagnose` and `drill check` with the room's line). A
/// later report replaces an earlier one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrillReport {
    pub seat: String,
    /// The seed the seat's drill started with.
    pub seed: String,
    pub findings: DrillFindings,
    /// The trail's first [`ROOM_TRAIL_MAX`] steps, the drill's own
    /// bookkeeping left out.
    pub trail: Vec<TrailEntry>,
}

/// The most steps of a trail the room keeps for a seat.
pub const ROOM_TRAIL_MAX: usize = 100;

impl DrillReport {
    /// Why the room refuses this report, if it does.
    pub fn bounds_error(&self) -> Option<String> {
        if self.trail.len() > ROOM_TRAIL_MAX {
            return Some(format!(
                "a drill's trail has at most {ROOM_TRAIL_MAX} steps in a room"
            ));
        }
        let long = |t: &String| t.len() > TRAIL_TEXT_MAX;
        if long(&self.seed)
            || self
                .trail
                .iter()
                .any(|e| long(&e.what) || long(&e.by) || long(&e.tool))
        {
            return Some(format!(
                "a drill's texts are at most {TRAIL_TEXT_MAX} bytes"
            ));
        }
        self.findings.bounds_error()
    }
}

/// A seat's drill on the board: when it last reported, and what its trail says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeatDrill {
    pub at_ms: u64,
    pub seed: String,
    pub findings: DrillFindings,
    /// How many steps its trail has (`GET /room/trails` gives them).
    pub steps: usize,
}

/// `GET /room/trails`: the trails of the seats this viewer may see, for the
/// debrief, side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeatTrail {
    pub seat: String,
    pub seed: String,
    pub findings: DrillFindings,
    pub trail: Vec<TrailEntry>,
}

/// `POST /room/compare`: a seat's before and after of one exercise, told
/// apart from their noise as `compare BEFORE AFTER` printed it (with the
/// room's line). The seat's texts, not its numbers: the room shows them and
/// computes nothing. A later comparison replaces the earlier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    pub seat: String,
    /// The exercise the before was recorded in (its visible name).
    pub exercise: String,
    /// What the two runs are (their files' names).
    pub before: String,
    pub after: String,
    pub rows: Vec<ComparedFigure>,
}

/// One figure of a comparison, as `compare` prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedFigure {
    /// `the run` or a stage's name.
    pub span: String,
    pub figure: String,
    pub before: String,
    pub after: String,
    /// The change and its 99 % interval: `-98.8 % [-99.1, -45.3]`.
    pub change: String,
    /// `better`, `worse` or `~`.
    pub verdict: String,
}

/// The most figures of a comparison the room keeps: the run's five and a
/// few stages' (a comparison of a long plan shows its first stages).
pub const ROOM_COMPARED_MAX: usize = 20;
/// The longest text of a comparison's figure.
pub const COMPARED_TEXT_MAX: usize = 64;

impl CompareReport {
    /// Why the room refuses this comparison, if it does.
    pub fn bounds_error(&self) -> Option<String> {
        if self.rows.is_empty() || self.rows.len() > ROOM_COMPARED_MAX {
            return Some(format!(
                "a comparison has 1 to {ROOM_COMPARED_MAX} figures in a room, not {}",
                self.rows.len()
            ));
        }
        if [&self.before, &self.after, &self.exercise]
            .iter()
            .any(|t| t.len() > TRAIL_TEXT_MAX)
        {
            return Some(format!(
                "a comparison's names are at most {TRAIL_TEXT_MAX} bytes"
            ));
        }
        let texts = |r: &ComparedFigure| {
            [&r.span, &r.figure, &r.before, &r.after, &r.change]
                .into_iter()
                .any(|t| t.len() > COMPARED_TEXT_MAX)
        };
        if self.rows.iter().any(texts) {
            return Some(format!(
                "a comparison's texts are at most {COMPARED_TEXT_MAX} bytes"
            ));
        }
        if let Some(r) = self
            .rows
            .iter()
            .find(|r| !["better", "worse", "~"].contains(&r.verdict.as_str()))
        {
            return Some(format!(
                "a comparison's verdict is better, worse or ~, not {:?}",
                r.verdict
                    .chars()
                    .take(COMPARED_TEXT_MAX)
                    .collect::<String>()
            ));
        }
        None
    }

    /// The figures of the whole run that changed, in words: `better: latency
    /// p99, blocked share; worse: throughput /s`; `~ on every figure`.
    pub fn headline(&self) -> String {
        let of = |verdict: &str| -> Vec<&str> {
            self.rows
                .iter()
                .filter(|r| r.span == self.rows[0].span && r.verdict == verdict)
                .map(|r| r.figure.as_str())
                .collect()
        };
        let parts: Vec<String> = ["better", "worse"]
            .into_iter()
            .filter_map(|v| {
                let figures = of(v);
                (!figures.is_empty()).then(|| format!("{v}: {}", figures.join(", ")))
            })
            .collect();
        match parts.is_empty() {
            true => "~ on every figure".to_owned(),
            false => parts.join("; "),
        }
    }
}

/// A seat's last comparison on the board: its exercise and headline
/// (`GET /room/comparisons` has the figures).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeatCompared {
    pub at_ms: u64,
    pub exercise: String,
    pub headline: String,
}

/// `GET /room/comparisons`: the last comparison of each seat this viewer may
/// see, for a seat's before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeatComparison {
    pub seat: String,
    pub at_ms: u64,
    pub report: CompareReport,
}

/// On `exercise` since `since_ms` without solving it, past the room's limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stuck {
    pub exercise: String,
    pub since_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellState {
    /// A check is running: its conditions so far are in `last`.
    Running,
    /// The last check's verdict was `not yet`.
    Failed,
    /// The last check could not judge (`not checked: why`, in `last.verdict`).
    Refused,
    /// A check passed (and stays solved whatever later checks say).
    Solved,
}

/// One seat's exercise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub exercise: String,
    pub state: CellState,
    /// Checks begun (until solved, the one that solved it included).
    pub attempts: u32,
    pub first_started_ms: u64,
    pub solved_ms: Option<u64>,
    /// The last report of the last check.
    pub last: CheckProgress,
    /// For [`CellState::Failed`]: the condition that failed by most.
    pub failed: Option<FailedCondition>,
}

/// A condition that failed, and by how much.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedCondition {
    pub label: String,
    /// None for a condition judged false with no value (a check may report
    /// one measured only at the end as failed before it has a figure).
    pub value: Option<f64>,
    /// `< 50`, `> 100`.
    pub bound: String,
    /// How many times the bound the value is (a `<` bound) or short of it (a
    /// `>` bound): 22 for a p99 of 1,106 ms against `< 50`. At least 1.
    pub factor: Option<f64>,
}

/// One exercise across the room: the facilitator's cue for a hint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExerciseSummary {
    pub exercise: String,
    /// Seats that have checked it / solved it / are checking it now.
    pub attempted: usize,
    pub solved: usize,
    pub running: usize,
    /// The condition that failed in most failed checks (all of them when
    /// several failed as often), in the check's order; empty when none failed.
    pub fails_most: Vec<ConditionCount>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionCount {
    pub label: String,
    /// Failed checks in which it failed, of all failed checks of the exercise.
    pub failed: u32,
    pub of: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Happening {
    Joined,
    Started,
    Solved,
    Failed,
    Refused,
    /// The facilitator freed the seat: its next join gets a new token.
    Freed,
    /// A readiness report: `ready`, or the first problem.
    Ready,
    NotReady,
    /// A drill report: its diagnosis and whether its fix passed.
    Drill,
    /// A before and after compared: what changed.
    Compared,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineEntry {
    pub at_ms: u64,
    /// Absent on the projector's board before the reveal.
    pub seat: Option<String>,
    pub exercise: Option<String>,
    pub what: Happening,
    /// The attempt's number, the failed condition, the refusal's reason.
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seat_names_read_the_same_in_a_url_a_file_and_a_csv() {
        for good in ["alice", "seat-07", "a.b_c", &"x".repeat(SEAT_NAME_MAX)] {
            assert_eq!(seat_name_error(good), None, "{good}");
        }
        for bad in [
            "",
            "bob smith",
            "a/b",
            "é",
            "a,b",
            &"x".repeat(SEAT_NAME_MAX + 1),
        ] {
            assert!(seat_name_error(bad).is_some(), "{bad:?}");
        }
    }
}

/// `POST /room/ready`: what a laptop can do, as the attendee who will use it,
/// from `system-simulator doctor` with the room's line (`ISIM_ROOM`,
/// `ISIM_SEAT`). Sent before exercise 1; the board's readiness column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadyReport {
    pub seat: String,
    pub readiness: Readiness,
}

/// One laptop's readiness. Every string is at most [`READY_TEXT_MAX`] bytes and
/// every list at most [`READY_LIST_MAX`] long: the room refuses more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Readiness {
    /// Nothing in `problems`: the server started and a short count agreed.
    pub ready: bool,
    /// `system-simulator 0.1.0`.
    pub version: String,
    /// `linux`, `macos`, as Rust names them.
    pub os: String,
    pub arch: String,
    /// `uname -r`.
    pub kernel: String,
    /// 1 or 2 on Linux; none where there is no cgroup file system.
    pub cgroup: Option<u8>,
    /// The CPUs this process may use.
    pub cores: u32,
    /// The hard descriptor limit (the clients and the server raise to it).
    pub file_limit: Option<u64>,
    pub root: bool,
    /// The ways to trace that work here, as this user: `bpftrace`, `DTrace`,
    /// `perf`, `tap`.
    pub tracers: Vec<String>,
    /// How each exercise's scripts will run here.
    pub exercises: Vec<ExerciseWay>,
    /// The short count: `trace count` over a 2-second load of a server of its
    /// own, against the server's `/stats`.
    pub count: Option<ShortCount>,
    /// Why it is not ready, each the attendee's next step; empty when ready.
    pub problems: Vec<String>,
}

/// How one exercise's scripts run on a laptop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExerciseWay {
    pub exercise: String,
    /// `bpftrace`, `DTrace`, `tap` (the twins, no root), or `none`.
    pub way: String,
    /// Why this machine cannot show the exercise as its page tells it.
    pub cannot_show: Option<String>,
}

/// A short count's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShortCount {
    /// count's `requests started` and `requests done`.
    pub started: u64,
    pub done: u64,
    /// The server's own `/stats` count of requests started.
    pub server_started: u64,
    /// All three equal and above zero.
    pub agreed: bool,
}

/// The longest string a readiness report may carry.
pub const READY_TEXT_MAX: usize = 300;
/// The longest list a readiness report may carry.
pub const READY_LIST_MAX: usize = 32;

impl Readiness {
    /// Why the room refuses this report, if it does.
    pub fn bounds_error(&self) -> Option<String> {
        let texts = [&self.version, &self.os, &self.arch, &self.kernel]
            .into_iter()
            .chain(&self.tracers)
            .chain(&self.problems)
            .chain(self.exercises.iter().flat_map(|e| {
                [&e.exercise, &e.way]
                    .into_iter()
                    .chain(e.cannot_show.as_ref())
            }));
        let lists = [
            self.tracers.len(),
            self.exercises.len(),
            self.problems.len(),
        ];
        if lists.iter().any(|&n| n > READY_LIST_MAX) {
            return Some(format!(
                "a readiness report's lists hold at most {READY_LIST_MAX} entries"
            ));
        }
        for text in texts {
            if text.len() > READY_TEXT_MAX {
                return Some(format!(
                    "a readiness report's strings are at most {READY_TEXT_MAX} bytes"
                ));
            }
        }
        None
    }
}

/// A seat's readiness on the board: the last report and when it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeatReadiness {
    pub at_ms: u64,
    pub readiness: Readiness,
}
