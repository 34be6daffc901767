//! The drill's draw: which fault a seed gives, or none, and the scenario the
//! drill's server runs and its check judges (the drawn cause's world, load,
//! incident and win condition, under the drill's name and the complaint).
//!
//! The draw is a pure function of the seed, so a room whose facilitator gives
//! everyone one seed gets one fault, and a test can find the seed of each
//! cause. The hash is FNV-1a, a few lines in `dress.rs`: the standard
//! library's hashers may change between Rust releases and rand's seeded
//! generators between its versions, and a room mixes builds.

use anyhow::Context;
use simulator_service::scenario::{self, Scenario};

use super::dress;

/// The name the drill's server answers to: `/stats.scenario`, the banner, the
/// live view and the room all say this, whatever was drawn.
pub const NAME: &str = "drill";

/// The diagnosis of a service with nothing wrong.
pub const NOTHING: &str = "none";

/// The healthy service a draw of [`NOTHING`] serves: its world, its load, a
/// plausible complaint and a win condition it meets as it is.
const HEALTHY: &str = include_str!("healthy.toml");

/// What a seed drew.
#[derive(Debug, Clone)]
pub struct Draw {
    pub seed: String,
    /// The drawn cause's scenario, or `None` for a service with nothing wrong.
    pub cause: Option<Scenario>,
}

impl Draw {
    /// The fault `seed` draws: one of the bundled causes, or none, each as
    /// likely as another.
    pub fn of(seed: &str) -> anyhow::Result<Self> {
        let names = scenario::names();
        let pick = (dress::fnv1a(seed.as_bytes()) % (names.len() as u64 + 1)) as usize;
        let cause = match names.get(pick) {
            Some(name) => scenario::bundled_named(name)?,
            None => None,
        };
        Ok(Self {
            seed: seed.to_owned(),
            cause,
        })
    }

    /// The drawn cause's name, or [`NOTHING`].
    pub fn answer(&self) -> &str {
        self.cause.as_ref().map_or(NOTHING, |c| c.name.as_str())
    }

    /// The scenario the drill's server runs and its check judges: the drawn
    /// cause's (or the healthy service's) world, settings, load, incident and
    /// win condition, dressed as a production service (`dress.rs`), named
    /// [`NAME`], with the complaint for its ticket and nothing that names the
    /// cause: no fixes, no cause words, no summary of its own.
    pub fn scenario(&self) -> anyhow::Result<Scenario> {
        let mut drilled = match &self.cause {
            Some(cause) => cause.clone(),
            None => healthy()?,
        };
        let complaint = drilled.complaint.trim().to_owned();
        drilled.config = dress::production(&self.seed, &drilled.config);
        drilled.name = NAME.to_owned();
        drilled.exercise = NAME.to_owned();
        drilled.seed = "none".to_owned();
        drilled.headline = complaint.lines().next().unwrap_or_default().to_owned();
        drilled.summary.clone_from(&complaint);
        drilled.symptom.clone_from(&complaint);
        drilled.ticket = complaint;
        drilled.complaint.clear();
        drilled.resource.clear();
        drilled.cause_words.clear();
        drilled.fixes.clear();
        drilled.scripts = every_script()?;
        for incident in &mut drilled.incident {
            // Its summary names the trigger in the exercise's words.
            "something blipped".clone_into(&mut incident.summary);
        }
        Ok(drilled)
    }
}

/// The healthy service: the scenario of a draw of nothing.
pub fn healthy() -> anyhow::Result<Scenario> {
    Scenario::parse("the drill's healthy service", HEALTHY).context("the drill's healthy service")
}

/// Every bundled script any exercise traces with, in the exercises' order:
/// the drill lists them all, so the list says nothing of the draw.
fn every_script() -> anyhow::Result<Vec<String>> {
    let mut scripts: Vec<String> = Vec::new();
    for s in scenario::bundled()? {
        for script in s.scripts {
            if !scripts.contains(&script) {
                scripts.push(script);
            }
        }
    }
    Ok(scripts)
}

/// A seed for a drill started without one: two words anyone can read out to
/// a room, from the clock's nanoseconds.
pub fn fresh_seed() -> String {
    const WORDS: &[&str] = &[
        "amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron", "iris", "juniper",
        "kestrel", "lumen", "maple", "nimbus", "onyx", "plum", "quartz", "rowan", "sable", "tern",
    ];
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as usize ^ d.as_secs() as usize);
    format!(
        "{}-{}",
        WORDS[nanos % WORDS.len()],
        (nanos / WORDS.len()) % 100
    )
}

/// A seed that draws `answer` (a cause's name or [`NOTHING`]): the first of
/// `drill-0`, `drill-1`, ... that does. For tests and for a facilitator who
/// wants one fault for the room.
pub fn seed_for(answer: &str) -> anyhow::Result<String> {
    for n in 0..10_000 {
        let seed = format!("drill-{n}");
        if Draw::of(&seed)?.answer() == answer {
            return Ok(seed);
        }
    }
    anyhow::bail!("no seed among the first 10000 draws `{answer}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cause_and_nothing_is_drawn_and_a_seed_always_draws_the_same() {
        let mut answers: Vec<String> = scenario::names().iter().map(|n| (*n).to_owned()).collect();
        answers.push(NOTHING.to_owned());
        for answer in &answers {
            let seed = seed_for(answer).unwrap();
            assert_eq!(Draw::of(&seed).unwrap().answer(), answer);
        }
        // The hash itself is fixed: these are FNV-1a's published test values.
        assert_eq!(dress::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(dress::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        // Over many seeds each answer comes about as often as another.
        let mut counts = std::collections::HashMap::new();
        for n in 0..3400 {
            *counts
                .entry(Draw::of(&format!("s{n}")).unwrap().answer().to_owned())
                .or_insert(0) += 1;
        }
        assert_eq!(counts.len(), answers.len());
        assert!(
            counts.values().all(|&c| (120..=280).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn the_drilled_scenario_keeps_the_causes_world_and_check_under_the_drills_name() {
        for answer in scenario::names().into_iter().chain([NOTHING]) {
            let draw = Draw::of(&seed_for(answer).unwrap()).unwrap();
            let drilled = draw.scenario().unwrap();
            let cause = draw.cause.clone().unwrap_or_else(|| healthy().unwrap());
            assert_eq!(drilled.visible_name(), NAME);
            assert_eq!(drilled.check, cause.check, "{answer}");
            assert_eq!(drilled.load, cause.load, "{answer}");
            assert!(
                drilled
                    .settings()
                    .world_changes(&cause.settings())
                    .is_empty(),
                "{answer}: the dressing moved the world"
            );
            assert!(drilled.fixes.is_empty() && drilled.cause_words.is_empty());
            assert!(!drilled.ticket.is_empty(), "{answer} has no complaint");
        }
    }
}
