//! How a check went: refused (and why), or every condition measured; as the
//! attendee reads it and as the server's live view shows it.

use std::time::Duration;

use super::super::progress;
use super::metrics::Bar;
use simulator_clients::Report;
use simulator_service::scenario::Scenario;

/// One condition, measured.
#[derive(Debug, Clone)]
pub struct Measured {
    pub bar: Bar,
    pub value: f64,
    pub holds: bool,
}

/// How the check went.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// It would not judge the window at all (wrong server, foreign load, a
    /// moved world, ...): why, as the attendee reads it.
    Refused { scenario: String, why: String },
    /// Every condition of the scenario, measured on the window.
    Judged {
        scenario: String,
        measured: Vec<Measured>,
        /// What the check read beside its conditions that the attendee
        /// should see (the server's descriptor limit against the world's).
        notes: Vec<String>,
        /// The check's own load, second by second: what a comparison of two
        /// checks reads (`workshop figures` compares a fix's before and after).
        load: Box<Report>,
    },
}

impl Verdict {
    /// A check that stopped on an error: not checked, and why.
    pub fn error(scenario: &Scenario, e: &anyhow::Error) -> Verdict {
        Verdict::Refused {
            scenario: scenario.visible_name().to_owned(),
            why: format!("{e:#}"),
        }
    }

    pub fn scenario(&self) -> &str {
        match self {
            Verdict::Refused { scenario, .. } | Verdict::Judged { scenario, .. } => scenario,
        }
    }

    /// Why it was not judged, if it was not.
    pub fn refused(&self) -> Option<&str> {
        match self {
            Verdict::Refused { why, .. } => Some(why),
            Verdict::Judged { .. } => None,
        }
    }

    /// The conditions measured (none when refused).
    pub fn measured(&self) -> &[Measured] {
        match self {
            Verdict::Refused { .. } => &[],
            Verdict::Judged { measured, .. } => measured,
        }
    }

    /// The check's own load, with its seconds (none when refused).
    pub fn load(&self) -> Option<&Report> {
        match self {
            Verdict::Refused { .. } => None,
            Verdict::Judged { load, .. } => Some(load),
        }
    }

    pub fn passed(&self) -> bool {
        let measured = self.measured();
        !measured.is_empty() && measured.iter().all(|m| m.holds)
    }

    /// The verdict as the server's live view shows it (`progress.rs`).
    pub fn as_progress(&self, window: Duration) -> simulator_api::live::CheckProgress {
        let (text, conditions) = match self {
            Verdict::Refused { why, .. } => (format!("not checked: {why}"), Vec::new()),
            Verdict::Judged { measured, .. } => (
                if self.passed() { "solved" } else { "not yet" }.to_owned(),
                measured
                    .iter()
                    .map(|m| progress::condition(&m.bar, Some(m.value)))
                    .collect(),
            ),
        };
        simulator_api::live::CheckProgress {
            scenario: self.scenario().to_owned(),
            window_s: window.as_secs_f64(),
            elapsed_s: window.as_secs_f64(),
            conditions,
            verdict: Some(text),
            passed: Some(self.passed()),
        }
    }

    /// The lines `workshop check` prints.
    pub fn render(&self) -> String {
        let measured = match self {
            Verdict::Refused { why, .. } => return format!("not checked: {why}\n"),
            Verdict::Judged { measured, .. } => measured,
        };
        let mut out = String::new();
        if let Verdict::Judged { notes, .. } = self {
            for note in notes {
                out.push_str(&format!("  ({note})\n"));
            }
        }
        for m in measured {
            out.push_str(&format!(
                "  {:<38} {:>10.3}   {:<10} {}\n",
                m.bar.metric.label(),
                m.value,
                m.bar.bound_text(),
                if m.holds { "pass" } else { "FAIL" }
            ));
        }
        let failing = measured.iter().filter(|m| !m.holds).count();
        if failing == 0 {
            out.push_str(&format!(
                "solved: every condition of {} holds.\n",
                self.scenario()
            ));
        } else {
            out.push_str(&format!(
                "not yet: {failing} of {} conditions fail.\n",
                measured.len()
            ));
        }
        out
    }
}
