//! `system-simulator export FILE.isim --format perfetto`: a recording as a
//! timeline that Perfetto's UI opens (`perfetto.rs`), written to a
//! file reserved before the work (a path that cannot be written is refused at
//! once); and the flame graph of each CPU profile it holds (`record
//! --profile`) beside it, as SVG: Perfetto draws no flame graph from JSON.

use std::path::PathBuf;

use anyhow::Context as _;
use simulator_api::output::Output;

use simulator_service::profile::Folded;

pub(crate) mod perfetto;

use crate::recording::format as recording;

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
    // Beside the timeline, or beside the recording when it went to stdout.
    let beside = if to_stdout {
        &args.recording
    } else {
        &out_path
    };
    for (i, profile) in recording.profiles.iter().enumerate() {
        let svg_path = flame_graph_path(beside, i);
        let folded = Folded::parse(&profile.folded)
            .with_context(|| format!("the recording's profile {i} does not parse"))?;
        let title = format!(
            "CPU profile of {}, {} s, recorded {}",
            recording.head.target,
            profile.seconds,
            crate::trace::clock_at(recording.head.began_unix_ms / 1000)
        );
        std::fs::write(&svg_path, folded.svg(&title))
            .with_context(|| format!("cannot write {}", svg_path.display()))?;
        eprintln!(
            "export: {} (the flame graph of the CPU profile taken during the recording; a browser opens it)",
            svg_path.display()
        );
    }
    Ok(())
}

/// `run.json` -> `run.svg`, then `run-2.svg` for a second profile.
fn flame_graph_path(beside: &std::path::Path, i: usize) -> PathBuf {
    let stem = beside.file_stem().unwrap_or_default().to_string_lossy();
    let name = match i {
        0 => format!("{stem}.svg"),
        i => format!("{stem}-{}.svg", i + 1),
    };
    beside.with_file_name(name)
}
