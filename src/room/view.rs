//! The board each viewer may see, made from the room: the facilitator every
//! row, a seat its own (every row once the facilitator reveals them), the
//! projector the totals and an anonymous timeline; per exercise, who solved it
//! and the condition that fails most; a seat stuck on an exercise; the CSV.

use std::collections::HashMap;

use simulator_api::room::{
    Board, Cell, CellState, ConditionCount, ExerciseSummary, SeatCompared, SeatComparison,
    SeatDrill, SeatRow, SeatTrail, Stuck, TimelineEntry, Viewer, TIMELINE_SHOWN,
};

use super::board::{number, CellRecord, Room, Seat};

/// What the board is built from, beside the room.
#[derive(Debug, Clone, Copy)]
pub struct Looking<'a> {
    pub viewer: Viewer,
    /// The seat looking, for [`Viewer::Seat`].
    pub seat: Option<&'a str>,
    pub now_ms: u64,
    pub stuck_after_ms: u64,
}

impl Room {
    /// The board as `looking` may see it.
    pub fn board(&self, exercises: &[String], looking: Looking<'_>) -> Board {
        let sees = |seat: &str| self.sees(looking, seat);
        let seats = self
            .seats
            .iter()
            .filter(|(name, _)| sees(name))
            .map(|(name, seat)| row(name, seat, exercises, looking))
            .collect();
        let timeline = self
            .timeline
            .iter()
            .rev()
            .filter_map(|entry| {
                let seat = entry.seat.as_deref().unwrap_or_default();
                match (looking.viewer, sees(seat)) {
                    (_, true) => Some(entry.clone()),
                    // The projector sees the room move, not who moved it.
                    (Viewer::Projector, false) => Some(TimelineEntry {
                        seat: None,
                        ..entry.clone()
                    }),
                    _ => None,
                }
            })
            .take(TIMELINE_SHOWN)
            .collect();
        Board {
            now_ms: looking.now_ms,
            started_ms: self.started_ms,
            viewer: looking.viewer,
            seat: looking.seat.map(str::to_owned),
            revealed: self.revealed,
            stuck_after_s: looking.stuck_after_ms / 1000,
            seat_count: self.seats.len(),
            exercises: exercises.to_vec(),
            seats,
            per_exercise: self.summaries(exercises),
            ready: self.readiness_count(true),
            not_ready: self.readiness_count(false),
            timeline,
            drill_seed: self.drill_seed.clone(),
        }
    }

    /// Whether `looking` may see seat `seat`'s row: the facilitator every
    /// one, a seat its own, everyone every row once revealed.
    fn sees(&self, looking: Looking<'_>, seat: &str) -> bool {
        match looking.viewer {
            Viewer::Facilitator => true,
            Viewer::Seat => self.revealed || looking.seat == Some(seat),
            Viewer::Projector => self.revealed,
        }
    }

    /// `GET /room/trails`: the drills' trails of the seats `looking` may see,
    /// for the debrief.
    pub fn trails(&self, looking: Looking<'_>) -> Vec<SeatTrail> {
        self.seats
            .iter()
            .filter(|(name, _)| self.sees(looking, name))
            .filter_map(|(name, seat)| {
                let (_, report) = seat.drill.as_ref()?;
                Some(SeatTrail {
                    seat: name.clone(),
                    seed: report.seed.clone(),
                    findings: report.findings.clone(),
                    trail: report.trail.clone(),
                })
            })
            .collect()
    }

    /// `GET /room/comparisons`: the befores and afters `looking` may see, by
    /// the rows' rule. Of each seat its latest; of the seat `only` names,
    /// each exercise's, the latest first. So one answer holds a comparison a
    /// seat (as many as the room has seats) or one seat's (at most
    /// [`COMPARED_KEPT_PER_SEAT`]), never every seat's every one.
    ///
    /// [`COMPARED_KEPT_PER_SEAT`]: super::board::COMPARED_KEPT_PER_SEAT
    pub fn comparisons(&self, looking: Looking<'_>, only: Option<&str>) -> Vec<SeatComparison> {
        self.seats
            .iter()
            .filter(|(name, _)| only.is_none_or(|only| only == name.as_str()))
            .filter(|(name, _)| self.sees(looking, name))
            .flat_map(|(name, seat)| {
                let mut all: Vec<SeatComparison> = seat
                    .compared
                    .values()
                    .map(|(at_ms, report)| SeatComparison {
                        seat: name.clone(),
                        at_ms: *at_ms,
                        report: report.clone(),
                    })
                    .collect();
                all.sort_by_key(|c| std::cmp::Reverse(c.at_ms));
                if only.is_none() {
                    all.truncate(1);
                }
                all
            })
            .collect()
    }

    /// Seats whose last readiness report said `ready`: counts, which every
    /// viewer may see (the projector's "28 of 30 ready").
    fn readiness_count(&self, ready: bool) -> usize {
        self.seats
            .values()
            .filter(|s| s.ready.as_ref().is_some_and(|r| r.readiness.ready == ready))
            .count()
    }

