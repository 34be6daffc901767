//! A knee search as text: a row per step in the order run, the answer, and
//! what limits the server at the knee as its own `/stats` showed it.

use std::fmt::Write as _;

use super::{KneeReport, KneeStep};
use crate::reporting::units;
use simulator_api::load::Unit;

fn level(unit: Unit, l: f64) -> String {
    match unit {
        Unit::Rate => format!("{l}/s"),
        Unit::Clients => format!("{l} clients"),
    }
}

/// One step's row.
pub fn row(unit: Unit, s: &KneeStep) -> String {
    let server = s.server.as_ref();
    let share = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{:.0} %", v * 100.0));
    format!(
        "  {:<14} {:<5} {:>9.1} {:>10.1} {:>9} {:>9} {:>9} {:>7} {:>8} {:>6} {:>8}",
        level(unit, s.level),
        if s.passed { "pass" } else { "FAIL" },
        s.offered_per_s,
        s.achieved_per_s,
        units::duration(s.p50_ns),
        units::duration(s.p99_ns),
        units::duration(s.p999_ns),
        s.errors,
        share(server.map(|v| v.blocked_share)),
        share(server.and_then(|v| v.cpu_share)),
        share(server.map(|v| v.runtime_busy_share)),
    )
}

/// The header of the rows.
pub const HEAD: &str = "  level          bars  offered/s achieved/s       p50       p99     p99.9  errors  blocked    CPU  runtime";

/// The whole search.
pub fn render(r: &KneeReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "knee of {} against {}, {} s a step",
        r.bars.join(" and "),
        r.target,
        r.step_s
    );
    let _ = writeln!(out, "{HEAD}");
    for s in &r.steps {
        let _ = writeln!(out, "{}", row(r.unit, s));
    }
    out.push('\n');
    let _ = match (r.knee, r.first_fail) {
        (Some(k), Some(f)) => writeln!(
            out,
            "the knee: {} holds the bars, {} does not",
            level(r.unit, k),
            level(r.unit, f)
        ),
        (Some(k), None) => writeln!(
            out,
            "every level passed, up to {} (--to): the knee is higher",
            level(r.unit, k)
        ),
        (None, Some(f)) => writeln!(
            out,
            "even {} failed: start lower (--from)",
            level(r.unit, f)
        ),
        (None, None) => writeln!(out, "no step was run"),
    };
    let at_knee = r
        .steps
        .iter()
        .rev()
        .find(|s| Some(s.level) == r.knee.or(r.first_fail));
    if let Some(server) = at_knee.and_then(|s| s.server.as_ref()) {
        let _ = writeln!(
            out,
            "at the knee the server blocked {:.0} % of requests for a permit, used {} of its {} cores, its runtime's workers busy {:.0} %",
            server.blocked_share * 100.0,
            server.cpu_share.map_or("an unknown share".to_owned(), |c| format!("{:.0} %", c * 100.0)),
            server.cores,
            server.runtime_busy_share * 100.0,
        );
        let _ = writeln!(
            out,
            "its model: {}{}",
            server.limited_by,
            server
                .model_capacity_per_s
                .map_or(String::new(), |c| format!(" (capacity {c:.0}/s)"))
        );
    }
    out
}
