//! The room's state and its rules: who may join and report, what a report does
//! to a seat's exercise (a new attempt, a condition so far, a verdict), and the
//! board each viewer may see. No clock and no I/O here: every call takes the
//! time, so the rules are tested with the times written out. `view.rs` makes
//! the boards, `server.rs` serves them and `state_file.rs` keeps the room.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};
use simulator_api::live::CheckProgress;
use simulator_api::room::{
    seat_name_error, CellState, CompareReport, DrillReport, FailedCondition, Happening,
    ReadyReport, SeatReadiness, SeatReport, TimelineEntry,
};

/// The most seats a room takes: a room of hundreds is several rooms.
pub const MAX_SEATS: usize = 500;
/// The timeline the room keeps (the oldest entries go first).
pub const TIMELINE_KEPT: usize = 5_000;
/// The distinct conditions one seat's checks of one exercise may have failed
/// by: a check has a handful, always the same; a report past it is refused, so
/// a seat cannot make the room hold labels without bound.
pub const FAILING_LABELS_KEPT: usize = 64;
/// The seats one network address may hold at once: a laptop joins one, a
/// facilitator trying the room a few. Past it a prankster with the password
/// cannot fill the room from one laptop. The room's own machine (loopback) has
/// no such limit.
pub const SEATS_PER_ADDRESS: usize = 8;
/// The exercises' comparisons one seat keeps: one an exercise, as many as
/// the workshop has; past it, the oldest goes. A comparison is at most about
/// 8 KB, so a seat holds at most about 128 KB.
pub const COMPARED_KEPT_PER_SEAT: usize = 16;

/// Why a join or a report was refused: each is the attendee's next step.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refusal {
    #[error("{0}")]
    BadSeatName(String),
    #[error("wrong room password (the line the facilitator gave has it after /join/)")]
    BadPassword,
    #[error("seat {0} is taken in this room, by another laptop or by this one before its token was lost: pick another seat name, or ask the facilitator to free it")]
    Taken(String),
    #[error("the room is full ({MAX_SEATS} seats)")]
    Full,
    #[error("{0} already holds {SEATS_PER_ADDRESS} seats, the most one address may: a laptop needs one (the facilitator frees seats)")]
    TooManyFrom(std::net::IpAddr),
    #[error("no seat {0} in this room: it joins with its first check (the room may have been restarted without its state file)")]
    NoSuchSeat(String),
    #[error("wrong token for seat {0}")]
    BadToken(String),
    #[error("this token is seat {token_of}'s, not {seat}'s: a seat reports only for itself")]
    OtherSeat { seat: String, token_of: String },
    #[error("{0:?} is not an exercise of this room (`system-simulator workshop list`)")]
    UnknownExercise(String),
    #[error("{0}")]
    BadReport(String),
}

/// Everything the room knows; what its state file holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Room {
    /// The facilitator's: the whole board, reveal, free, CSV.
    pub key: String,
    /// The attendees': a seat joins with it.
    pub password: String,
    pub started_ms: u64,
    pub revealed: bool,
    pub(super) seats: BTreeMap<String, Seat>,
    pub(super) timeline: VecDeque<TimelineEntry>,
    /// The drill's seed the facilitator gave the room, shown on the board.
    #[serde(default)]
    pub drill_seed: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Seat {
    /// None once the facilitator freed it.
    pub(super) token: Option<String>,
    pub(super) joined_ms: u64,
    pub(super) last_report_ms: Option<u64>,
    pub(super) current: Option<String>,
    pub(super) cells: BTreeMap<String, CellRecord>,
    /// The laptop's last readiness report (a state file from before
    /// readiness has none).
    #[serde(default)]
    pub(super) ready: Option<SeatReadiness>,
    /// The address it joined from; none from the room's own machine.
    #[serde(default)]
    pub(super) joined_from: Option<std::net::IpAddr>,
    /// The seat's last drill report and when it came.
    #[serde(default)]
    pub(super) drill: Option<(u64, DrillReport)>,
    /// The seat's last comparison of a before and an after of each
    /// exercise, and when it came (at most [`COMPARED_KEPT_PER_SEAT`]).
    #[serde(default, deserialize_with = "compared_of_either_kind")]
    pub(super) compared: BTreeMap<String, (u64, CompareReport)>,
}

