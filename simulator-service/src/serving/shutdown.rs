//! Shutdown: the signals that start it and the report printed when it is over.
//!
//! The sequence lives in `serving/mod.rs`: stop accepting, let open requests finish,
//! drain persistence, all within one deadline (`--drain-timeout`). This module
//! says *when* (SIGINT or SIGTERM) and prints *what happened*, in the seed's
//! count.d layout so the final numbers can be put beside a script's output.

use std::fmt::Write as _;

use simulator_api::SEED_COUNTS;

use crate::request_path::DrainReport;

/// Completes on the first SIGINT (Ctrl-C) or SIGTERM.
pub async fn signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(%err, "cannot listen for Ctrl-C; stop the server with SIGTERM");
            std::future::pending::<()>().await;
        }
    };
    let term = crate::platform::process::terminate_requested();
    tokio::select! {
        () = ctrl_c => tracing::info!("SIGINT: shutting down"),
        () = term => tracing::info!("SIGTERM: shutting down"),
    }
}

/// One `label  count` line as DTrace's `printa` lays out a count aggregation.
pub fn seed_line(label: &str, value: u64) -> String {
    format!("  {label:<50} {value:>16}\n")
}

/// The final counts, labelled like the seed's count.d output, plus what the drain
/// deadline forced us to abandon.
pub fn final_report(report: &DrainReport) -> String {
    let mut out = String::from("\nfinal counts since start (or the last reset):\n\n");
    for seed in SEED_COUNTS {
        out.push_str(&seed_line(seed.label, (seed.get)(&report.counts)));
    }
    out.push_str(&seed_line(
        "persistent writes failed",
        report.counts.persists_failed,
    ));
    out.push_str(&seed_line(
        "requests cut short at shutdown (503)",
        report.requests_cut_short,
    ));
    out.push_str(&seed_line(
        "requests abandoned at shutdown",
        report.requests_abandoned,
    ));
    out.push_str(&seed_line(
        "persistent writes abandoned at shutdown",
        report.persists_abandoned,
    ));
    if report.queued_abandoned > 0 {
        out.push_str(&seed_line(
            "elements still queued at shutdown (never persisted)",
            report.queued_abandoned,
        ));
    }
    if report.requests_cut_short
        + report.requests_abandoned
        + report.persists_abandoned
        + report.queued_abandoned
        > 0
    {
        let _ = writeln!(
            out,
            "\nthe drain deadline passed before everything finished (raise --drain-timeout)"
        );
    }
    out
}
