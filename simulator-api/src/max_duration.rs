//! The one environment variable that shortens every run: `SIMULATOR_MAX_DURATION`.
//!
//! The pages print the durations a workshop needs (a 60 s load, a 20 s trace); a
//! person trying a page quickly, and the test that runs every command of the docs
//! as printed (tests/suite/guards/pages_run.rs), set `SIMULATOR_MAX_DURATION=3s` instead of
//! editing the commands. Every tool that runs for a while honours it the same way:
//! the load (`clients`, `sim-clients`, each step of `sweep`), the demo's phases and
//! `scripts/trace --seconds` (a shell twin of this, in the script). Each says on
//! stderr when it cut a duration, so a shortened run never passes for a full one.

use std::time::Duration;

/// The variable's name.
pub const VAR: &str = "SIMULATOR_MAX_DURATION";

/// A value of the variable that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("{VAR}={value:?} is not a duration (e.g. 3s, 500ms): {reason}")]
pub struct BadMaxDuration {
    value: String,
    reason: String,
}

/// The cap set in the environment, if any.
pub fn from_env() -> Result<Option<Duration>, BadMaxDuration> {
    parse(std::env::var(VAR).ok().as_deref())
}

/// The cap a value of the variable sets: none when unset or empty.
pub fn parse(value: Option<&str>) -> Result<Option<Duration>, BadMaxDuration> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => match humantime::parse_duration(text) {
            Ok(cap) if cap > Duration::ZERO => Ok(Some(cap)),
            Ok(_) => Err(BadMaxDuration {
                value: text.to_string(),
                reason: "it must be more than zero".into(),
            }),
            Err(e) => Err(BadMaxDuration {
                value: text.to_string(),
                reason: e.to_string(),
            }),
        },
    }
}

/// `wanted` cut to `cap`; when it was cut, a line for stderr saying so, naming
/// `what` was cut (e.g. `--duration`).
pub fn cut(what: &str, wanted: Duration, cap: Option<Duration>) -> (Duration, Option<String>) {
    match cap {
        Some(cap) if wanted > cap => (
            cap,
            Some(format!(
                "{what} {} cut to {} by {VAR}",
                humantime::format_duration(wanted),
                humantime::format_duration(cap)
            )),
        ),
        _ => (wanted, None),
    }
}

/// [`cut`], the note said on stderr as `WHO: ...`; what every tool calls.
pub fn cut_and_say(who: &str, what: &str, wanted: Duration, cap: Option<Duration>) -> Duration {
    let (duration, note) = cut(what, wanted, cap);
    if let Some(note) = note {
        eprintln!("{who}: {note}");
    }
    duration
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_or_empty_sets_no_cap() {
        assert!(parse(None).unwrap().is_none());
        assert!(parse(Some(" ")).unwrap().is_none());
    }

    #[test]
    fn a_cap_cuts_only_what_is_longer_and_says_so() {
        let cap = parse(Some("3s")).unwrap();
        assert_eq!(cap, Some(Duration::from_secs(3)));
        let (d, note) = cut("--duration", Duration::from_secs(60), cap);
        assert_eq!(d, Duration::from_secs(3));
        assert_eq!(
            note.as_deref(),
            Some("--duration 1m cut to 3s by SIMULATOR_MAX_DURATION")
        );
        assert_eq!(
            cut("--duration", Duration::from_secs(2), cap),
            (Duration::from_secs(2), None)
        );
        assert_eq!(
            cut("--duration", Duration::from_secs(60), None),
            (Duration::from_secs(60), None)
        );
    }

    #[test]
    fn a_bad_value_is_a_clear_error() {
        let e = parse(Some("soon")).unwrap_err().to_string();
        assert!(
            e.starts_with("SIMULATOR_MAX_DURATION=\"soon\" is not a duration"),
            "{e}"
        );
        assert!(parse(Some("0s"))
            .unwrap_err()
            .to_string()
            .contains("more than zero"));
    }
}
