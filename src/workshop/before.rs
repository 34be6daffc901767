//! A laptop's before of each exercise, and each later check measured against
//! it. The first check of an exercise that is judged and fails is kept, its
//! load's seconds with it: the server as the ticket left it. Every later
//! judged check of that exercise is compared with it, as `compare` compares
//! two runs (`simulator_clients::compare`: better, worse, or `~` when the
//! change cannot be told from noise). The attendee reads what the fix moved
//! under the verdict. With the room's line the comparison goes to the room
//! too, as the seat's before and after of that exercise: the facilitator
//! sees any seat's with a click, and the attendee runs nothing more.
//!
//! `--new-before` makes a check the before whatever it read (a server started
//! again from scratch, another laptop's settings). A check that was refused
//! has no load to keep and leaves the before alone.
//!
//! Kept in `STATE/befores/SEAT/EXERCISE.json` (`crate::local::state_dir`;
//! SEAT is `this-laptop` without a room), so the seats one machine plays (a
//! facilitator trying the room) keep their own. A file that cannot be read or
//! written costs one note, never the verdict.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use simulator_clients::compare::{self, Comparison};
use simulator_clients::Report;

use super::check::Verdict;

/// What a judged check does with the exercise's before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// It becomes the before: the first that failed, or `--new-before`.
    Keep,
    /// It is measured against the before.
    Compare,
    /// Neither: it passed, and no check of the exercise failed before it.
    Nothing,
}

/// What a judged check does, from whether a before is kept, whether the
/// check passed and whether the attendee asked it to be the new before.
pub fn step(has_before: bool, passed: bool, new_before: bool) -> Step {
    match (has_before, passed, new_before) {
        (_, _, true) => Step::Keep,
        (true, _, false) => Step::Compare,
        (false, false, false) => Step::Keep,
        (false, true, false) => Step::Nothing,
    }
}

/// The before as its file keeps it.
#[derive(Debug, Serialize, Deserialize)]
struct Kept {
    /// When it was checked (RFC 3339), for its name in the comparison.
    checked_at: String,
    /// Whether the attendee chose it (`--new-before`) rather than its
    /// verdict (the first failure).
    chosen: bool,
    /// Its load, second by second.
    load: Report,
}

impl Kept {
    /// What the comparison calls it.
    fn name(&self) -> String {
        match self.chosen {
            true => format!("the check kept as the before at {}", self.checked_at),
            false => format!("the first failing check of {}", self.checked_at),
        }
    }
}

/// What happened to the before, for the attendee (and the room).
#[derive(Debug)]
pub enum Outcome {
    /// This check is now the exercise's before, kept in the file.
    Kept(PathBuf),
    /// This check measured against the before (the comparison names it).
    Compared(Box<Comparison>),
    /// Nothing to keep or compare.
    Nothing,
    /// The file could not be read or written: why.
    Trouble(String),
}

/// The before's file of `exercise` for `seat` (this laptop's without one).
pub fn file(seat: Option<&str>, exercise: &str) -> Option<PathBuf> {
    Some(
        crate::local::state_dir()?
            .join("befores")
            .join(component(seat.unwrap_or("this-laptop")))
            .join(format!("{}.json", component(exercise))),
    )
}

/// `name` as one file name of the folder: a scenario file's name may hold
/// any text, and a seat's `..` must not climb out of `befores/`.
fn component(name: &str) -> String {
    let kept: String = name
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() || "-_.".contains(c) {
            true => c,
            false => '_',
        })
        .collect();
    match kept.starts_with('.') || kept.is_empty() {
        true => format!("_{kept}"),
        false => kept,
    }
}

/// What a check's verdict does to the before kept in `path`.
pub fn after_check(path: &Path, verdict: &Verdict, new_before: bool) -> Outcome {
    match verdict.load() {
        Some(load) => after_load(path, load, verdict.passed(), new_before),
        None => Outcome::Nothing,
    }
}

/// What a judged check's `load` does to the before kept in `path`. With
/// `new_before` the kept one is not read: that is how a before this version
/// cannot read is replaced.
fn after_load(path: &Path, load: &Report, passed: bool, new_before: bool) -> Outcome {
    let kept = match new_before {
        true => None,
        false => match read(path) {
            Ok(kept) => kept,
            Err(why) => return Outcome::Trouble(why),
        },
    };
    match step(kept.is_some(), passed, new_before) {
        Step::Nothing => Outcome::Nothing,
        Step::Keep => match write(path, load, new_before) {
            Ok(()) => Outcome::Kept(path.to_owned()),
            Err(why) => Outcome::Trouble(why),
        },
        Step::Compare => {
            let kept = kept.expect("a before to compare with");
            match compare::before_and_after(&kept.load, load, [&kept.name(), "this check"]) {
                Ok(comparison) => Outcome::Compared(Box::new(comparison)),
                Err(e) => Outcome::Trouble(format!("comparing with {}: {e:#}", path.display())),
            }
        }
    }
}

/// The before in `path`, if one is kept.
fn read(path: &Path) -> Result<Option<Kept>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("reading {}: {e}", path.display())),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        format!(
            "{} is not a before this version reads ({e}): `workshop check --new-before` keeps a new one",
            path.display()
        )
    })
}

/// Keeps `load` as the before in `path`: written beside it and renamed, so
/// a check that reads it meanwhile reads the old one or the new, never half.
fn write(path: &Path, load: &Report, chosen: bool) -> Result<(), String> {
    let kept = Kept {
        checked_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        chosen,
        load: load.clone(),
    };
    let text = serde_json::to_vec(&kept).map_err(|e| e.to_string())?;
    let beside = path.with_extension(format!("json.{}", std::process::id()));
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&beside, text))
        .and_then(|()| std::fs::rename(&beside, path))
        .map_err(|e| format!("keeping the before in {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failing_check_is_the_before_and_each_later_one_is_compared_with_it() {
        assert_eq!(step(false, false, false), Step::Keep, "the first failure");
        assert_eq!(step(false, true, false), Step::Nothing, "solved at once");
        assert_eq!(
            step(true, false, false),
            Step::Compare,
            "a fix that falls short"
        );
        assert_eq!(step(true, true, false), Step::Compare, "the fix");
        for (has_before, passed) in [(false, false), (false, true), (true, false), (true, true)] {
            assert_eq!(
                step(has_before, passed, true),
                Step::Keep,
                "--new-before, whatever came before"
            );
        }
    }

    #[test]
    fn a_seat_or_an_exercise_names_one_file_of_the_folder_whatever_it_holds() {
        assert_eq!(component("seat-1"), "seat-1");
        assert_eq!(component(".."), "_..");
        assert_eq!(component("a/../b c"), "a_.._b_c");
        assert_eq!(component(""), "_");
    }

    #[test]
    fn a_before_this_version_cannot_read_says_how_to_keep_a_new_one_and_that_keeps_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sequential-persist.json");
        assert!(matches!(read(&path), Ok(None)), "none kept yet");
        std::fs::write(&path, "{\"checked_at\": 3}").unwrap();
        let why = read(&path).unwrap_err();
        assert!(why.contains("--new-before"), "{why}");
        let load = Report::of_nothing(&simulator_clients::LoadPlan::default());
        let failed = after_load(&path, &load, false, false);
        assert!(matches!(failed, Outcome::Trouble(_)), "{failed:?}");
        let chosen = after_load(&path, &load, false, true);
        assert!(matches!(chosen, Outcome::Kept(_)), "{chosen:?}");
        let kept = read(&path).unwrap().expect("kept");
        assert!(kept.name().starts_with("the check kept as the before at "));
    }
}
