//! The exercise pages say what the code does. Every bundled scenario has its page,
//! docs/workshop/NN-NAME.md, carrying its ticket word for word, its world, its
//! load, its win condition, naming every fix, and holding a figures block made by
//! `workshop figures` with a table per fix. That the figures still hold is
//! measured in tests/suite/workshop/exercises.rs, with the exercise's whole-machine run.

use crate::common;

use std::process::Command;

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
            let line = format!("- {} {bound}", c.metric);
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
            // Under each fix's bounds, its comparison: every figure
            // `compare` reads, each with a verdict.
            let compared: Vec<&str> = table.compared.iter().map(|c| c.figure.as_str()).collect();
            let figures: Vec<String> = simulator_clients::compare::FIGURES
                .iter()
                .map(|f| f.name())
                .collect();
            assert_eq!(compared, figures, "{}: {}", scenario.name, table.name);
            for c in &table.compared {
                assert!(
                    ["better", "worse", "~"].contains(&c.verdict.as_str()) && c.change.is_finite(),
                    "{}: {}: {c:?}",
                    scenario.name,
                    table.name
                );
            }
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

/// Whether `word` stands in `text` as words of their own, in any case: not
/// inside a longer word, so `lock` is not found in `block` nor `SYN` in `SYNC`.
pub(super) fn stands_in(text: &str, word: &str) -> bool {
    let (text, word) = (text.to_lowercase(), word.to_lowercase());
    let joins = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    text.match_indices(word.as_str()).any(|(at, _)| {
        !joins(text[..at].chars().next_back()) && !joins(text[at + word.len()..].chars().next())
    })
}

/// The prose of a page's Markdown: without its code (indented blocks, fenced
/// blocks, `spans`), its HTML comments and its links' and pictures' targets.
/// Code is what the attendee runs and what it prints; the prose is what the
/// page tells them.
fn prose(markdown: &str) -> String {
    let mut text = String::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !(fenced || line.starts_with("    ") || line.starts_with('\t')) {
            text.push_str(line);
            text.push('\n');
        }
    }
    // A span of code may run over a line's end.
    let text = cut_between(&text, "`", "`", "");
    let text = cut_between(&text, "<!--", "-->", "");
    // `](target)`: the target is a file's name, not what the page says.
    cut_between(&text, "](", ")", "]")
}

/// `text` with every part from `open` to the next `close` put as `kept`.
fn cut_between(text: &str, open: &str, close: &str, kept: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(open) {
        out.push_str(&rest[..at]);
        out.push_str(kept);
        let after = &rest[at + open.len()..];
        rest = after
            .find(close)
            .map_or("", |end| &after[end + close.len()..]);
    }
    out.push_str(rest);
    out
}

/// The cause's words and every fix's name found in `text`.
pub(super) fn causes_told(scenario: &scenario::Scenario, text: &str) -> Vec<String> {
    let fixes = scenario.fixes.iter().map(|f| &f.name);
    scenario
        .cause_words
        .iter()
        .chain(fixes)
        .chain(std::iter::once(&scenario.name))
        .filter(|word| stands_in(text, word))
        .cloned()
        .collect()
}

