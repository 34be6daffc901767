//! A sweep as the terminal shows it: one row per client count, in the seed's
//! columns (per minute, from the server's counters), the mean of the repeats with
//! their range, then what Little's law predicts.

use std::fmt::Write as _;

use crate::sweep::{Step, SweepReport, FIGURES};

/// The whole sweep, the fix after the original when it was run.
pub fn render(report: &SweepReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nsweep against {}: {} s a run, {} run(s) a step, think time {} s; per minute, \
         server-side (as count.d sees them); mean of the runs, ±half their range",
        report.target, report.duration_s, report.repeat, report.think_time_s
    );
    phase(
        &mut out,
        &format!("{} permits (the original)", report.permits),
        &report.before,
    );
    if let (Some(after), Some(k)) = (&report.after, report.fix_per_client) {
        phase(
            &mut out,
            &format!("permits = {k} x clients (the seed's fix)"),
            after,
        );
    }
    let _ = writeln!(
        out,
        "\nLittle's law: {} permits each held for a whole persist ({:.1} ms on average) pass at most \
         {:.1} requests/s ({:.0}/min). A client offers 1 / ({} s think + {:.1} ms unblocked lifetime) \
         requests/s, so from about {:.0} clients on the gate is full and nearly every request \
         waits for a permit; below that, blocking comes from clients arriving together.",
        report.permits,
        report.persist_mean_ms,
        report.capacity_per_s,
        report.capacity_per_s * 60.0,
        report.think_time_s,
        report.lifetime_unblocked_ms,
        report.saturation_clients,
    );
    out
}

fn phase(out: &mut String, title: &str, steps: &[Step]) {
    let _ = writeln!(out, "\n{title}:");
    let _ = writeln!(
        out,
        "  {:>7} {:>7} {:>9} {:>15} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9} {:>6} {:>10}",
        "clients",
        "permits",
        "started",
        "done",
        "blocked",
        "nonblock",
        "wr start",
        "wr done",
        "blocked%",
        "p50 ms",
        "p99 ms",
        "CPU%",
        "predicted"
    );
    for step in steps {
        let mean = |i: usize| step.mean.get(FIGURES[i]).copied();
        let half = |i: usize| step.spread.get(FIGURES[i]).copied().unwrap_or(0.0) / 2.0;
        let whole = |i: usize| mean(i).map_or("-".into(), |v| format!("{v:.0}"));
        let _ = writeln!(
            out,
            "  {:>7} {:>7} {:>9} {:>15} {:>9} {:>9} {:>9} {:>9} {:>8.1}% {:>8.1} {:>9.1} {:>6} {:>10.0}",
            step.clients,
            step.permits,
            whole(0),
            format!("{} ±{:.0}", whole(1), half(1)),
            whole(2),
            whole(3),
            whole(4),
            whole(5),
            mean(6).unwrap_or(0.0) * 100.0,
            mean(7).unwrap_or(0.0),
            mean(8).unwrap_or(0.0),
            mean(9).map_or("-".into(), |v| format!("{v:.1}")),
            step.predicted_per_min,
        );
    }
}