/// A seat's exercise, with what the board's summaries are made of.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct CellRecord {
    pub(super) state: CellState,
    pub(super) attempts: u32,
    pub(super) first_started_ms: u64,
    pub(super) solved_ms: Option<u64>,
    pub(super) last: CheckProgress,
    pub(super) failed: Option<FailedCondition>,
    /// The attempt of the last report, and whether its verdict came.
    pub(super) attempt: u64,
    pub(super) finished: bool,
    /// Failed verdicts, and how often each condition failed in them.
    pub(super) failed_checks: u32,
    pub(super) failing: BTreeMap<String, u32>,
}

impl Room {
    pub fn new(key: String, password: String, now_ms: u64) -> Room {
        Room {
            key,
            password,
            started_ms: now_ms,
            revealed: false,
            seats: BTreeMap::new(),
            timeline: VecDeque::new(),
            drill_seed: None,
        }
    }

    /// Whether `key` is the facilitator's.
    pub fn is_key(&self, key: &str) -> bool {
        same(key, &self.key)
    }

    pub fn seat_count(&self) -> usize {
        self.seats.len()
    }

    /// A join from the room's own machine.
    #[cfg(test)]
    pub fn join(
        &mut self,
        seat: &str,
        password: &str,
        new_token: impl FnOnce() -> String,
        now_ms: u64,
    ) -> Result<String, Refusal> {
        self.join_from(seat, password, None, new_token, now_ms)
    }

    /// `POST /room/join` from `from` (none: loopback): a new seat's token
    /// (`new_token` makes it), or why not.
    pub fn join_from(
        &mut self,
        seat: &str,
        password: &str,
        from: Option<std::net::IpAddr>,
        new_token: impl FnOnce() -> String,
        now_ms: u64,
    ) -> Result<String, Refusal> {
        if let Some(why) = seat_name_error(seat) {
            return Err(Refusal::BadSeatName(why));
        }
        if !same(password, &self.password) {
            return Err(Refusal::BadPassword);
        }
        match self.seats.get(seat) {
            Some(Seat { token: Some(_), .. }) => return Err(Refusal::Taken(seat.into())),
            None if self.seats.len() >= MAX_SEATS => return Err(Refusal::Full),
            _ => {}
        }
        if let Some(from) = from {
            let held = self
                .seats
                .values()
                .filter(|s| s.token.is_some() && s.joined_from == Some(from))
                .count();
            if held >= SEATS_PER_ADDRESS {
                return Err(Refusal::TooManyFrom(from));
            }
        }
        let token = new_token();
        let entry = self.seats.entry(seat.to_owned()).or_insert_with(|| Seat {
            token: None,
            joined_ms: now_ms,
            last_report_ms: None,
            current: None,
            cells: BTreeMap::new(),
            ready: None,
            joined_from: None,
            drill: None,
            compared: BTreeMap::new(),
        });
        entry.token = Some(token.clone());
        entry.joined_from = from;
        self.happened(now_ms, seat, None, Happening::Joined, String::new());
        Ok(token)
    }

    /// The seat whose token `token` is, if any.
    pub fn seat_of(&self, token: &str) -> Option<&str> {
        self.seats
            .iter()
            .find(|(_, s)| s.token.as_deref().is_some_and(|t| same(t, token)))
            .map(|(name, _)| name.as_str())
    }

