//! `system-simulator export FILE.isim [MORE.isim ...] --format perfetto`: a
//! recording as a timeline that Perfetto's UI opens (`perfetto.rs`), or
//! several on one (a before above its after), written to a
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
    /// The recording (`system-simulator record --out FILE.isim`); more than
    /// one share a timeline, each a process of its own from its own start
    /// (a before above its after), at most 8.
    #[arg(required = true, num_args = 1..=8, value_name = "FILE.isim")]
    pub recordings: Vec<PathBuf>,
    /// The format: perfetto (Chrome's JSON trace events, which ui.perfetto.dev
    /// and chrome://tracing open).
    #[arg(long, value_enum, default_value_t = Format::Perfetto)]
    pub format: Format,
    /// Where to write it (`-`: standard output). Default: the recording's name
    /// with `.json`; for several, their names joined by `-`.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// Chrome's JSON trace events: one async slice a request, its phases inside.
    Perfetto,
}

/// The default timeline: `run.json` beside `run.isim`; `before-after.json`
/// beside `before.isim` for two.
fn default_out(recordings: &[PathBuf]) -> PathBuf {
    let stems: Vec<String> = recordings
        .iter()
        .map(|p| p.file_stem().unwrap_or_default().to_string_lossy().into())
        .collect();
    recordings[0].with_file_name(format!("{}.json", stems.join("-")))
}

pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let out_path = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&args.recordings));
    let out = Output::reserve(&out_path)
        .with_context(|| format!("cannot write {}", out_path.display()))?;
    let recordings = args
        .recordings
        .iter()
        .map(|path| recording::open(path))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let Format::Perfetto = args.format;
    let names: Vec<String> = args
        .recordings
        .iter()
        .map(|p| p.file_name().unwrap_or_default().to_string_lossy().into())
        .collect();
    let timeline = match &recordings[..] {
        [one] => perfetto::export(one),
        several => perfetto::export_together(
            &names
                .iter()
                .map(String::as_str)
                .zip(several)
                .collect::<Vec<_>>(),
        ),
    };
    let body = serde_json::to_vec(&timeline)?;
    let bytes = body.len();
    let to_stdout = out.is_stdout();
    out.write(&body)
        .with_context(|| format!("cannot write {}", out_path.display()))?;
    for (name, recording) in names.iter().zip(&recordings) {
        if let Some(told) = recording.stop.told(recording.last_second()) {
            eprintln!("export: {name}: {told}");
        }
    }
    if !to_stdout {
        eprintln!(
            "export: {} ({bytes} bytes); open it at https://ui.perfetto.dev (Open trace file) or in chrome://tracing",
            out_path.display()
        );
    }
    // Beside the timeline, or beside the recording when it went to stdout.
    for (path, recording) in args.recordings.iter().zip(&recordings) {
        let beside = match (to_stdout, recordings.len()) {
            (true, _) | (false, 2..) => path.clone(),
            (false, _) => out_path.clone(),
        };
        flame_graphs(&beside, recording)?;
    }
    Ok(())
}

/// The flame graph of each CPU profile `recording` holds, named after `beside`.
fn flame_graphs(beside: &std::path::Path, recording: &recording::Recording) -> anyhow::Result<()> {
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
