//! `trace NAME --from FILE.isim`: a script's twin fed from a recording rather
//! than a live tap. The recording holds every event the tap gave and `/stats`
//! a second (`recording/`), in the order the recorder saw them, so the twin gets
//! what it would have got live, as fast as the file reads: only the events it
//! attaches to, the reading before its BEGIN, a reading and a line at each
//! recorded second, and the last reading before its END.
//!
//! One difference: the recorder reads `/stats` once a second, and listener's
//! twin reads it ten times live ([`Script::readings_per_second`]); each reading
//! carries the longest queue of the second before it, so its QUEUE-MAX keeps each
//! second's peak.

use std::path::Path;

use anyhow::Context as _;

use crate::recording::format::{self as recording, Item, Recording, Stop};
use crate::trace::script::{Event, Options, Script};

/// What a replay ended with.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Fed {
    /// Events the tap dropped while the recorder was behind.
    pub lost: u64,
    /// Whole seconds replayed.
    pub seconds: u64,
}

pub fn run(args: &crate::trace::TraceArgs, path: &Path) -> anyhow::Result<()> {
    let options = crate::trace::options_of(args, 0);
    if args.name == crate::trace::PROFILE || args.name == crate::trace::OFFCPU {
        anyhow::bail!(
            "{} reads the server's sampler, which a recording does not hold; the scripts a recording replays: {}",
            args.name,
            crate::trace::scripts::names().collect::<Vec<_>>().join(", ")
        );
    }
    let recording = recording::open(path)?;
    // A recording beside a check or the demo asked no seconds: it lasted its own.
    let seconds = match recording.head.seconds {
        0 => recording.last_second().max(1),
        asked => asked,
    };
    let options = Options { seconds, ..options };
    let mut script = crate::trace::script_named(&args.name, options)?;
    eprintln!(
        "trace: {} replayed from {} ({} recorded {} at {} UTC; the events and /stats as the recorder read them)",
        args.name,
        path.display(),
        recording.head.recorder,
        recording.head.target,
        crate::trace::clock_at(recording.head.began_unix_ms / 1000),
    );
    let fed = feed(&recording, script.as_mut(), &mut crate::trace::emit);
    if fed.lost > 0 {
        eprintln!(
            "trace: the server dropped {} events while the recorder was behind; the figures above miss them",
            fed.lost
        );
    }
    if recording.unknown_events > 0 {
        eprintln!(
            "trace: {} events of probes this build does not know were left out",
            recording.unknown_events
        );
    }
    if let Some(told) = recording.stop.told(fed.seconds) {
        if let Stop::Damaged { .. } = recording.stop {
            return Err(anyhow::anyhow!(told)).with_context(|| format!("{}", path.display()));
        }
        eprintln!("trace: {told}");
    }
    Ok(())
}

/// Feeds `recording` to `script`, handing `emit` its output at BEGIN, each
/// second and END.
pub fn feed(
    recording: &Recording,
    script: &mut dyn Script,
    emit: &mut dyn FnMut(&mut String),
) -> Fed {
    let wanted = script.probes();
    let reads_stats = script.reads_stats();
    let mut out = String::new();
    let mut fed = Fed::default();
    let mut begun = false;
    let begin = |script: &mut dyn Script, out: &mut String, begun: &mut bool| {
        if !*begun {
            script.begin(out);
            *begun = true;
        }
    };
    for item in &recording.items {
        match item {
            Item::Event { at_ns, probe, args } => {
                if wanted.contains(probe) {
                    begin(script, &mut out, &mut begun);
                    script.on(&Event {
                        at_ns: *at_ns,
                        probe,
                        args: *args,
                    });
                }
            }
            Item::Lost(count) => {
                fed.lost += count;
                script.lost(*count);
            }
            Item::Tick {
                second,
                unix_ms,
                stats,
                ..
            } => {
                if reads_stats {
                    script.stats(stats);
                }
                begin(script, &mut out, &mut begun);
                if *second > 0 {
                    script.second(&crate::trace::clock_at(unix_ms / 1000), &mut out);
                    fed.seconds = *second;
                }
            }
            Item::End { seconds, stats, .. } => {
                if reads_stats {
                    script.stats(stats);
                }
                fed.seconds = *seconds;
            }
        }
        if !out.is_empty() {
            emit(&mut out);
        }
    }
    begin(script, &mut out, &mut begun);
    script.end(fed.seconds, &mut out);
    emit(&mut out);
    fed
}
