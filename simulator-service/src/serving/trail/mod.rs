//! The trail (`GET /admin/trail`, `simulator_api::trail`): what the server saw
//! its operator do, with times, for a drill's report. This module owns the
//! trail's memory and who asked; `routes.rs` the layer that notes every look
//! through the operator's routes, and the routes that read the trail and add
//! to it: a diagnosis (`POST /admin/diagnosis`) and a note (`POST
//! /admin/trail`). A change of settings and a check's edges are noted by the
//! routes that make them (`admin.rs`).
//!
//! Bounded by construction: a look repeated back to back (a tool reading
//! `/stats` each second) is one entry with a count, the trail keeps at most
//! [`TRAIL_MAX`] entries and counts the rest, and every text in it is cut to
//! [`TRAIL_TEXT_MAX`] bytes. The first entries are the ones kept: a drill's
//! report reads the time to the first look and the first diagnosis.

use std::sync::Mutex;

use axum::http::{header, HeaderMap};
use simulator_api::trail::{
    DiagnosisAnswer, Trail, TrailEntry, TrailKind, CALLER_HEADER, TRAIL_MAX, TRAIL_TEXT_MAX,
};

use super::live::{now_ms, Live};

pub mod routes;

/// The trail's entries, the diagnosis of record among them.
#[derive(Debug, Default)]
pub struct Trails {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    entries: Vec<TrailEntry>,
    dropped: u64,
    /// The first cause named: the one a report scores.
    of_record: Option<String>,
}

/// One step to note: what kind, by which tool, what, who asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub kind: TrailKind,
    pub tool: &'static str,
    pub what: String,
    pub by: String,
    pub passed: Option<bool>,
}

impl Trails {
    /// Notes `step` at `t` seconds since the server started: a look the same
    /// as the last entry's adds to its count instead.
    pub fn note(&self, live: &Live, step: Step) {
        let t = live.elapsed_s();
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let kept = &mut *guard;
        if let Some(last) = kept.entries.last_mut() {
            let same = last.kind == step.kind
                && last.tool == step.tool
                && last.what == step.what
                && last.by == step.by;
            // Once full, a look dropped in between would make the count lie.
            if same && step.kind == TrailKind::Look && kept.dropped == 0 {
                last.times = last.times.saturating_add(1);
                last.last_t = t;
                return;
            }
        }
        if kept.entries.len() >= TRAIL_MAX {
            kept.dropped += 1;
            return;
        }
        kept.entries.push(TrailEntry {
            t,
            at_ms: now_ms(),
            kind: step.kind,
            tool: step.tool.to_owned(),
            what: cut(&step.what),
            by: cut(&step.by),
            times: 1,
            last_t: t,
            passed: step.passed,
        });
    }

    /// Notes a diagnosis; the first is the one of record.
    pub(super) fn diagnose(&self, live: &Live, cause: String, by: String) -> DiagnosisAnswer {
        let this_one_counts = {
            let mut kept = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            let first = kept.of_record.is_none();
            kept.of_record.get_or_insert_with(|| cause.clone());
            first
        };
        let of_record = self.of_record().unwrap_or_default();
        let what = match this_one_counts {
            true => cause,
            false => format!("{cause} (after {of_record}: not scored)"),
        };
        self.note(
            live,
            Step {
                kind: TrailKind::Diagnosis,
                tool: "",
                what,
                by,
                passed: None,
            },
        );
        DiagnosisAnswer {
            of_record,
            this_one_counts,
        }
    }

    fn of_record(&self) -> Option<String> {
        let kept = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        kept.of_record.clone()
    }

    pub fn snapshot(&self, live: &Live) -> Trail {
        let kept = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        Trail {
            started_ms: live.started_ms(),
            now: live.elapsed_s(),
            entries: kept.entries.clone(),
            dropped: kept.dropped,
        }
    }
}

/// A text cut to [`TRAIL_TEXT_MAX`] bytes on a character's edge.
pub(super) fn cut(text: &str) -> String {
    let mut end = text.len().min(TRAIL_TEXT_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Who asked: this project's command by its header, else the user agent's
/// first word (a browser's, `browser`), else `unknown`. Only printable
/// ASCII is kept, so a hostile header cannot forge a line of the report.
pub fn caller(headers: &HeaderMap) -> String {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let named = match (text(CALLER_HEADER), text(header::USER_AGENT.as_str())) {
        (Some(ours), _) => ours.to_owned(),
        (None, Some(agent)) if agent.starts_with("Mozilla/") => "browser".to_owned(),
        (None, Some(agent)) => agent.split('/').next().unwrap_or_default().to_owned(),
        (None, None) => String::new(),
    };
    let clean: String = named
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(TRAIL_TEXT_MAX)
        .collect();
    match clean.trim() {
        "" => "unknown".to_owned(),
        kept => kept.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(what: &str) -> Step {
        Step {
            kind: TrailKind::Look,
            tool: "stats",
            what: what.into(),
            by: "curl".into(),
            passed: None,
        }
    }

    #[test]
    fn a_look_repeated_back_to_back_is_one_entry_and_the_trail_is_bounded() {
        let (trails, live) = (Trails::default(), Live::default());
        for _ in 0..5 {
            trails.note(&live, look("/stats"));
        }
        trails.note(&live, look("/metrics"));
        trails.note(&live, look("/stats"));
        let trail = trails.snapshot(&live);
        let counts: Vec<u32> = trail.entries.iter().map(|e| e.times).collect();
        assert_eq!(counts, [5, 1, 1]);
        for n in 0..2 * TRAIL_MAX {
            trails.note(&live, look(&format!("/stats {}", n % 2)));
        }
        let trail = trails.snapshot(&live);
        assert_eq!(trail.entries.len(), TRAIL_MAX);
        assert_eq!(trail.dropped, (2 * TRAIL_MAX + 3 - TRAIL_MAX) as u64);
    }

    #[test]
    fn the_first_diagnosis_is_of_record_and_later_ones_are_noted_unscored() {
        let (trails, live) = (Trails::default(), Live::default());
        let first = trails.diagnose(&live, "cpu-quota".into(), "drill".into());
        let second = trails.diagnose(&live, "none".into(), "drill".into());
        assert!(first.this_one_counts && !second.this_one_counts);
        assert_eq!(second.of_record, "cpu-quota");
        let whats: Vec<String> = trails
            .snapshot(&live)
            .entries
            .into_iter()
            .map(|e| e.what)
            .collect();
        assert_eq!(whats, ["cpu-quota", "none (after cpu-quota: not scored)"]);
    }

    #[test]
    fn the_caller_is_our_command_else_the_agents_first_word_and_never_a_forged_line() {
        let headers = |pairs: &[(&str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(
                    axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            h
        };
        assert_eq!(
            caller(&headers(&[("isim-caller", "trace count")])),
            "trace count"
        );
        assert_eq!(caller(&headers(&[("user-agent", "curl/8.5.0")])), "curl");
        assert_eq!(
            caller(&headers(&[("user-agent", "Mozilla/5.0 (X11)")])),
            "browser"
        );
        assert_eq!(caller(&HeaderMap::new()), "unknown");
        assert_eq!(caller(&headers(&[("isim-caller", "\t")])), "unknown");
        assert_eq!(cut(&"é".repeat(TRAIL_TEXT_MAX)).len(), TRAIL_TEXT_MAX);
    }
}
