//! Scenarios: named bundles of settings, one TOML file each under `scenarios/`.
//!
//! A scenario is data: its `config` is a settings update laid over the defaults
//! (the same keys as a `--config` file), its `fixes` are `PUT /admin/config`
//! bodies, its `load` the sim-clients arguments that show its symptom, read once
//! into a typed [`Load`] that the model, the demo and the check use. The
//! bundled files are compiled in, so `serve --scenario NAME` works from any
//! directory; `serve --scenario FILE` reads a copy a user edited. Adding a
//! scenario is adding a file to `scenarios/` and a line to [`BUNDLED`] (a test
//! checks the two agree).

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use simulator_api::{Fix, Incident, Load, ScenarioInfo, Settings, SettingsUpdate};

/// The scenario `serve` starts in unless told otherwise: the original simulator.
pub const DEFAULT: &str = "semaphore-starvation";

/// Every bundled scenario, by name, in workshop order.
pub const BUNDLED: &[(&str, &str)] = &[
    (
        "semaphore-starvation",
        include_str!("../../scenarios/semaphore-starvation.toml"),
    ),
    (
        "sequential-persist",
        include_str!("../../scenarios/sequential-persist.toml"),
    ),
    (
        "blocking-runtime",
        include_str!("../../scenarios/blocking-runtime.toml"),
    ),
    (
        "spawn-per-request",
        include_str!("../../scenarios/spawn-per-request.toml"),
    ),
    (
        "size-variance",
        include_str!("../../scenarios/size-variance.toml"),
    ),
    (
        "slow-backend",
        include_str!("../../scenarios/slow-backend.toml"),
    ),
    (
        "retry-storm",
        include_str!("../../scenarios/retry-storm.toml"),
    ),
    ("cpu-quota", include_str!("../../scenarios/cpu-quota.toml")),
    (
        "accept-queue",
        include_str!("../../scenarios/accept-queue.toml"),
    ),
    (
        "nagle-delayed-ack",
        include_str!("../../scenarios/nagle-delayed-ack.toml"),
    ),
    (
        "cpu-hot-spot",
        include_str!("../../scenarios/cpu-hot-spot.toml"),
    ),
    (
        "periodic-stall",
        include_str!("../../scenarios/periodic-stall.toml"),
    ),
    (
        "cold-cache",
        include_str!("../../scenarios/cold-cache.toml"),
    ),
    (
        "noisy-neighbour",
        include_str!("../../scenarios/noisy-neighbour.toml"),
    ),
    (
        "remembered-replies",
        include_str!("../../scenarios/remembered-replies.toml"),
    ),
    (
        "descriptor-leak",
        include_str!("../../scenarios/descriptor-leak.toml"),
    ),
];

/// A scenario, as its file says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub seed: String,
    pub summary: String,
    pub symptom: String,
    /// The load that shows the symptom, written as sim-clients arguments.
    pub load: Load,
    /// The bundled scripts its exercise page traces with, in the page's order
    /// (`doctor` tells each attendee how each will run on their machine).
    #[serde(default)]
    pub scripts: Vec<String>,
    /// The exercise's name, as an attendee sees it: `workshop list`, `start` and
    /// `check`, the banner, the live view and `/stats` of a server that hides
    /// its answers, the room, `doctor`, its page's title and file. It carries
    /// the symptom, never the cause; `name` stays the cause's, for the operator
    /// (`scenarios`, `serve --scenario`) and the facilitator. Either starts it.
    /// A file that gives none is shown by its `name`.
    #[serde(default)]
    pub exercise: String,
    /// Words that name the cause or its mechanism, which an attendee must not
    /// read before the hints: tests/suite/workshop/workshop_pages.rs holds the exercise's
    /// name, its headline, its ticket and its page above the first hint to them.
    /// Never served.
    #[serde(default)]
    pub cause_words: Vec<String>,
    /// The workshop ticket in one line, for `workshop list`.
    #[serde(default)]
    pub headline: String,
    /// The workshop ticket: the symptom as a user would report it, no spoilers.
    #[serde(default)]
    pub ticket: String,
    /// The drill's ticket when this cause is drawn: the symptom in a
    /// customer's words that fit several causes (vaguer than `ticket`, which
    /// an attendee of the exercises would recognise). Never served with the
    /// scenario's name.
    #[serde(default)]
    pub complaint: String,
    /// The resource the cause lives in (`cpu`, `memory`, `runtime`, ...): a
    /// drill's diagnosis that names another cause of the same resource is
    /// partly right.
    #[serde(default)]
    pub resource: String,
    /// The win condition `workshop check` measures under the load: every
    /// condition must hold.
    #[serde(default)]
    pub check: Vec<Condition>,
    #[serde(default)]
    pub config: SettingsUpdate,
    #[serde(default)]
    pub fixes: Vec<Fix>,
    /// The trigger the exercise controls: a change of settings the server
    /// applies at a set time for a set time and then puts back.
    #[serde(default)]
    pub incident: Vec<Incident>,
}