#[test]
fn no_exercise_is_named_or_titled_or_ticketed_by_its_cause() {
    let mut found = Vec::new();
    for s in scenario::bundled().unwrap() {
        let page = page_text(&s);
        let title = page.lines().next().unwrap_or_default();
        assert_eq!(
            title,
            format!("# Exercise {}: {}", number_of(&s), s.visible_name()),
            "{}: the page's title",
            s.name
        );
        for (what, text) in [
            ("name", s.visible_name().replace('-', " ")),
            ("headline", s.headline.clone()),
            ("ticket", s.ticket.clone()),
            ("drill's complaint", s.complaint.clone()),
        ] {
            let told = causes_told(&s, &text);
            if !told.is_empty() {
                found.push(format!("{}: its {what} says {}", s.name, told.join(", ")));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

fn number_of(s: &scenario::Scenario) -> usize {
    1 + scenario::names().iter().position(|n| *n == s.name).unwrap()
}

#[test]
fn workshop_list_and_its_markdown_name_no_cause() {
    let listed = Command::new(common::BIN)
        .args(["workshop", "list"])
        .output()
        .unwrap();
    assert!(listed.status.success());
    let listed = String::from_utf8(listed.stdout).unwrap();
    let markdown = system_simulator::workshop::markdown_list().unwrap();
    for s in scenario::bundled().unwrap() {
        for (what, text) in [("workshop list", &listed), ("--markdown", &markdown)] {
            let line = text
                .lines()
                .find(|l| l.contains(s.visible_name()))
                .unwrap_or_else(|| panic!("{what} lacks {}", s.visible_name()));
            let told = causes_told(&s, line);
            assert!(told.is_empty(), "{what}: {line:?} says {}", told.join(", "));
        }
    }
}

#[test]
fn no_page_tells_its_cause_in_words_above_the_hints() {
    let mut found = Vec::new();
    for s in scenario::bundled().unwrap() {
        let page = page_text(&s);
        let above = &page[..page.find("<summary>Hint").unwrap_or(page.len())];
        let told = causes_told(&s, &read_as_shown(above, &condition_lines(&s)));
        if !told.is_empty() {
            found.push(format!(
                "{}: above the first hint: {}",
                s.visible_name(),
                told.join(", ")
            ));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The win condition's lines as its page writes them (`- metric below 20.0`).
fn condition_lines(s: &scenario::Scenario) -> Vec<String> {
    s.check
        .iter()
        .map(|c| {
            let bound = match (c.below, c.above) {
                (Some(b), _) => format!("below {b:?}"),
                (_, Some(a)) => format!("above {a:?}"),
                _ => unreachable!("parse refuses a condition without a bound"),
            };
            format!("- {} {bound}", c.metric)
        })
        .collect()
}

/// What a reader is shown of `markdown`: its prose, its code spans, and the
/// blocks marked `<!-- output -->` (what a command printed); not the commands
/// themselves (what the attendee runs), the comments, the links' targets, or
/// the win condition's `lines`, which name what `workshop check` prints.
fn read_as_shown(markdown: &str, lines: &[String]) -> String {
    let mut text = String::new();
    let (mut fenced, mut output, mut last_marker) = (false, false, false);
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            output = fenced && last_marker;
            continue;
        }
        let in_block = fenced || line.starts_with("    ") || line.starts_with('\t');
        if !in_block && !line.trim().is_empty() {
            output = false;
            last_marker = line.trim() == "<!-- output -->";
            if !lines.iter().any(|l| l == line.trim()) {
                text.push_str(line);
                text.push('\n');
            }
            continue;
        }
        if in_block && (output || last_marker) {
            output = true;
            text.push_str(line);
            text.push('\n');
        }
    }
    let text = cut_between(&text, "<!--", "-->", "");
    let text = cut_between(&text, "](", ")", "]");
    spans_shown(&text)
}

/// `text` with its code spans as shown, but for the ones that name a command
/// or a file the attendee runs or reads (`trace NAME`, `NAME.bt`, a path, a
/// URL): what they type, not what the page tells them.
fn spans_shown(text: &str) -> String {
    let runs = |span: &str| {
        let span = span.trim();
        [
            "sudo ",
            "cargo ",
            "curl ",
            "system-simulator ",
            "trace ",
            "scripts/",
            "tools/",
            "docs/",
            "/",
            "http",
        ]
        .iter()
        .any(|p| span.starts_with(p))
            || span.ends_with(".bt")
            || span.ends_with(".d")
    };
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        // Odd parts are inside a span.
        if i % 2 == 0 || !runs(part) {
            out.push_str(part);
        }
        out.push(' ');
    }
    out
}

#[test]
fn what_is_shown_keeps_output_and_spans_and_leaves_out_commands() {
    let page = "Shown `span` here, not `trace ranked` nor `ranked.bt`.\n\n    command line\n\n\
                <!-- output -->\n\n    printed line\n\n- metric below 1.0\n<!-- note -->\n";
    let shown = read_as_shown(page, &["- metric below 1.0".to_owned()]);
    for kept in ["span", "printed line", "Shown"] {
        assert!(shown.contains(kept), "{kept}: {shown}");
    }
    for gone in ["command line", "metric", "note", "ranked"] {
        assert!(!shown.contains(gone), "{gone}: {shown}");
    }
}

#[test]
fn prose_leaves_out_code_comments_and_link_targets() {
    let page = "Told `hidden` here, `over\na line`.\n\n    code line\n<!-- note -->kept\n\
                ```\nfenced\n```\n![alt](live/x.png) and [a link](y.md)\n";
    let told = prose(page);
    for gone in [
        "hidden",
        "over",
        "a line",
        "code line",
        "note",
        "fenced",
        "x.png",
        "y.md",
    ] {
        assert!(!told.contains(gone), "{gone}: {told}");
    }
    for kept in ["Told", "here", "kept", "alt", "a link"] {
        assert!(told.contains(kept), "{kept}: {told}");
    }
    assert!(stands_in("the Mutex is held", "mutex"));
    assert!(!stands_in("a blocked request", "lock"));
    assert!(stands_in("delayed-ACK timer", "delayed-ACK"));
}

/// An attendee reads a page top down: what passes comes before the first hint,
/// and everything after the solution is folded, so scrolling to the pass bar
/// or past the hints shows nothing of the cause.
#[test]
fn every_page_puts_its_pass_bar_before_the_hints_and_folds_what_follows_the_solution() {
    let mut found = Vec::new();
    for s in scenario::bundled().unwrap() {
        let page = page_text(&s);
        let at = |what: &str| page.find(what);
        match (at("## The win condition\n"), at("<summary>Hint")) {
            (Some(pass), Some(hint)) if pass < hint => {}
            _ => found.push(format!(
                "{}: the win condition is not above the hints",
                s.name
            )),
        }
        let Some(solution) = at("## Solution") else {
            found.push(format!("{}: no solution", s.name));
            continue;
        };
        let after = &page[solution..];
        for (i, section) in after.split("\n## ").enumerate() {
            if i > 0
                && !section
                    .split_once('\n')
                    .is_some_and(|(_, body)| body.trim_start().starts_with("<details>"))
            {
                let title = section.lines().next().unwrap_or_default();
                found.push(format!("{}: \"{title}\" is not folded", s.name));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Issue 99: every scenario file states its margins on the release build an
/// attendee runs beside the debug build's (`tools/margins.py
/// --write-release`), and each of its conditions has its row there.
#[test]
fn every_scenario_file_states_its_margins_on_the_release_build() {
    let mut missing = Vec::new();
    for s in scenario::bundled().unwrap() {
        let path = format!("{}/scenarios/{}.toml", env!("CARGO_MANIFEST_DIR"), s.name);
        let text = std::fs::read_to_string(&path).unwrap();
        let Some(at) = text.find("# Margins on the release build (") else {
            missing.push(format!("{}: no release paragraph", s.name));
            continue;
        };
        let paragraph: String = text[at..]
            .lines()
            .take_while(|l| l.starts_with('#'))
            .map(|l| l.trim_start_matches('#').trim())
            .collect::<Vec<_>>()
            .join(" ");
        for c in &s.check {
            let bound = match (c.below, c.above) {
                (Some(b), _) => format!("< {b}"),
                (_, Some(a)) => format!("> {a}"),
                _ => unreachable!("a condition has one bound"),
            };
            if !paragraph.contains(&format!("{bound}:")) {
                missing.push(format!("{}: no row for `{} {bound}`", s.name, c.metric));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
