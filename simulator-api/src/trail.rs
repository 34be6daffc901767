//! The trail (`GET /admin/trail`): what a server saw its operator do, with
//! times. Each look through the server (`/stats`, `/metrics`, the live view,
//! the probe tap, a profile), each change of settings, each check's start and
//! verdict, each diagnosis (`POST /admin/diagnosis`) and each note the
//! attendee adds (`POST /admin/trail`). A drill's report is read from it
//! (issue 99). Root's tracers attach to the process, not to the server's
//! routes, so the server never sees them: a note is how they get in.

use serde::{Deserialize, Serialize};

/// The header this project's own commands name themselves in
/// (`trace permit-wait`, `clients`, `workshop check`): the trail tells the
/// attendee's looks from the load and the judge.
pub const CALLER_HEADER: &str = "isim-caller";

/// The most entries a trail keeps; later ones are counted in
/// [`Trail::dropped`]. A look repeated back to back is one entry.
pub const TRAIL_MAX: usize = 1000;

/// The longest note, diagnosis or caller's name the server takes, in bytes.
pub const TRAIL_TEXT_MAX: usize = 200;

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrailKind {
    /// A look through the server: `tool` names the way (`stats`, `tap`, ...).
    Look,
    /// A change of settings (live, or a scenario switched), or a reset.
    Change,
    /// A check began, or gave its verdict (`passed`).
    Check,
    /// A cause named (`POST /admin/diagnosis`); the first is the one scored.
    Diagnosis,
    /// The attendee's own words (`POST /admin/trail`): a tracer run as root.
    Note,
    /// A load's stage began (`PUT /admin/stage`, sent by sim-clients with a
    /// plan): `what` says which, so a replay marks where each began.
    Stage,
}

/// One step of the trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrailEntry {
    /// Seconds since the server started, at the first of its `times`.
    pub t: f64,
    pub at_ms: u64,
    pub kind: TrailKind,
    /// For a look, the way: `stats`, `metrics`, `live`, `tap`, `profile`,
    /// `threads`, `heap`, `scenarios`; empty otherwise.
    pub tool: String,
    /// What was looked at, changed, judged or named: `trace permit-wait`,
    /// `permits=64`, `solved`, `noisy-neighbour`.
    pub what: String,
    /// Who asked: this project's command (the [`CALLER_HEADER`]), else the
    /// user agent's first word (`curl`, `browser`), else `unknown`.
    pub by: String,
    /// The same look back to back is one entry: how many, and the last's time.
    pub times: u32,
    pub last_t: f64,
    /// For a check's verdict: whether it held.
    #[serde(default)]
    pub passed: Option<bool>,
}

/// `GET /admin/trail`: the whole trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trail {
    pub started_ms: u64,
    /// Seconds since the server started, as the trail was read.
    pub now: f64,
    pub entries: Vec<TrailEntry>,
    /// Entries past [`TRAIL_MAX`], not kept.
    pub dropped: u64,
}

/// `POST /admin/diagnosis`: a cause named, by its name, its exercise's, or
/// `none`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnosisRequest {
    pub cause: String,
}

/// The answer to a diagnosis: the one of record (the first) and whether this
/// one was it. The server does not score it: it does not know the draw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnosisAnswer {
    pub of_record: String,
    pub this_one_counts: bool,
}

/// `POST /admin/trail`: a note in the attendee's words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrailNote {
    pub note: String,
}

/// What a drill's trail says (`drill report`, the room's drill column): the
/// milestones in seconds since the drill's server started, the diagnosis of
/// record scored, the changes a check showed did nothing, and the
/// anti-methods seen, each a sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrillFindings {
    pub first_look_s: Option<f64>,
    pub diagnosed_s: Option<f64>,
    /// The diagnosis of record (the first named).
    pub diagnosis: Option<String>,
    /// `right`, `partly right: ...` or `wrong`.
    pub score: Option<String>,
    /// The first check that passed.
    pub fixed_s: Option<f64>,
    /// Changes after which the next check still failed.
    pub changed_nothing: Vec<String>,
    pub anti_methods: Vec<String>,
}

/// The most entries of a list in [`DrillFindings`] the room takes.
pub const FINDINGS_LIST_MAX: usize = 32;

impl DrillFindings {
    /// Why a room refuses these findings, if it does: a list over
    /// [`FINDINGS_LIST_MAX`] or a text over [`TRAIL_TEXT_MAX`] bytes (twice
    /// that for an anti-method's sentence).
    pub fn bounds_error(&self) -> Option<String> {
        let lists = [self.changed_nothing.len(), self.anti_methods.len()];
        if lists.iter().any(|&n| n > FINDINGS_LIST_MAX) {
            return Some(format!(
                "a drill's findings list at most {FINDINGS_LIST_MAX} entries"
            ));
        }
        let texts = self
            .diagnosis
            .iter()
            .chain(&self.score)
            .chain(&self.changed_nothing)
            .chain(&self.anti_methods);
        texts
            .into_iter()
            .any(|t| t.len() > 2 * TRAIL_TEXT_MAX)
            .then(|| {
                format!(
                    "a drill's findings' texts are at most {} bytes",
                    2 * TRAIL_TEXT_MAX
                )
            })
    }
}
