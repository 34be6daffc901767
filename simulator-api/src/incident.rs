//! A scenario's incident: a change of the world (a store that slows down, say)
//! that begins at a set time, lasts a set time, and is put back by the server
//! itself, so an exercise can show a failure that outlives its trigger. The
//! scenario declares it (`[[incident]]`); `PUT /admin/incident` begins it now,
//! `workshop check` begins it inside its own window, and `serve --incidents loop`
//! begins it again and again; `/stats.incident` shows the one in force.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::settings::SettingsUpdate;

/// The longest an incident may last or wait to begin, and its loop's period.
pub const MAX_INCIDENT_SPAN: Duration = Duration::from_secs(3600);

/// One incident of a scenario, as its file says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Incident {
    /// What happens, in words (no spoilers: what a user would see).
    pub summary: String,
    /// When it begins: after the start of `workshop check`'s load, or of the
    /// server with `--incidents loop`.
    #[serde(with = "crate::value::field")]
    pub at: Duration,
    /// How long its settings stay in force.
    #[serde(with = "crate::value::field")]
    pub lasts: Duration,
    /// With `--incidents loop`: from one beginning to the next.
    #[serde(with = "crate::value::field", default = "default_every")]
    pub every: Duration,
    /// The settings in force while it lasts, laid over the ones in force.
    pub config: SettingsUpdate,
}

fn default_every() -> Duration {
    Duration::from_secs(60)
}

impl Incident {
    /// Why it cannot run, if it cannot: spans out of bounds, an empty change, or
    /// a change that needs a restart (an incident is applied live).
    pub fn problem(&self) -> Option<String> {
        if self.lasts.is_zero() {
            return Some("`lasts` must be more than 0".into());
        }
        for (name, span) in [
            ("at", self.at),
            ("lasts", self.lasts),
            ("every", self.every),
        ] {
            if span > MAX_INCIDENT_SPAN {
                return Some(format!(
                    "`{name}` is over the most an incident may take (1h)"
                ));
            }
        }
        if self.every < self.lasts {
            return Some(
                "`every` is shorter than `lasts`: the next would begin before this one ends".into(),
            );
        }
        if self.config.keys().is_empty() {
            return Some("its `config` changes nothing".into());
        }
        None
    }
}

/// `/stats.incident`: the incident in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IncidentStatus {
    /// Incidents begun since the server started, this one included (probe
    /// incident-start's arg0).
    pub seq: u64,
    pub summary: String,
    /// The settings it put in force (the values before it come back at its end).
    pub config: SettingsUpdate,
    pub lasts_ms: u64,
    /// How long it has been in force.
    pub elapsed_ms: u64,
}
