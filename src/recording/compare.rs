//! `system-simulator compare BEFORE AFTER`: two runs told apart from their
//! noise, each a recording (`.isim`) or a load's report (`--json`). The
//! statistics are the driver's (`simulator_clients::compare`: a moving-block
//! bootstrap over the seconds, better, worse or `~`); here, a recording's
//! seconds as they read them. A second of a recording is the server's counts
//! between two of its readings of `/stats`: requests started (sent), done
//! (answered), blocked for a permit, and refused or abandoned (errors); and
//! the lifetime of each request done in it, from its `request-done` event
//! (what the server saw, without the network's or the client's time).
//! `--flame` draws the differential flame graphs of the two recordings' CPU
//! profiles (`simulator_service`'s `profile/diff.rs`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use simulator_service::profile::diff::{self, View};
use simulator_service::profile::folded::Folded;

use simulator_api::events::probe;
use simulator_clients::compare::stats::Second;
use simulator_clients::compare::{self, Names, Resampling, Span};

use crate::recording::format::{self, Item, Recording};

/// `system-simulator compare`'s flags: the driver's, and the flame graphs of
/// two recordings' profiles.
#[derive(Debug, clap::Args)]
pub struct CompareRunsArgs {
    #[command(flatten)]
    pub runs: simulator_clients::compare::CompareArgs,
    /// Also draw the differential flame graphs of the recordings' CPU
    /// profiles (`record --profile N`): FILE the after's widths, red where a
    /// frame grew and blue where it shrank; FILE-before.svg the before's,
    /// hues turned round, to see what vanished.
    #[arg(long, value_name = "FILE.svg")]
    pub flame: Option<PathBuf>,
    /// With --flame: a stack whose change is under this share of its larger
    /// count draws grey, as no change.
    #[arg(long, default_value = "5%", value_parser = simulator_api::load::parse_percent)]
    pub grey_under: f64,
    /// Show the comparison of two recordings on the room's board, as this
    /// seat's before and after (`ISIM_ROOM` and `ISIM_SEAT`, as a check).
    #[command(flatten)]
    pub room: crate::room::seat::RoomArgs,
}

/// Whether `path` is a recording rather than a driver's report.
fn is_recording(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "isim")
}

/// A recording's seconds, one between each two of its readings.
pub fn seconds(recording: &Recording) -> Vec<Second> {
    let mut out = Vec::new();
    let mut last: Option<simulator_api::Counts> = None;
    let mut last_second = None;
    let mut lifetimes: Vec<(u64, u64)> = Vec::new();
    for item in &recording.items {
        let (second, stats) = match item {
            Item::Event { probe, args, .. } if *probe == probe::request__done => {
                // To the microsecond: a percentile need not tell 1 ns apart.
                lifetimes.push((args[1] / 1000 * 1000, 1));
                continue;
            }
            Item::Tick { second, stats, .. } => (*second, stats),
            Item::End { seconds, stats } => (*seconds, stats),
            Item::Event { .. } | Item::Lost(_) => continue,
        };
        // The end repeats the last tick's reading unless it had its own.
        if last_second.is_some_and(|s| s >= second) {
            continue;
        }
        last_second = Some(second);
        let now = stats.counts;
        if let Some(was) = last {
            let since = now.since(&was);
            lifetimes.sort_unstable();
            out.push(Second {
                sent: since.requests_started,
                completed: since.requests_done,
                errors: since.requests_shed + since.requests_abandoned,
                blocked: since.requests_blocked,
                blocked_of: since.requests_started,
                latency: std::mem::take(&mut lifetimes),
            });
        }
        lifetimes.clear();
        last = Some(now);
    }
    out
}

/// A recording's seconds, and the scenario its server ran (from its first
/// reading of `/stats`).
fn open(path: &Path) -> anyhow::Result<(Vec<Second>, Option<String>)> {
    let recording = format::open(path)?;
    let seconds = seconds(&recording);
    anyhow::ensure!(
        seconds.len() >= 2,
        "{} holds {} seconds: a comparison needs at least 2",
        path.display(),
        seconds.len()
    );
    let scenario = recording.items.iter().find_map(|item| match item {
        Item::Tick { stats, .. } | Item::End { stats, .. } => Some(stats.scenario.clone()),
        Item::Event { .. } | Item::Lost(_) => None,
    });
    Ok((seconds, scenario))
}