    fn summaries(&self, exercises: &[String]) -> Vec<ExerciseSummary> {
        exercises
            .iter()
            .filter_map(|exercise| {
                let cells: Vec<&CellRecord> = self
                    .seats
                    .values()
                    .filter_map(|s| s.cells.get(exercise))
                    .collect();
                if cells.is_empty() {
                    return None;
                }
                let count = |state| cells.iter().filter(|c| c.state == state).count();
                let of: u32 = cells.iter().map(|c| c.failed_checks).sum();
                // In the order the check lists its conditions (a cell's last
                // report has them); indexed, so the board takes time linear in
                // the conditions the room holds.
                let mut by_label: Vec<(&str, u32)> = Vec::new();
                let mut at: HashMap<&str, usize> = HashMap::new();
                for cell in &cells {
                    for c in &cell.last.conditions {
                        let n = cell.failing.get(&c.label).copied().unwrap_or(0);
                        match at.get(c.label.as_str()) {
                            Some(&i) => by_label[i].1 += n,
                            None => {
                                at.insert(&c.label, by_label.len());
                                by_label.push((&c.label, n));
                            }
                        }
                    }
                }
                let most = by_label.iter().map(|(_, n)| *n).max().unwrap_or(0);
                let fails_most = by_label
                    .iter()
                    .filter(|(_, n)| most > 0 && *n == most)
                    .map(|(label, n)| ConditionCount {
                        label: (*label).to_owned(),
                        failed: *n,
                        of,
                    })
                    .collect();
                Some(ExerciseSummary {
                    exercise: exercise.clone(),
                    attempted: cells.len(),
                    solved: count(CellState::Solved),
                    running: cells.iter().filter(|c| !c.finished).count(),
                    fails_most,
                })
            })
            .collect()
    }

    /// The board as CSV: a line per seat and exercise it has checked.
    pub fn csv(&self, exercises: &[String], now_ms: u64, stuck_after_ms: u64) -> String {
        let looking = Looking {
            viewer: Viewer::Facilitator,
            seat: None,
            now_ms,
            stuck_after_ms,
        };
        let mut out = String::from(
            "seat,exercise,state,attempts,first_started,solved,minutes_to_solve,failed_condition,failed_value,failed_bound,stuck,compared\n",
        );
        for seat in self.board(exercises, looking).seats {
            for cell in &seat.cells {
                let failed = cell.failed.as_ref();
                let stuck = seat
                    .stuck
                    .as_ref()
                    .is_some_and(|s| s.exercise == cell.exercise);
                let compared = self.seats[&seat.seat]
                    .compared
                    .get(&cell.exercise)
                    .map(|(_, report)| csv_text(&report.headline()))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "{},{},{},{},{},{},{},{},{},{},{},{}\n",
                    seat.seat,
                    cell.exercise,
                    serde_json::to_value(cell.state)
                        .unwrap_or_default()
                        .as_str()
                        .unwrap_or(""),
                    cell.attempts,
                    rfc3339(cell.first_started_ms),
                    cell.solved_ms.map(rfc3339).unwrap_or_default(),
                    cell.solved_ms
                        .map(|s| format!("{:.1}", (s - cell.first_started_ms) as f64 / 60e3))
                        .unwrap_or_default(),
                    failed.map(|f| csv_text(&f.label)).unwrap_or_default(),
                    failed.and_then(|f| f.value).map(number).unwrap_or_default(),
                    failed.map(|f| csv_text(&f.bound)).unwrap_or_default(),
                    stuck,
                    compared,
                ));
            }
        }
        out
    }
}

fn row(name: &str, seat: &Seat, exercises: &[String], looking: Looking<'_>) -> SeatRow {
    let cells: Vec<Cell> = exercises
        .iter()
        .filter_map(|e| seat.cells.get(e).map(|c| (e, c)))
        .map(|(exercise, c)| Cell {
            exercise: exercise.clone(),
            state: c.state,
            attempts: c.attempts,
            first_started_ms: c.first_started_ms,
            solved_ms: c.solved_ms,
            last: c.last.clone(),
            failed: c.failed.clone(),
        })
        .collect();
    let stuck = seat.current.as_ref().and_then(|current| {
        let cell = seat.cells.get(current)?;
        let since = cell.first_started_ms + looking.stuck_after_ms;
        (cell.solved_ms.is_none() && looking.now_ms >= since).then(|| Stuck {
            exercise: current.clone(),
            since_ms: cell.first_started_ms,
        })
    });
    SeatRow {
        seat: name.to_owned(),
        joined_ms: seat.joined_ms,
        last_report_ms: seat.last_report_ms,
        current: seat.current.clone(),
        stuck,
        cells,
        ready: seat.ready.clone(),
        drill: seat.drill.as_ref().map(|(at_ms, report)| SeatDrill {
            at_ms: *at_ms,
            seed: report.seed.clone(),
            findings: report.findings.clone(),
            steps: report.trail.len(),
        }),
        compared: seat
            .compared
            .values()
            .max_by_key(|(at_ms, _)| *at_ms)
            .map(|(at_ms, report)| SeatCompared {
                at_ms: *at_ms,
                exercise: report.exercise.clone(),
                headline: report.headline(),
            }),
    }
}

/// A label or bound as one CSV field (RFC 4180: quoted when it holds a comma
/// or a quote). A report's text that a spreadsheet would take for a formula
/// (`=`, `+`, `-`, `@` first) is kept as text with a leading `'`: a bound's
/// `< 50` never starts so, a crafted label might.
fn csv_text(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@']) {
        format!("'{s}")
    } else {
        s.to_owned()
    };
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

fn rfc3339(ms: u64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_seconds(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::csv_text;

    #[test]
    fn a_csv_field_is_quoted_when_it_must_be_and_never_read_as_a_formula() {
        assert_eq!(csv_text("< 50"), "< 50");
        assert_eq!(csv_text("a, b"), "\"a, b\"");
        assert_eq!(csv_text("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_text("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        assert_eq!(csv_text("-1,2"), "\"'-1,2\"");
    }
}
