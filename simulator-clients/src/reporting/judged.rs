//! A run's bars as its report keeps them (`--threshold`; read and judged in
//! `thresholds/`): each with its figure, its span and its verdict, and the
//! lines that end the text report.

use serde::{Deserialize, Serialize};

/// One bar's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    pub threshold: String,
    /// Its figure over its span (for a window, the worst window's); null when
    /// nothing was measured.
    pub value: Option<f64>,
    /// The figure in words: `182 ms`, `0.40 %`, `131.2/s`.
    pub shown: String,
    /// What it was judged over: `the run`, `stage peak`, `worst window 12-22 s`.
    pub over: String,
    pub passed: bool,
}

/// The verdicts as the report ends them.
pub fn render(judged: &[Judged], aborted_by: Option<&str>) -> String {
    let mut out = String::from("thresholds\n");
    for j in judged {
        let mark = if j.passed { "pass" } else { "FAIL" };
        out.push_str(&format!(
            "  {mark}  {:<40} {:>14}  over {}\n",
            j.threshold, j.shown, j.over
        ));
    }
    if let Some(why) = aborted_by {
        out.push_str(&format!("  the run was ended early: {why}\n"));
    }
    out
}
