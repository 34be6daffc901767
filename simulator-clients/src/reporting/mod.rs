//! Recording and reporting: the whole-run histograms, each declared once
//! (`figures.rs`), the tally of what the clients saw (`record.rs`), the
//! report and its JSON (`report.rs`, laid out by `render.rs`, durations in
//! `units.rs`), the per-second series (`series.rs`), HDR histograms in a report
//! (`hdr.rs`) and live progress on a terminal (`progress.rs`).

use anyhow::Context;

pub mod figures;
pub mod hdr;
pub mod lag;
pub mod live;
pub mod outcome;
pub mod progress;
pub mod record;
pub mod render;
pub mod report;
pub mod series;
pub mod units;

pub use report::Report;

/// Writes `value` as pretty JSON to `path`, or to stdout for `-`.
pub fn write_json(path: &std::path::Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(value)?;
    if path.as_os_str() == "-" {
        println!("{json}");
        return Ok(());
    }
    std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))
}
