//! The pages held to the tree, for the kinds of fact that drift as the code
//! grows: the counts of exercises, scenarios and scripts written in words; the
//! repository paths a page cites; and the tables that must have a row for every
//! exercise (what runs on each OS, every bound's measured room). Each failure
//! names the page and what it says against what the tree has.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common;
use simulator_service::scenario;

const NUMBERS: [&str; 31] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "twenty-one",
    "twenty-two",
    "twenty-three",
    "twenty-four",
    "twenty-five",
    "twenty-six",
    "twenty-seven",
    "twenty-eight",
    "twenty-nine",
    "thirty",
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A number written in words or digits.
fn number(word: &str) -> Option<usize> {
    let word = word.to_lowercase();
    NUMBERS
        .iter()
        .position(|n| *n == word)
        .or_else(|| word.parse().ok())
}

/// Every "N exercises", "N more scenarios", "N scripts" in `text` with N of
/// ten or more (smaller ones are parts: "three kernel-side exercises"), as
/// (N, "more " or "", the noun).
fn counts_in(text: &str) -> Vec<(usize, bool, String)> {
    // Words as a sentence runs: a number ends its word (no `150`) before it),
    // its noun may end the sentence.
    let words: Vec<&str> = text.split_whitespace().collect();
    let bare = |w: &str| {
        w.trim_start_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    let mut found = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if w.ends_with(|c: char| !c.is_alphanumeric()) {
            continue;
        }
        let Some(n) = number(&bare(w)).filter(|n| *n >= 10) else {
            continue;
        };
        let more = words.get(i + 1).is_some_and(|m| *m == "more");
        let noun = words.get(i + 1 + usize::from(more)).map(|n| {
            n.trim_end_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        });
        if let Some(noun) =
            noun.filter(|n| ["exercises", "scenarios", "scripts"].contains(&n.as_str()))
        {
            found.push((n, more, noun));
        }
    }
    found
}

/// What the tree has of each noun.
fn tree_counts() -> (usize, usize) {
    let exercises = scenario::bundled().unwrap().len();
    let scripts = std::fs::read_dir(repo().join("scripts"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "bt")
        })
        .count();
    (exercises, scripts)
}

fn count_errors(page: &str, text: &str, (exercises, scripts): (usize, usize)) -> Vec<String> {
    counts_in(text)
        .into_iter()
        .filter_map(|(n, more, noun)| {
            let has = match noun.as_str() {
                "scripts" => scripts,
                _ if more => exercises - 1,
                _ => exercises,
            };
            (n != has).then(|| {
                let more = if more { "more " } else { "" };
                format!("{page}: \"{n} {more}{noun}\", the tree has {has}")
            })
        })
        .collect()
}

