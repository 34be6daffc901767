//! The exercise pages say what the code does. Every bundled scenario has its page,
//! docs/workshop/NN-NAME.md, carrying its ticket word for word, its world, its
//! load, its win condition, naming every fix, and holding a figures block made by
//! `workshop figures` with a table per fix. That the figures still hold is
//! measured in tests/suite/exercises.rs, with the exercise's whole-machine run.

use crate::common;

use common::figures::{block_of, page_text, tables};
use simulator_service::scenario;
use system_simulator::workshop::figures::world_line;

fn words(text: &str) -> String {
    text.split_whitespace()
        .map(|w| w.trim_start_matches('>'))
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_exercise_has_its_page_with_its_ticket_fixes_and_figures() {
    for scenario in scenario::bundled().unwrap() {
        let page = page_text(&scenario);
        assert!(
            !scenario.ticket.trim().is_empty(),
            "{}: no ticket",
            scenario.name
        );
        assert!(
            words(&page).contains(&words(&scenario.ticket)),
            "{}: the page's ticket is not the scenario's",
            scenario.name
        );
        assert!(
            words(&page).contains(&words(&world_line(&scenario))),
            "{}: the page does not state the world as the scenario has it (`workshop figures {} --write`)",
            scenario.name,
            scenario.name
        );
        // The load the page runs is the one `workshop start` prints, duration and all.
        let load = format!(
            "cargo run --release -- clients {}",
            system_simulator::local::shell_line(scenario.load.words())
        );
        assert!(
            page.contains(&load),
            "{}: the page's load is not `{load}`",
            scenario.name
        );
        for c in &scenario.check {
            let bound = match (c.below, c.above) {
                (Some(b), _) => format!("below {b:?}"),
                (_, Some(a)) => format!("above {a:?}"),
                _ => unreachable!("parse refuses a condition without a bound"),
            };
            let metric = serde_json::to_value(c.metric).unwrap();
            let line = format!("- {} {bound}", metric.as_str().unwrap());
            assert!(
                page.contains(&line),
                "{}: the page lacks the condition `{line}`",
                scenario.name
            );
        }
        let measured = tables(block_of(&page));
        let names: Vec<&str> = measured.iter().map(|t| t.name.as_str()).collect();
        let fixes: Vec<&str> = scenario.fixes.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names, fixes,
            "{}: the page's figures cover every fix",
            scenario.name
        );
        for table in &measured {
            assert_eq!(
                table.rows.len(),
                scenario.check.len(),
                "{}: {}",
                scenario.name,
                table.name
            );
        }
    }
}

/// What an attendee reads before the first hint (the title, the ticket, how to
/// observe it): the words in it that give the lesson away. A fix's name or a
/// client flag a fix lays over the load or the tool a fix outside the service
/// runs, anywhere; a setting a fix changes, as a
/// setting is written (`` `key` ``, `key =`, `"key"`, `--key`), not as a live
/// view's badge reads (`permits 8/8`) or as an English word.
fn spoilers_above_the_hints(scenario: &scenario::Scenario, page: &str) -> Vec<String> {
    let above = &page[..page.find("<summary>Hint").unwrap_or(page.len())];
    let mut giveaways: Vec<String> = Vec::new();
    for fix in &scenario.fixes {
        giveaways.push(fix.name.clone());
        for key in fix.config.keys() {
            giveaways.push(format!("`{key}`"));
            giveaways.push(format!("{key} ="));
            giveaways.push(format!("\"{key}\""));
            giveaways.push(format!("--{}", key.replace('_', "-")));
        }
        giveaways.extend(fix.load.iter().filter(|w| w.starts_with("--")).cloned());
        // A fix outside the service: the tool it runs (`renice`, `chrt`).
        if fix.trade_off.is_none() {
            giveaways.extend(
                fix.outside
                    .iter()
                    .filter_map(|c| c.split_whitespace().next().map(str::to_owned)),
            );
        }
    }
    giveaways.sort();
    giveaways.dedup();
    let joins = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || "_-".contains(c));
    giveaways
        .into_iter()
        .filter(|word| {
            above.match_indices(word.as_str()).any(|(at, _)| {
                !joins(above[..at].chars().next_back())
                    && !joins(above[at + word.len()..].chars().next())
            })
        })
        .collect()
}

#[test]
fn no_page_names_its_fix_above_the_hints() {
    let mut found = Vec::new();
    for scenario in scenario::bundled().unwrap() {
        let page = page_text(&scenario);
        let ticket = page.find("## The ticket");
        let title_end = page.find('\n').unwrap_or(0);
        // The ticket first: nothing but the title above it.
        match ticket {
            Some(at) if page[title_end..at].trim().is_empty() => {}
            _ => found.push(format!(
                "{}: the ticket is not the first thing under the title",
                scenario.name
            )),
        }
        let spoilers = spoilers_above_the_hints(&scenario, &page);
        if !spoilers.is_empty() {
            found.push(format!(
                "{}: above the first hint: {}",
                scenario.name,
                spoilers.join(", ")
            ));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
