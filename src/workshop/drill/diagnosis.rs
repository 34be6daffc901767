//! A drill's diagnosis judged: the cause the attendee names against the one
//! drawn, right, partly right or wrong.
//!
//! The names are the causes' own (`scenarios/NAME.toml`'s `name`, the words
//! each exercise's solution taught), their exercises' names, or "none" for a
//! service with nothing wrong. Partial credit follows ITBench's distance to
//! the root cause, in one step: another cause of the same resource (the
//! scenario's `resource`: the CPU, the runtime, the store's path, ...) is
//! partly right, anything else is wrong. "None" is right only when nothing
//! was drawn, and never partly right.

use std::fmt;

use simulator_service::scenario::{self, Scenario};

use super::draw::NOTHING;

/// How a diagnosis scored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Score {
    Right,
    /// Another cause of the drawn cause's resource, named here.
    Partial {
        resource: String,
    },
    Wrong,
}

impl fmt::Display for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Score::Right => f.write_str("right"),
            Score::Partial { resource } => {
                write!(
                    f,
                    "partly right: the right resource ({resource}), another cause"
                )
            }
            Score::Wrong => f.write_str("wrong"),
        }
    }
}

/// The cause a diagnosis names: a bundled scenario, or none. A name that is
/// neither is refused with the list (`drill causes`).
pub fn named(words: &str) -> anyhow::Result<Option<Scenario>> {
    let words = words.trim();
    if words.eq_ignore_ascii_case(NOTHING) || words.eq_ignore_ascii_case("nothing") {
        return Ok(None);
    }
    match scenario::bundled_named(words)? {
        Some(found) => Ok(Some(found)),
        None => anyhow::bail!(
            "no cause is called `{words}`: name one of {} (or {NOTHING}); `system-simulator drill causes` lists them by resource",
            scenario::names().join(", ")
        ),
    }
}

/// How `named` scores against `drawn` (`None` on either side: nothing wrong).
pub fn score(drawn: Option<&Scenario>, named: Option<&Scenario>) -> Score {
    match (drawn, named) {
        (None, None) => Score::Right,
        (Some(d), Some(n)) if d.name == n.name => Score::Right,
        (Some(d), Some(n)) if !d.resource.is_empty() && d.resource == n.resource => {
            Score::Partial {
                resource: d.resource.clone(),
            }
        }
        _ => Score::Wrong,
    }
}

/// The causes by resource, as `drill causes` prints them: the vocabulary of
/// a diagnosis, with nothing that tells which was drawn.
pub fn vocabulary() -> anyhow::Result<String> {
    use std::fmt::Write;
    let mut by_resource: Vec<(String, Vec<String>)> = Vec::new();
    for s in scenario::bundled()? {
        let names = format!("{} ({})", s.name, s.visible_name());
        match by_resource.iter_mut().find(|(r, _)| *r == s.resource) {
            Some((_, list)) => list.push(names),
            None => by_resource.push((s.resource.clone(), vec![names])),
        }
    }
    let mut out = String::from("a diagnosis names one cause (or its exercise), or none:\n");
    for (resource, names) in by_resource {
        writeln!(out, "  {resource}: {}", names.join(", "))?;
    }
    writeln!(
        out,
        "  {NOTHING}: nothing is wrong\nanother cause of the same resource scores partly right"
    )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(name: &str) -> Scenario {
        scenario::bundled_named(name).unwrap().unwrap()
    }

    #[test]
    fn the_right_cause_scores_right_its_resources_neighbour_partial_and_others_wrong() {
        let drawn = cause("noisy-neighbour");
        assert_eq!(score(Some(&drawn), Some(&drawn)), Score::Right);
        assert_eq!(
            score(Some(&drawn), Some(&cause("cpu-quota"))),
            Score::Partial {
                resource: "cpu".into()
            }
        );
        assert_eq!(
            score(Some(&drawn), Some(&cause("descriptor-leak"))),
            Score::Wrong
        );
        assert_eq!(
            score(Some(&drawn), None),
            Score::Wrong,
            "none, when one was drawn"
        );
        assert_eq!(score(None, None), Score::Right, "none, when none was");
        assert_eq!(score(None, Some(&drawn)), Score::Wrong);
    }

    /// Every draw (the sixteen causes and none), as the seed that draws it:
    /// its own cause's name scores right, its resource's neighbour partly
    /// right, another resource's cause and a wrong "none" wrong.
    #[test]
    fn every_draw_scores_its_cause_right_its_neighbour_partial_and_the_rest_wrong() {
        use super::super::draw::{seed_for, Draw};
        let all = scenario::bundled().unwrap();
        let mut partials = 0;
        for answer in scenario::names().into_iter().chain([NOTHING]) {
            let draw = Draw::of(&seed_for(answer).unwrap()).unwrap();
            let drawn = draw.cause.as_ref();
            let own = named(answer).unwrap();
            assert_eq!(score(drawn, own.as_ref()), Score::Right, "{answer}");
            let Some(d) = drawn else {
                for s in &all {
                    assert_eq!(score(None, Some(s)), Score::Wrong, "none drawn, {}", s.name);
                }
                continue;
            };
            if let Some(neighbour) = all
                .iter()
                .find(|s| s.resource == d.resource && s.name != d.name)
            {
                partials += 1;
                assert_eq!(
                    score(drawn, Some(neighbour)),
                    Score::Partial {
                        resource: d.resource.clone()
                    },
                    "{answer} against {}",
                    neighbour.name
                );
            }
            let elsewhere = all.iter().find(|s| s.resource != d.resource).unwrap();
            assert_eq!(score(drawn, Some(elsewhere)), Score::Wrong, "{answer}");
            assert_eq!(score(drawn, None), Score::Wrong, "{answer}: none");
        }
        // Thirteen causes share their resource with another (clients, memory
        // and descriptors have one each).
        assert_eq!(partials, 13);
    }

    #[test]
    fn a_diagnosis_names_a_cause_its_exercise_or_none_and_nothing_else() {
        assert_eq!(
            named("noisy-neighbour").unwrap().unwrap().name,
            "noisy-neighbour"
        );
        assert_eq!(
            named("batch-jobs-moved-in").unwrap().unwrap().name,
            "noisy-neighbour"
        );
        assert!(named(" None ").unwrap().is_none());
        let refused = named("the network").unwrap_err().to_string();
        assert!(
            refused.contains("no cause is called `the network`"),
            "{refused}"
        );
    }

    #[test]
    fn every_cause_has_a_resource_another_cause_shares_or_stands_alone_and_a_complaint() {
        let all = scenario::bundled().unwrap();
        let known = [
            "admission",
            "persistence",
            "runtime",
            "cpu",
            "network",
            "memory",
            "descriptors",
            "clients",
        ];
        for s in &all {
            assert!(
                known.contains(&s.resource.as_str()),
                "{}: resource `{}`",
                s.name,
                s.resource
            );
            assert!(
                !s.complaint.trim().is_empty(),
                "{} has no complaint",
                s.name
            );
        }
        let text = vocabulary().unwrap();
        for s in &all {
            assert!(text.contains(&s.name), "{text}");
        }
    }
}