#[test]
fn counts_named_in_prose_are_the_trees() {
    let tree = tree_counts();
    let found: Vec<String> = common::pages_read()
        .iter()
        .flat_map(|(page, text)| count_errors(page, text, tree))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_count_changed_by_hand_is_found() {
    let tree = (16, 20);
    assert!(count_errors(
        "p",
        "Sixteen exercises, twenty scripts, fifteen more scenarios.",
        tree
    )
    .is_empty());
    assert_eq!(count_errors("p", "Fourteen more scenarios", tree).len(), 1);
    assert_eq!(count_errors("p", "all eighteen scripts", tree).len(), 1);
    assert!(count_errors("p", "three kernel-side exercises", tree).is_empty());
    assert!(count_errors("p", "--client-timeout 150`) Scripts", tree).is_empty());
}

/// The first folders of the paths a page may cite.
const ROOTS: [&str; 14] = [
    "scripts/",
    "tools/",
    "docs/",
    "src/",
    "tests/",
    "deploy/",
    "scenarios/",
    "assets/",
    "simulator-api/",
    "simulator-service/",
    "simulator-clients/",
    "shared/",
    ".ci/",
    ".cargo/",
];

/// The repository paths `text` cites: words that begin with one of [`ROOTS`]
/// (or `../` before one), without a placeholder (`NN-NAME.md`, `*`, `...`).
fn cited_paths(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for word in text.split(|c: char| c.is_whitespace() || "`'\"()[],;<>|".contains(c)) {
        let word = word.trim_start_matches("../");
        let word = word.trim_end_matches(['.', ':']);
        let Some(root) = ROOTS.iter().find(|r| word.starts_with(**r)) else {
            continue;
        };
        let rest = &word[root.len()..];
        let placeholder = word.contains('*')
            || word.contains("..")
            || word.contains('$')
            || word.contains('{')
            || word.contains('=')
            || rest.split(['/', '.', '-']).any(|part| {
                part.len() > 1 && part.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            });
        // `target/` is a build's, not the repository's; `src/` of a crate in
        // a folder of its own is found by its full path.
        if !placeholder && !rest.is_empty() {
            found.insert(word.split('#').next().unwrap_or(word).to_owned());
        }
    }
    found
}

#[test]
fn every_repository_path_a_page_cites_exists() {
    let mut missing = Vec::new();
    for (page, text) in common::pages_read() {
        for path in cited_paths(&text) {
            let at_root = repo().join(&path);
            let beside = repo().join(&page).parent().unwrap().join(&path);
            if !at_root.exists() && !beside.exists() {
                missing.push(format!("{page}: {path}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths the pages cite that the repository does not have:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_path_changed_by_hand_is_found_and_placeholders_are_not() {
    let cited = cited_paths(
        "Run `scripts/trace count`, read docs/tracing.md, (tests/suite/nope.rs), \
         shared/seeds/003, docs/workshop/NN-NAME.md and scripts/*.bt.",
    );
    let cited: Vec<&str> = cited.iter().map(String::as_str).collect();
    assert_eq!(
        cited,
        [
            "docs/tracing.md",
            "scripts/trace",
            "shared/seeds/003",
            "tests/suite/nope.rs"
        ]
    );
}

/// The exercises' numbers a table's first column names: `8 cpu-quota`,
/// `1-7, 11-13 (...)`.
fn numbers_named(cell: &str) -> BTreeSet<usize> {
    let mut found = BTreeSet::new();
    let head = cell.split('(').next().unwrap_or(cell);
    for part in head.split(',') {
        let part = part.split_whitespace().next().unwrap_or("");
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    found.extend(a..=b);
                }
            }
            None => found.extend(part.parse::<usize>().ok()),
        }
    }
    found
}

/// The first cells of the table rows of `text` under heading `heading`, up to
/// the next heading of the same level.
fn first_cells(text: &str, heading: &str) -> Vec<String> {
    let level = heading.chars().take_while(|c| *c == '#').count();
    let start = text.find(heading).unwrap_or_else(|| panic!("no {heading}"));
    let after = &text[start + heading.len()..];
    after
        .lines()
        .skip(1)
        .take_while(|l| {
            let hashes = l.chars().take_while(|c| *c == '#').count();
            hashes == 0 || hashes > level || !l[hashes..].starts_with(' ')
        })
        .filter(|l| l.starts_with('|') && !l.starts_with("| ---"))
        .filter_map(|l| l.split('|').nth(1).map(|c| c.trim().to_owned()))
        .collect()
}

#[test]
fn the_os_table_and_the_appendix_cover_every_exercise() {
    let reference = std::fs::read_to_string(repo().join("docs/workshop/reference.md")).unwrap();
    let bundled = scenario::bundled().unwrap();
    let every: BTreeSet<usize> = (1..=bundled.len()).collect();
    let os: BTreeSet<usize> = first_cells(&reference, "### What runs where")
        .iter()
        .flat_map(|c| numbers_named(c))
        .collect();
    assert_eq!(
        every.difference(&os).collect::<Vec<_>>(),
        Vec::<&usize>::new(),
        "exercises without a row in reference.md's \"What runs where\""
    );
    let appendix = first_cells(&reference, "## Appendix");
    let lacking: Vec<&str> = bundled
        .iter()
        .map(|s| s.name.as_str())
        .filter(|name| !appendix.iter().any(|c| c == name))
        .collect();
    assert!(
        lacking.is_empty(),
        "exercises without a row in reference.md's appendix: {lacking:?}"
    );
}

#[test]
fn numbers_and_ranges_are_read_from_a_rows_first_cell() {
    let read = |c| numbers_named(c).into_iter().collect::<Vec<_>>();
    assert_eq!(read("1-3, 11-12 (the service's)"), [1, 2, 3, 11, 12]);
    assert_eq!(read("8 cpu-quota"), [8]);
    assert!(read("exercises").is_empty());
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_`
/// dropped, spaces as `-`.
fn anchor_of(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The targets of `text`'s Markdown links and pictures that stay in the
/// repository (`](page.md#anchor)`), as written.
fn relative_links(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let target = &rest[..rest.find(')')?];
            let outside = target.contains("://") || target.starts_with("mailto:");
            (!outside && !target.is_empty()).then(|| target.to_owned())
        })
        .collect()
}

#[test]
fn every_relative_link_and_its_anchor_resolve() {
    let mut broken = Vec::new();
    for (page, text) in common::pages_read() {
        let dir = repo().join(&page).parent().unwrap().to_path_buf();
        for target in relative_links(&text) {
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                repo().join(&page)
            } else {
                dir.join(file)
            };
            let Ok(linked) = std::fs::read_to_string(&path).or_else(|e| {
                if path.is_dir() || path.extension().is_some_and(|x| x != "md") && path.exists() {
                    Ok(String::new())
                } else {
                    Err(e)
                }
            }) else {
                broken.push(format!("{page}: {target} (no such file)"));
                continue;
            };
            let headings = linked.lines().filter(|l| l.starts_with('#'));
            if !anchor.is_empty() && !headings.map(anchor_of).any(|a| a == anchor) {
                broken.push(format!("{page}: {target} (no such heading)"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn an_anchor_is_the_headings_as_github_makes_it() {
    assert_eq!(
        anchor_of("## The room in full: the board, its limits, what it trusts"),
        "the-room-in-full-the-board-its-limits-what-it-trusts"
    );
    assert_eq!(
        relative_links("[a](b.md#c) [d](https://e) ![f](g.png)"),
        ["b.md#c", "g.png"]
    );
}

/// The README is a newcomer's first page: short, and giving no exercise away.
#[test]
fn the_readme_is_short_names_its_prerequisites_and_holds_no_fix() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines < 160, "README.md has {lines} lines");
    for needed in ["Rust 1.87", "C compiler", "`make`", "bpftrace", "DTrace"] {
        assert!(readme.contains(needed), "README.md does not name {needed}");
    }
    let mut told = Vec::new();
    for s in scenario::bundled().unwrap() {
        for fix in &s.fixes {
            let config = serde_json::to_value(&fix.config).unwrap();
            for (key, value) in config.as_object().into_iter().flatten() {
                for written in [format!("\"{key}\": {value}"), format!("\"{key}\":{value}")] {
                    if readme.contains(&written) {
                        told.push(format!("{} ({}): {written}", fix.name, s.visible_name()));
                    }
                }
            }
        }
    }
    assert!(told.is_empty(), "README.md gives fixes away: {told:?}");
}
