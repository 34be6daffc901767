//! Recording and reporting: the whole-run histograms, each declared once
//! (`figures.rs`), the tally of what the clients saw (`record.rs`), the
//! report and its JSON (`report.rs`, laid out by `render.rs`, durations in
//! `units.rs`), the per-second series (`series.rs`), a plan's stages (`stages.rs`), the bars judged (`judged.rs`), HDR histograms in a report
//! (`hdr.rs`) and live progress on a terminal (`progress.rs`).

use anyhow::Context;
use simulator_api::output::Output;

pub mod figures;
pub mod hdr;
pub mod judged;
pub mod lag;
pub mod live;
pub mod outcome;
pub mod progress;
pub mod record;
pub mod render;
pub mod report;
pub mod series;
pub mod stages;
pub mod units;

pub use report::Report;

/// Writes `value` as pretty JSON to `path`, or to stdout for `-`.
pub fn write_json(out: Output, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(value)? + "\n";
    let path = out.path().display().to_string();
    out.write(json.as_bytes())
        .with_context(|| format!("writing {path}"))
}

/// `path` reserved for an output written after the run: refused now if it
/// cannot be written (`simulator_api::output`).
pub fn reserve(path: &std::path::Path) -> anyhow::Result<Output> {
    Output::reserve(path).with_context(|| format!("cannot write {}", path.display()))
}