    /// `POST /room/report`: the report taken, or why not. `exercises`: the ones
    /// a report may name.
    pub fn report(
        &mut self,
        token: &str,
        report: SeatReport,
        exercises: &[String],
        now_ms: u64,
    ) -> Result<(), Refusal> {
        let name = report.seat.clone();
        self.owned_by(&name, token)?;
        let exercise = report.progress.scenario.clone();
        if !exercises.contains(&exercise) {
            return Err(Refusal::UnknownExercise(exercise));
        }
        check_report(&report.progress)?;
        let seat = self.seats.get_mut(&name).expect("looked up above");
        if let Some(cell) = seat.cells.get(&exercise) {
            check_labels(cell, &report.progress)?;
        }
        seat.last_report_ms = Some(now_ms);
        seat.current = Some(exercise.clone());
        for (what, detail) in record(seat, &report, now_ms) {
            self.happened(now_ms, &name, Some(&exercise), what, detail);
        }
        Ok(())
    }

    /// `POST /room/ready`: the laptop's readiness taken, or why not. A later
    /// report replaces an earlier one (the attendee fixed what was wrong).
    pub fn ready(&mut self, token: &str, report: ReadyReport, now_ms: u64) -> Result<(), Refusal> {
        let name = report.seat.clone();
        self.owned_by(&name, token)?;
        if let Some(why) = report.readiness.bounds_error() {
            return Err(Refusal::BadReport(why));
        }
        let (what, detail) = match report.readiness.problems.first() {
            None if report.readiness.ready => (Happening::Ready, String::new()),
            None => (Happening::NotReady, "not ready, no reason given".to_owned()),
            Some(first) => (Happening::NotReady, first.clone()),
        };
        let seat = self.seats.get_mut(&name).expect("owned_by found it");
        seat.ready = Some(SeatReadiness {
            at_ms: now_ms,
            readiness: report.readiness,
        });
        self.happened(now_ms, &name, None, what, detail);
        Ok(())
    }

    /// `POST /room/drill`: a seat's drill taken, or why not. A later report
    /// replaces an earlier one; the timeline notes it when its findings moved
    /// (a diagnosis, a fix), not each time it is sent.
    pub fn drill(&mut self, token: &str, report: DrillReport, now_ms: u64) -> Result<(), Refusal> {
        let name = report.seat.clone();
        self.owned_by(&name, token)?;
        if let Some(why) = report.bounds_error() {
            return Err(Refusal::BadReport(why));
        }
        let found = &report.findings;
        let mut detail = match (&found.diagnosis, &found.score) {
            (Some(cause), Some(score)) => format!("named {cause}: {score}"),
            _ => "no diagnosis yet".to_owned(),
        };
        if found.fixed_s.is_some() {
            detail.push_str("; fix passed");
        }
        let seat = self.seats.get_mut(&name).expect("owned_by found it");
        let moved = seat
            .drill
            .as_ref()
            .is_none_or(|(_, was)| was.findings != report.findings || was.seed != report.seed);
        seat.drill = Some((now_ms, report));
        if moved {
            self.happened(now_ms, &name, None, Happening::Drill, detail);
        }
        Ok(())
    }

    /// `POST /room/compare`: a seat's before and after taken, or why not. A
    /// later comparison of the same exercise replaces the earlier, so a seat
    /// holds one an exercise, and at most [`COMPARED_KEPT_PER_SEAT`] (the
    /// oldest goes). Its scenario need not be an exercise's: a drill's, or
    /// the default server's, is a before and after too.
    pub fn compare(
        &mut self,
        token: &str,
        report: CompareReport,
        now_ms: u64,
    ) -> Result<(), Refusal> {
        let name = report.seat.clone();
        self.owned_by(&name, token)?;
        if let Some(why) = report.bounds_error() {
            return Err(Refusal::BadReport(why));
        }
        let (exercise, headline) = (report.exercise.clone(), report.headline());
        let seat = self.seats.get_mut(&name).expect("owned_by found it");
        if !seat.compared.contains_key(&exercise) && seat.compared.len() >= COMPARED_KEPT_PER_SEAT {
            let oldest = seat
                .compared
                .iter()
                .min_by_key(|(_, (at_ms, _))| *at_ms)
                .map(|(name, _)| name.clone());
            seat.compared.remove(&oldest.expect("the seat keeps some"));
        }
        seat.compared.insert(exercise.clone(), (now_ms, report));
        self.happened(
            now_ms,
            &name,
            Some(&exercise),
            Happening::Compared,
            headline,
        );
        Ok(())
    }

