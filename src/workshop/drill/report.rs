//! The drill's report: the server's trail (`GET /admin/trail`) read as a
//! troubleshooter's path. It gives the time to the first look, to the
//! diagnosis of record and to the first passing check; the changes a check
//! then showed did nothing; and the anti-methods Brendan Gregg names where
//! the trail shows them: a change before any measurement (random change) and
//! every look through one way (the streetlight).
//!
//! A look is a request the attendee made through the server: `curl`, a
//! browser, `trace`, `profile`, `record`, `doctor`. The load (`clients`) and
//! the judge (`workshop check`, `drill check`) read `/stats` too; they are
//! not looks. Root's tracers attach to the process and never reach the
//! server's routes, so the trail cannot see them: a note (`drill note`) is
//! how the attendee adds them, and a note counts as a look.

use std::fmt::Write as _;

use simulator_api::trail::{DrillFindings, Trail, TrailEntry, TrailKind};

use super::diagnosis::{self, Score};
use super::draw::Draw;

/// Callers that load or judge the server: their reads are not looks.
const NOT_LOOKS: &[&str] = &["clients", "workshop check", "drill", "demo"];

/// Whether `entry` is the attendee looking.
pub fn is_look(entry: &TrailEntry) -> bool {
    match entry.kind {
        TrailKind::Note => true,
        TrailKind::Look => !NOT_LOOKS.iter().any(|n| entry.by.starts_with(n)),
        _ => false,
    }
}

/// A change of settings, not a reset of the counters.
fn is_change(entry: &TrailEntry) -> bool {
    entry.kind == TrailKind::Change && entry.what != "counters reset"
}

/// The way a look went: its tool, or for the tap the script (`trace count`
/// and `trace permit-wait` are two ways).
fn way(entry: &TrailEntry) -> String {
    match entry.kind {
        TrailKind::Note => "a note".to_owned(),
        _ if entry.tool == "tap" => entry.what.clone(),
        _ => entry.tool.clone(),
    }
}

/// Reads `trail` as the attendee's path to `drawn`.
pub fn findings(trail: &Trail, drawn: &Draw) -> DrillFindings {
    let entries = &trail.entries;
    let first_look = entries.iter().find(|e| is_look(e));
    let diagnosis = entries.iter().find(|e| e.kind == TrailKind::Diagnosis);
    let fixed = entries
        .iter()
        .find(|e| e.kind == TrailKind::Check && e.passed == Some(true));
    let score = diagnosis.map(|d| match diagnosis::named(&d.what) {
        Ok(named) => diagnosis::score(drawn.cause.as_ref(), named.as_ref()),
        Err(_) => Score::Wrong,
    });
    let mut anti_methods = Vec::new();
    if let Some(change) = entries.iter().find(|e| is_change(e)) {
        if first_look.is_none_or(|look| look.t > change.t) {
            anti_methods.push(format!(
                "random change: `{}` at {} came before any measurement",
                change.what,
                clock(change.t)
            ));
        }
    }
    // The streetlight: every look until the diagnosis (or the end) one way.
    let until = diagnosis.map_or(f64::INFINITY, |d| d.t);
    let mut ways: Vec<String> = Vec::new();
    for look in entries.iter().filter(|e| is_look(e) && e.t <= until) {
        let w = way(look);
        if !ways.contains(&w) {
            ways.push(w);
        }
    }
    match ways.as_slice() {
        [] => anti_methods.push(
            "no measurement: the trail shows no look through the server and no note".to_owned(),
        ),
        [only] => anti_methods.push(format!(
            "the streetlight: every look went through one way, {only}"
        )),
        _ => {}
    }
    DrillFindings {
        first_look_s: first_look.map(|e| e.t),
        diagnosed_s: diagnosis.map(|e| e.t),
        diagnosis: diagnosis.map(|e| e.what.clone()),
        score: score.map(|s| s.to_string()),
        fixed_s: fixed.map(|e| e.t),
        changed_nothing: changed_nothing(entries),
        anti_methods,
    }
}

/// Each change after which the next check (before another change) failed.
fn changed_nothing(entries: &[TrailEntry]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, change) in entries.iter().enumerate().filter(|(_, e)| is_change(e)) {
        let next = entries[i + 1..]
            .iter()
            .find(|e| is_change(e) || (e.kind == TrailKind::Check && e.passed.is_some()));
        if next.is_some_and(|e| e.kind == TrailKind::Check && e.passed == Some(false)) {
            found.push(format!("{} ({})", change.what, clock(change.t)));
        }
    }
    found
}

/// The trail's steps without the drill's bookkeeping: its own commands
/// read `/stats` to know their server.
pub fn steps(trail: &Trail) -> impl Iterator<Item = &TrailEntry> {
    trail
        .entries
        .iter()
        .filter(|e| !(e.kind == TrailKind::Look && e.by.starts_with("drill")))
}

/// `m:ss` since the server started.
pub fn clock(t: f64) -> String {
    let s = t.max(0.0).round() as u64;
    format!("{}:{:02}", s / 60, s % 60)
}

