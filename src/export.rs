//! `system-simulator export FILE.isim --format perfetto`: a recording as a
//! timeline that Perfetto's UI opens (`recording/perfetto.rs`), written to a
//! file reserved before the work (a path that cannot be written is refused at
//! once).

use std::path::PathBuf;

use anyhow::Context as _;
use simulator_api::output::Output;

use crate::recording::{self, perfetto};

/// What `export` takes.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The recording (`system-simulator record --out FILE.isim`).
    pub recording: PathBuf,
    /// The format: perfetto (Chrome's JSON trace events, which ui.perfetto.dev
    /// and chrome://tracing open).
    #[arg(long, value_enum, default_value_t = Format::Perfetto)]
    pub format: Format,
    /// Where to write it (`-`: standard output). Default: the recording's name
    /// with `.json`.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// Chrome's JSON trace events: one async slice a request, its phases inside.
    Perfetto,
}

pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let out_path = args
        .out
        .clone()
        .unwrap_or_else(|| args.recording.with_extension("json"));
    let out = Output::reserve(&out_path)
        .with_context(|| format!("cannot write {}", out_path.display()))?;
    let recording = recording::open(&args.recording)?;
    let Format::Perfetto = args.format;
    let timeline = perfetto::export(&recording);
    let body = serde_json::to_vec(&timeline)?;
    let bytes = body.len();
    let to_stdout = out.is_stdout();
    out.write(&body)
        .with_context(|| format!("cannot write {}", out_path.display()))?;
    if let Some(told) = recording.stop.told(recording.last_second()) {
        eprintln!("export: {told}");
    }
    if !to_stdout {
        eprintln!(
            "export: {} ({bytes} bytes); open it at https://ui.perfetto.dev (Open trace file) or in chrome://tracing",
            out_path.display()
        );
    }
    Ok(())
}