    /// Whether `token` is seat `name`'s own, or why not.
    fn owned_by(&self, name: &str, token: &str) -> Result<(), Refusal> {
        let Some(seat) = self.seats.get(name) else {
            return Err(Refusal::NoSuchSeat(name.to_owned()));
        };
        if seat.token.as_deref().is_some_and(|t| same(t, token)) {
            return Ok(());
        }
        Err(match self.seat_of(token) {
            Some(other) => Refusal::OtherSeat {
                seat: name.to_owned(),
                token_of: other.to_owned(),
            },
            None => Refusal::BadToken(name.to_owned()),
        })
    }

    /// The facilitator frees a seat: its token no longer reports, and its next
    /// join (a lost token file, a new laptop) gets a new one; its row stays.
    pub fn free(&mut self, seat: &str, now_ms: u64) -> Result<(), Refusal> {
        let Some(s) = self.seats.get_mut(seat) else {
            return Err(Refusal::NoSuchSeat(seat.into()));
        };
        s.token = None;
        self.happened(now_ms, seat, None, Happening::Freed, String::new());
        Ok(())
    }

    fn happened(
        &mut self,
        at_ms: u64,
        seat: &str,
        exercise: Option<&str>,
        what: Happening,
        detail: String,
    ) {
        if self.timeline.len() == TIMELINE_KEPT {
            self.timeline.pop_front();
        }
        self.timeline.push_back(TimelineEntry {
            at_ms,
            seat: Some(seat.to_owned()),
            exercise: exercise.map(str::to_owned),
            what,
            detail,
        });
    }
}

/// What a report does to its seat's cell; the timeline's entries it makes (a
/// check refused before its load begins starts and ends in one report).
fn record(seat: &mut Seat, report: &SeatReport, now_ms: u64) -> Vec<(Happening, String)> {
    let progress = &report.progress;
    let exercise = progress.scenario.clone();
    let cell = seat.cells.entry(exercise).or_insert_with(|| CellRecord {
        state: CellState::Running,
        attempts: 0,
        first_started_ms: now_ms,
        solved_ms: None,
        last: progress.clone(),
        failed: None,
        attempt: report.attempt,
        finished: false,
        failed_checks: 0,
        failing: BTreeMap::new(),
    });
    let solved = cell.solved_ms.is_some();
    let new_attempt = cell.attempts == 0 || cell.attempt != report.attempt;
    if !new_attempt && cell.finished {
        return Vec::new(); // a verdict sent again, or a late second after it
    }
    let mut happened = Vec::new();
    if new_attempt {
        cell.attempt = report.attempt;
        cell.finished = false;
        if !solved {
            cell.attempts += 1;
        }
        happened.push((Happening::Started, format!("attempt {}", cell.attempts)));
    }
    cell.last = progress.clone();
    if !solved {
        cell.state = CellState::Running;
        cell.failed = None;
    }
    if progress.verdict.is_some() {
        cell.finished = true;
        happened.push(verdict(cell, progress, now_ms, solved));
    }
    happened
}