/// One condition of the win condition, as the file writes it: a metric's name
/// and the bound its figure must keep. The engine never measures one: `workshop
/// check` reads the name in its list of metrics (`src/workshop/check/metrics/`),
/// which says what each reads and how it is computed.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// The metric's name: `p99_ms`, `ok_share`, ...
    pub metric: String,
    /// The figure must be below this...
    #[serde(default)]
    pub below: Option<f64>,
    /// ... or above this (exactly one of the two).
    #[serde(default)]
    pub above: Option<f64>,
}

/// Why a scenario cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("no bundled scenario is called `{0}`; bundled: {list}", list = names().join(", "))]
    Unknown(String),
    #[error("cannot read scenario file {0}: {1}")]
    Read(String, String),
    #[error("scenario {0}: {1}")]
    Invalid(String, String),
}

/// The names of the bundled scenarios.
pub fn names() -> Vec<&'static str> {
    BUNDLED.iter().map(|(name, _)| *name).collect()
}

/// How long a run goes on after an incident's end: 15 s to recover and 10 s
/// to show that it stays recovered (`workshop check` judges the recovery on it).
pub const AFTER_INCIDENT: Duration = Duration::from_secs(25);

impl Scenario {
    /// How long a run must last to see the scenario's incident and what follows
    /// it: until [`AFTER_INCIDENT`] after its end (zero without an incident).
    pub fn incident_window(&self) -> Duration {
        self.incident
            .first()
            .map_or(Duration::ZERO, |i| i.at + i.lasts + AFTER_INCIDENT)
    }

    /// Its seed as the listings print it: `seed 003`, or `no seed` for an
    /// exercise that comes from none (`seed = "none"`).
    pub fn seed_words(&self) -> String {
        match self.seed.as_str() {
            "none" => "no seed".into(),
            seed => format!("seed {seed}"),
        }
    }

    /// The name an attendee sees: the exercise's, or `name` where it has none.
    pub fn visible_name(&self) -> &str {
        match self.exercise.as_str() {
            "" => &self.name,
            exercise => exercise,
        }
    }

    /// A bundled scenario by its name or its exercise's, or a file when
    /// `name_or_path` looks like a path.
    pub fn load(name_or_path: &str) -> Result<Self, ScenarioError> {
        if let Some(found) = bundled_named(name_or_path)? {
            return Ok(found);
        }
        let path = Path::new(name_or_path);
        if name_or_path.ends_with(".toml") || name_or_path.contains('/') {
            let text = std::fs::read_to_string(path)
                .map_err(|e| ScenarioError::Read(name_or_path.into(), e.to_string()))?;
            return Self::parse(name_or_path, &text);
        }
        Err(ScenarioError::Unknown(name_or_path.into()))
    }

    /// The default scenario, the original simulator.
    pub fn original() -> Self {
        Self::load(DEFAULT)
            .unwrap_or_else(|e| panic!("the bundled default scenario is broken: {e}"))
    }

    /// Parses and checks a scenario: its settings must be valid, its load must be
    /// a load's arguments (read and checked as it parses, `Load::parse`), and
    /// every fix must be a valid live change from its settings.
    pub fn parse(origin: &str, text: &str) -> Result<Self, ScenarioError> {
        let invalid = |reason: String| ScenarioError::Invalid(origin.into(), reason);
        let scenario: Scenario = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let settings = scenario.settings();
        settings.validate().map_err(|e| invalid(e.to_string()))?;
        for condition in &scenario.check {
            if condition.below.is_some() == condition.above.is_some() {
                return Err(invalid(format!(
                    "check on `{}`: give exactly one of below and above",
                    condition.metric
                )));
            }
        }
        for incident in &scenario.incident {
            if let Some(problem) = incident.problem() {
                return Err(invalid(format!(
                    "incident `{}`: {problem}",
                    incident.summary
                )));
            }
            settings
                .changed_live(&incident.config)
                .map_err(|e| invalid(format!("incident `{}`: {e}", incident.summary)))?;
        }
        for fix in &scenario.fixes {
            scenario
                .load
                .with_changes(&fix.load)
                .map_err(|e| invalid(format!("fix {}: its load: {e}", fix.name)))?;
            for clients in [1, 1000] {
                let body = fix
                    .config_for(clients)
                    .map_err(|e| invalid(format!("fix {}: {e}", fix.name)))?;
                settings
                    .changed_live(&body)
                    .map_err(|e| invalid(format!("fix {}: {e}", fix.name)))?;
            }
        }
        Ok(scenario)
    }

    /// The defaults with this scenario's settings laid over them.
    pub fn settings(&self) -> Settings {
        Settings::default().with(&self.config)
    }

    /// The think time the model assumes: the load's, or sim-clients' 1 s for an
    /// open loop, which has none.
    pub fn think_time(&self) -> Duration {
        self.load.think_time().unwrap_or(Duration::from_secs(1))
    }