/// Compares two recordings, or two reports (the driver's own `compare`).
pub async fn run(all: &CompareRunsArgs) -> anyhow::Result<()> {
    let args = &all.runs;
    let files: Vec<&PathBuf> = [Some(&args.before), Some(&args.after), args.aa.as_ref()]
        .into_iter()
        .flatten()
        .collect();
    let recordings = files.iter().filter(|p| is_recording(p)).count();
    if recordings == 0 {
        anyhow::ensure!(
            all.flame.is_none(),
            "--flame draws two recordings' profiles: a report has none"
        );
        if all.room.room.is_some() {
            eprintln!("note: the room shows comparisons of recordings, whose exercise they name; not of reports");
        }
        return compare::run(args);
    }
    anyhow::ensure!(
        recordings == files.len(),
        "compare two recordings (.isim) or two reports (--json), not one of each"
    );
    let json = args
        .json
        .as_deref()
        .map(simulator_api::output::Output::reserve)
        .transpose()?;
    let (before, scenario) = open(&args.before)?;
    let span = Span {
        name: "the run".into(),
        before,
        after: open(&args.after)?.0,
        again: args
            .aa
            .as_deref()
            .map(|p| open(p).map(|(s, _)| s))
            .transpose()?,
    };
    if let Some(out) = &all.flame {
        draw(args, out, all.grey_under / 100.0)?;
    }
    let c = compare::compare_spans(&Names::of(args), &[span], &Resampling::of(args));
    print!("{}", compare::render(&c));
    if let Some(out) = json {
        let text = serde_json::to_string_pretty(&c)? + "\n";
        out.write(text.as_bytes())?;
    }
    if all.room.room.is_some() {
        send_to_room(&all.room, scenario.as_deref().unwrap_or_default(), &c).await;
    }
    compare::status(&c)
}

/// The comparison to the room, as this seat's before and after of the
/// before's exercise; best effort: a room that cannot take it costs one
/// warning, never the comparison's status.
async fn send_to_room(room: &crate::room::seat::RoomArgs, exercise: &str, c: &compare::Comparison) {
    let name = |p: &str| {
        Path::new(p)
            .file_name()
            .map_or(p.to_owned(), |f| f.to_string_lossy().into_owned())
    };
    let (before, after) = (name(&c.before), name(&c.after));
    match crate::room::seat::report_comparison(room, exercise, [&before, &after], c).await {
        Ok(link) => println!("the room has this before and after: {link}"),
        Err(why) => eprintln!("note: the room does not show this comparison: {why}"),
    }
}

/// A recording's CPU profiles, their stacks added.
fn profile(path: &Path) -> anyhow::Result<Folded> {
    let recording = format::open(path)?;
    anyhow::ensure!(
        !recording.profiles.is_empty(),
        "{} holds no CPU profile: record it with --profile N",
        path.display()
    );
    let mut all = Folded::default();
    for block in &recording.profiles {
        let folded = Folded::parse(&block.folded)
            .with_context(|| format!("{}'s profile", path.display()))?;
        for (stack, count) in folded.stacks {
            all.add(stack, count);
        }
    }
    Ok(all)
}

/// Both views of the profiles' differential flame graph: `out`, and
/// `out`-before.svg.
fn draw(
    args: &simulator_clients::compare::CompareArgs,
    out: &Path,
    grey_under: f64,
) -> anyhow::Result<()> {
    let (before, after) = (
        profile(&args.before)?.without_idle().0,
        profile(&args.after)?.without_idle().0,
    );
    let title = |view: &str| {
        format!(
            "{} -> {}: {view}",
            args.before.display(),
            args.after.display()
        )
    };
    let before_path = out.with_file_name(format!(
        "{}-before.svg",
        out.file_stem().unwrap_or_default().to_string_lossy()
    ));
    for (path, view, words) in [
        (
            out.to_path_buf(),
            View::After,
            "the after's widths, red grew, blue shrank",
        ),
        (
            before_path,
            View::Before,
            "the before's widths, blue shrank or vanished",
        ),
    ] {
        let title = title(words);
        let drawing = diff::Drawing {
            title: &title,
            view,
            grey_under,
            unit: "samples",
        };
        let svg = diff::svg(&before, &after, &drawing);
        std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("compare: wrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::replay::film::fixture;

    #[test]
    fn a_recordings_seconds_are_its_readings_differences_and_its_requests_lifetimes() {
        let recording = fixture::recording(&[3, 0, 5]);
        let s = seconds(&recording);
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].sent, s[0].completed), (3, 3));
        assert_eq!(s[0].latency, [(1_000_000, 1); 3]);
        assert_eq!(s[1].completed, 0);
        assert!(s[1].latency.is_empty());
        assert_eq!(s[2].latency, [(3_000_000, 1); 5]);
    }

    #[test]
    fn slower_requests_in_a_recording_compare_worse() {
        // Second s's requests live s ms: the later seconds of the longer
        // recording are slower.
        let before = seconds(&fixture::recording(&[40; 20]));
        let after: Vec<Second> = seconds(&fixture::recording(&[40; 60]))[40..].to_vec();
        let span = Span {
            name: "the run".into(),
            before,
            after,
            again: None,
        };
        let names = Names {
            before: "a.isim".into(),
            after: "b.isim".into(),
            aa: None,
        };
        let resampling = Resampling {
            resamples: 300,
            ..Resampling::default()
        };
        let c = compare::compare_spans(&names, &[span], &resampling);
        let p50 = c.rows.iter().find(|r| r.figure == "latency p50").unwrap();
        assert_eq!(
            p50.verdict,
            compare::stats::Verdict::Worse,
            "{}",
            compare::render(&c)
        );
        assert!(compare::status(&c).is_err());
    }
}
