//! What a workshop server keeps to itself: the cause and the fixes of its scenarios.
//!
//! `/stats` carries the model's verdict (which part limits the capacity, and the
//! scenario's first fix as a config body) and `/scenarios` every scenario's cause,
//! symptom and fixes: the answers to an exercise. `workshop start` serves with
//! `--answers hidden`, so those routes show the live figures, the configuration
//! and the model's capacity but not the cause or the fix, until the attendee asks
//! with `?answers=show` (docs/api.md) or reads the page's hints. `serve` and the
//! demo show everything, as before.

use axum::extract::rejection::QueryRejection;
use axum::extract::Query;
use serde::Deserialize;
use simulator_api::{ScenarioInfo, Stats};

use super::error::ApiError;
use crate::scenario::Scenario;

/// Whether the server tells the cause and the fix of its scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Answers {
    /// `/stats` and `/scenarios` name the cause and the fixes (`serve`, the demo).
    #[default]
    Shown,
    /// They keep them back until asked with `?answers=show` (`workshop start`).
    Hidden,
}

/// What stands where a hidden answer would be.
pub const HIDDEN: &str =
    "hidden during the exercise: ask with ?answers=show, or see the page's hints";

/// The query of a route that can hide answers: `?answers=show` reveals them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswersQuery {
    answers: Option<Reveal>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Reveal {
    Show,
}

impl Answers {
    /// Whether this request may see the answers: always when shown, and when
    /// hidden only if it asks. A malformed query is the client's error, named.
    pub fn for_request(
        self,
        ask: Result<Query<AnswersQuery>, QueryRejection>,
    ) -> Result<bool, ApiError> {
        let Query(ask) = ask.map_err(|e| {
            ApiError::BadRequest(format!(
                "{}; the only query here is ?answers=show",
                e.body_text()
            ))
        })?;
        Ok(self == Answers::Shown || ask.answers.is_some())
    }
}

/// `/stats` without the model's cause and fix, and without the scenario's fixes,
/// and the scenario named as its exercise (`scenario` is in force). The
/// capacity, the saturation point and every live figure stay.
pub fn hide_in_stats(mut stats: Stats, scenario: &Scenario) -> Stats {
    scenario.visible_name().clone_into(&mut stats.scenario);
    stats.model.limited_by = HIDDEN.to_owned();
    stats.model.fix = None;
    stats.fixes.clear();
    stats
}

/// A `/scenarios` entry that tells what the ticket tells: the exercise's name,
/// the headline and the ticket, the load, no cause and no fixes.
pub fn hide_in_scenario(scenario: &Scenario) -> ScenarioInfo {
    ScenarioInfo {
        name: scenario.visible_name().to_owned(),
        summary: scenario.headline.clone(),
        symptom: scenario.ticket.trim().to_owned(),
        fixes: Vec::new(),
        ..scenario.info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_scenario_keeps_its_cause_and_fixes_back() {
        for s in crate::scenario::bundled().unwrap() {
            let shown = s.info();
            let hidden = hide_in_scenario(&s);
            assert!(hidden.fixes.is_empty());
            assert_eq!(hidden.load, shown.load);
            assert_eq!(hidden.name, s.exercise);
            let told = format!("{} {} {}", hidden.name, hidden.summary, hidden.symptom);
            for fix in &shown.fixes {
                assert!(!told.contains(&fix.name), "{}: names {}", s.name, fix.name);
            }
            assert!(!told.contains(&s.name), "{}: names its cause", s.name);
        }
    }
}