    /// The scenario's load with a fix's client-side changes (none for a fix to
    /// the server alone). The scenario's parse checked every fix's, so this
    /// fails only for changes from elsewhere (`workshop check --client-change`).
    pub fn load_with(&self, change: &[String]) -> Result<Load, simulator_api::load::LoadError> {
        self.load.with_changes(change)
    }

    /// The entry of `GET /scenarios`.
    pub fn info(&self) -> ScenarioInfo {
        ScenarioInfo {
            name: self.name.clone(),
            seed: self.seed.clone(),
            summary: self.summary.clone(),
            symptom: self.symptom.clone(),
            load: self.load.words().to_vec(),
            fixes: self.fixes.clone(),
        }
    }
}

/// The bundled scenario called `name`, by its cause's name or its exercise's.
pub fn bundled_named(name: &str) -> Result<Option<Scenario>, ScenarioError> {
    if let Some((_, text)) = BUNDLED.iter().find(|(cause, _)| *cause == name) {
        return Scenario::parse(name, text).map(Some);
    }
    Ok(bundled()?.into_iter().find(|s| s.exercise == name))
}

/// Every bundled scenario, parsed.
pub fn bundled() -> Result<Vec<Scenario>, ScenarioError> {
    BUNDLED
        .iter()
        .map(|(name, text)| Scenario::parse(name, text))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_in_the_folder_is_bundled_under_its_own_name() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .map(|n| n.trim_end_matches(".toml").to_owned())
            .collect();
        files.sort();
        let mut bundled = names();
        bundled.sort();
        assert_eq!(files, bundled);
        for scenario in bundled_or_panic() {
            let on_disk =
                std::fs::read_to_string(dir.join(format!("{}.toml", scenario.name))).unwrap();
            assert_eq!(Scenario::parse("disk", &on_disk).unwrap(), scenario);
            assert!(
                !scenario.fixes.is_empty(),
                "{} offers no fix",
                scenario.name
            );
        }
    }

    #[test]
    fn every_exercise_has_a_name_of_its_own_that_starts_it_as_the_causes_does() {
        let all = bundled_or_panic();
        let causes = names();
        let mut seen = Vec::new();
        for s in &all {
            let shown = s.visible_name();
            assert!(
                !s.exercise.is_empty() && !causes.contains(&shown),
                "{}: an exercise's name of its own, not a cause's",
                s.name
            );
            assert!(!seen.contains(&shown), "{shown}: twice");
            seen.push(shown);
            assert!(!s.cause_words.is_empty(), "{}: no cause words", s.name);
            assert_eq!(&Scenario::load(shown).unwrap(), s);
            assert_eq!(&Scenario::load(&s.name).unwrap(), s);
        }
        // A file without an exercise's name is shown by its own.
        let plain = "name = \"mine\"\nseed = \"0\"\nsummary = \"\"\nsymptom = \"\"\nload = []\n";
        assert_eq!(
            Scenario::parse("test", plain).unwrap().visible_name(),
            "mine"
        );
    }

    fn bundled_or_panic() -> Vec<Scenario> {
        bundled().unwrap()
    }

    #[test]
    fn the_default_scenario_is_the_original_simulator() {
        let original = Scenario::original();
        // The defaults, with the original's timer (every other scenario's delays
        // are exact).
        assert_eq!(
            original.settings(),
            Settings {
                timer_tick: Duration::from_millis(1),
                ..Settings::default()
            }
        );
        assert_eq!(original.think_time(), Duration::from_secs(1));
        let fix = &original.fixes[0];
        assert_eq!(fix.config.permits, Some(8 * 135));
    }

    #[test]
    fn bad_scenarios_are_refused_with_the_reason() {
        assert!(matches!(
            Scenario::load("no-such"),
            Err(ScenarioError::Unknown(_))
        ));
        let base = "name = \"x\"\nseed = \"0\"\nsummary = \"\"\nsymptom = \"\"\nload = []\n";
        for (extra, needle) in [
            ("[config]\npermits = 0\n", "permits must be between 1"),
            ("[config]\npermitz = 1\n", "permitz"),
            ("[[fixes]]\nname = \"f\"\nsummary = \"\"\nconfig = { listen = \"127.0.0.1:1\" }\n", "restart"),
            ("[[fixes]]\nname = \"f\"\nsummary = \"\"\nconfig = {}\nper_client = { permitz = 8 }\n", "permitz"),
        ] {
            let err = Scenario::parse("test", &format!("{base}{extra}")).unwrap_err().to_string();
            assert!(err.contains(needle), "{extra}: {err}");
        }
        let bad_load = base.replace("load = []", "load = [\"--n\", \"lots\"]");
        let err = Scenario::parse("test", &bad_load).unwrap_err().to_string();
        assert!(
            err.contains("load = ")
                && err.contains("'lots' for '--n")
                && err.contains("whole number"),
            "{err}"
        );
    }
}