/// A verdict on the cell: solved, failed (by which condition, how far) or refused.
fn verdict(
    cell: &mut CellRecord,
    progress: &CheckProgress,
    now_ms: u64,
    solved_before: bool,
) -> (Happening, String) {
    let failing: Vec<_> = progress
        .conditions
        .iter()
        .filter(|c| c.holds == Some(false))
        .collect();
    if progress.passed == Some(true) {
        if !solved_before {
            cell.state = CellState::Solved;
            cell.solved_ms = Some(now_ms);
        }
        return (Happening::Solved, format!("attempt {}", cell.attempts));
    }
    if failing.is_empty() {
        if !solved_before {
            cell.state = CellState::Refused;
        }
        let why = progress.verdict.clone().unwrap_or_default();
        return (Happening::Refused, why);
    }
    cell.failed_checks += 1;
    for c in &failing {
        *cell.failing.entry(c.label.clone()).or_default() += 1;
    }
    let worst = failing
        .iter()
        .map(|c| FailedCondition {
            label: c.label.clone(),
            // Kept as it came: a NaN here would be written to the state file
            // as null and refuse the room its own file at the next start.
            value: c.value,
            bound: c.bound.clone(),
            factor: factor(c.value, c.limit, &c.bound),
        })
        .max_by(|a, b| {
            let f = |c: &FailedCondition| c.factor.unwrap_or(0.0);
            f(a).total_cmp(&f(b))
        })
        .expect("one failing at least");
    let value = worst.value.map_or_else(|| "no value".to_owned(), number);
    let detail = match worst.factor {
        Some(f) => format!("{} {value} against {} ({f:.1}x)", worst.label, worst.bound),
        None => format!("{} {value} against {}", worst.label, worst.bound),
    };
    if !solved_before {
        cell.state = CellState::Failed;
        cell.failed = Some(worst);
    }
    (Happening::Failed, detail)
}

/// How many times over a `<` bound, or short of a `>` bound, a value is.
fn factor(value: Option<f64>, limit: Option<f64>, bound: &str) -> Option<f64> {
    let (value, limit) = (value?, limit?);
    let f = if bound.starts_with('<') {
        value / limit
    } else {
        limit / value
    };
    (f.is_finite() && f > 0.0).then_some(f.max(1.0))
}

/// A figure as the timeline writes it: three significant digits or so.
pub fn number(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The sanity of a report's body: bounded sizes, numbers that are numbers.
fn check_report(p: &CheckProgress) -> Result<(), Refusal> {
    let bad = |why: &str| Err(Refusal::BadReport(why.to_owned()));
    if p.conditions.len() > 32 {
        return bad("a check has at most 32 conditions");
    }
    let long = |s: &str| s.len() > 200;
    if p.conditions
        .iter()
        .any(|c| long(&c.label) || long(&c.bound))
    {
        return bad("a condition's label and bound are at most 200 bytes");
    }
    if p.verdict.as_deref().is_some_and(|v| v.len() > 2_000) {
        return bad("a verdict is at most 2,000 bytes");
    }
    if !(p.elapsed_s.is_finite() && p.window_s.is_finite()) {
        return bad("elapsed_s and window_s must be numbers");
    }
    Ok(())
}

/// Whether a verdict would make its cell hold more than
/// [`FAILING_LABELS_KEPT`] failed conditions' labels.
fn check_labels(cell: &CellRecord, p: &CheckProgress) -> Result<(), Refusal> {
    if p.verdict.is_none() {
        return Ok(()); // only a verdict's failed conditions are counted
    }
    let mut new: Vec<&str> = p
        .conditions
        .iter()
        .filter(|c| c.holds == Some(false) && !cell.failing.contains_key(&c.label))
        .map(|c| c.label.as_str())
        .collect();
    new.sort_unstable();
    new.dedup();
    if cell.failing.len() + new.len() > FAILING_LABELS_KEPT {
        return Err(Refusal::BadReport(format!(
            "one exercise's checks fail by at most {FAILING_LABELS_KEPT} distinct conditions in this room; \
             this one would make {}",
            cell.failing.len() + new.len()
        )));
    }
    Ok(())
}

/// A seat's comparisons as a state file keeps them: one an exercise, or the
/// one comparison a state file from before kept (it is kept under its
/// exercise).
fn compared_of_either_kind<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, (u64, CompareReport)>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        ByExercise(BTreeMap<String, (u64, CompareReport)>),
        Latest(Option<(u64, CompareReport)>),
    }
    Ok(match Either::deserialize(d)? {
        Either::ByExercise(all) => all,
        Either::Latest(one) => one
            .map(|(at_ms, report)| (report.exercise.clone(), (at_ms, report)))
            .into_iter()
            .collect(),
    })
}

/// Equal in time that does not depend on where they differ: a token guessed a
/// byte at a time learns nothing from how fast it is refused.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
#[path = "board_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "compared_tests.rs"]
mod compared_tests;