/// The report `drill report` prints: the trail, then the findings.
pub fn render(trail: &Trail, found: &DrillFindings) -> String {
    let mut out = String::from("the trail (time since the server started):\n");
    for e in steps(trail) {
        let kind = match e.kind {
            TrailKind::Look if is_look(e) => "look",
            TrailKind::Look => "load",
            TrailKind::Change => "change",
            TrailKind::Check => "check",
            TrailKind::Diagnosis => "diagnosis",
            TrailKind::Note => "note",
            TrailKind::Stage => "load",
        };
        let times = match e.times {
            1 => String::new(),
            n => format!(" x{n} to {}", clock(e.last_t)),
        };
        let _ = writeln!(
            out,
            "  {:>6}  {kind:<9} {} ({}){times}",
            clock(e.t),
            e.what,
            e.by
        );
    }
    if trail.dropped > 0 {
        let _ = writeln!(
            out,
            "  ... and {} entries past the trail's limit",
            trail.dropped
        );
    }
    let at = |t: Option<f64>| t.map_or("not yet".to_owned(), clock);
    let _ = writeln!(out, "\nfirst look      {}", at(found.first_look_s));
    let named = match (&found.diagnosis, &found.score) {
        (Some(d), Some(s)) => format!(" ({d}: {s})"),
        _ => String::new(),
    };
    let _ = writeln!(out, "diagnosis       {}{named}", at(found.diagnosed_s));
    let _ = writeln!(out, "fix passed      {}", at(found.fixed_s));
    for change in &found.changed_nothing {
        let _ = writeln!(out, "changed nothing {change}: the next check still failed");
    }
    for anti in &found.anti_methods {
        let _ = writeln!(out, "anti-method     {anti}");
    }
    out.push_str(
        "\nroot's tracers (bpftrace, DTrace, perf) attach to the process, not to the server's routes: the trail cannot see them. Add what you ran: `system-simulator drill note \"bpftrace permit-wait.bt\"`.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(t: f64, kind: TrailKind, tool: &str, what: &str, by: &str) -> TrailEntry {
        TrailEntry {
            t,
            at_ms: 0,
            kind,
            tool: tool.into(),
            what: what.into(),
            by: by.into(),
            times: 1,
            last_t: t,
            passed: None,
        }
    }

    fn verdict(t: f64, passed: bool) -> TrailEntry {
        TrailEntry {
            passed: Some(passed),
            ..entry(t, TrailKind::Check, "", "not yet", "drill check")
        }
    }

    fn trail(entries: Vec<TrailEntry>) -> Trail {
        Trail {
            started_ms: 0,
            now: 600.0,
            entries,
            dropped: 0,
        }
    }

    #[test]
    fn a_measured_path_has_its_milestones_and_no_anti_method() {
        let drawn =
            Draw::of(&super::super::draw::seed_for("semaphore-starvation").unwrap()).unwrap();
        let found = findings(
            &trail(vec![
                entry(5.0, TrailKind::Look, "stats", "/stats", "clients"),
                entry(20.0, TrailKind::Look, "tap", "trace count", "trace count"),
                entry(
                    60.0,
                    TrailKind::Look,
                    "tap",
                    "trace permit-wait",
                    "trace permit-wait",
                ),
                entry(
                    90.0,
                    TrailKind::Diagnosis,
                    "",
                    "semaphore-starvation",
                    "drill diagnose",
                ),
                entry(100.0, TrailKind::Change, "", "permits=64", "curl"),
                verdict(130.0, true),
            ]),
            &drawn,
        );
        assert_eq!(found.first_look_s, Some(20.0), "the load is no look");
        assert_eq!(found.diagnosed_s, Some(90.0));
        assert_eq!(found.score.as_deref(), Some("right"));
        assert_eq!(found.fixed_s, Some(130.0));
        assert!(found.anti_methods.is_empty(), "{:?}", found.anti_methods);
        assert!(found.changed_nothing.is_empty());
    }

    #[test]
    fn a_change_before_a_look_is_random_and_one_way_of_looking_the_streetlight() {
        let drawn = Draw::of(&super::super::draw::seed_for("none").unwrap()).unwrap();
        let found = findings(
            &trail(vec![
                entry(3.0, TrailKind::Change, "", "permits=100", "curl"),
                verdict(20.0, false),
                entry(25.0, TrailKind::Look, "stats", "/stats", "curl"),
                entry(26.0, TrailKind::Change, "", "counters reset", "curl"),
                entry(30.0, TrailKind::Look, "stats", "/stats", "curl"),
                entry(
                    40.0,
                    TrailKind::Diagnosis,
                    "",
                    "cpu-quota",
                    "drill diagnose",
                ),
            ]),
            &drawn,
        );
        assert_eq!(found.score.as_deref(), Some("wrong"));
        assert_eq!(found.changed_nothing, ["permits=100 (0:03)"]);
        assert_eq!(found.anti_methods.len(), 2, "{:?}", found.anti_methods);
        assert!(found.anti_methods[0].starts_with("random change: `permits=100`"));
        assert!(found.anti_methods[1].contains("one way, stats"));
        let text = render(&trail(Vec::new()), &found);
        assert!(text.contains("the trail cannot see them"), "{text}");
    }
}
