//! The folders are the architecture, so imports go one way: no module of any crate
//! in the workspace imports, through others, a module that imports it, and no
//! folder imports a folder that imports it (a cycle of folders is one even when
//! the files in it form none). And what docs/architecture.md says a folder never
//! imports (its table "What never imports what", read by this test) it does not,
//! and every folder and top-level file of each crate has its row in the table
//! that says what each owns.
//! Read from the source as text (every `crate::a::b` path and `super::x` sibling),
//! per file; test modules are left out (a test may reach anywhere).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, keyed by its module path (`observe::events`).
fn modules(dir: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for path in rust_files(dir) {
        let rel: PathBuf = path.strip_prefix(dir).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            parts.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            parts.pop();
        }
        // A test module in a file of its own (`worker/tests.rs`).
        if parts.last().map(String::as_str) == Some("tests") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // A file's own tests may import anything.
        let text = match text.find("#[cfg(test)]\nmod tests") {
            Some(at) => text[..at].to_owned(),
            None => text,
        };
        found.insert(parts.join("::"), text);
    }
    found
}

/// The module paths that follow `prefix` in `text` (`crate::observe::events`).
fn paths_after<'t>(text: &'t str, prefix: &str) -> impl Iterator<Item = String> + 't {
    let prefix = prefix.to_owned();
    text.match_indices(prefix.clone().as_str())
        .map(move |(at, _)| {
            text[at + prefix.len()..]
                .chars()
                .take_while(|c| {
                    c.is_ascii_lowercase() || *c == '_' || *c == ':' || c.is_ascii_digit()
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .into_iter()
}

/// The import graph between the files of one crate's `src/`.
fn graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(dir);
    let known = |path: &str| {
        let mut parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
        while !parts.is_empty() {
            let candidate = parts.join("::");
            if mods.contains_key(&candidate) {
                return Some(candidate);
            }
            parts.pop();
        }
        None
    };
    let mut edges = BTreeMap::new();
    for (module, text) in &mods {
        let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
        let mut targets = BTreeSet::new();
        for path in paths_after(text, "crate::") {
            targets.extend(known(&path));
        }
        for path in paths_after(text, "super::") {
            let sibling = match parent {
                "" => path,
                p => format!("{p}::{path}"),
            };
            targets.extend(known(&sibling));
        }
        // Importing a folder's own parent (`mod.rs`) or itself is not an edge
        // between parts.
        targets.retain(|t| t != module && !module.starts_with(&format!("{t}::")) && !t.is_empty());
        edges.insert(module.clone(), targets);
    }
    edges
}

/// A cycle through `start`, if there is one.
fn cycle_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_owned(), vec![start.to_owned()])];
    let mut seen = BTreeSet::new();
    while let Some((at, trail)) = stack.pop() {
        for next in graph.get(&at).into_iter().flatten() {
            if next == start {
                return Some([trail.clone(), vec![start.to_owned()]].concat());
            }
            if seen.insert(next.clone()) {
                stack.push((next.clone(), [trail.clone(), vec![next.clone()]].concat()));
            }
        }
    }
    None
}

/// The crates' sources, as the tests read them.
const CRATES: [&str; 4] = [
    "src",
    "simulator-api/src",
    "simulator-service/src",
    "simulator-clients/src",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The folder (or file) at a crate's top that holds `module`: `load::worker`
/// is in `load`.
fn folder(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

/// The import graph between a crate's top-level folders and files.
fn folder_graph(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut folders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, targets) in graph {
        let from = folder(module);
        let to = targets.iter().map(|t| folder(t)).filter(|t| *t != from);
        folders
            .entry(from.to_owned())
            .or_default()
            .extend(to.map(str::to_owned));
    }
    folders
}

/// `text` without its comment lines (`//`, `//!`, `///`): what the code uses.
fn code_of(text: &str) -> String {
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `code` uses the crate `name` (`hyper::...`, `::hyper::...`), not a
/// longer name that ends like it (`no_hyper::`) or a module of that name inside
/// another path (`crate::x::hyper::`).
fn uses_crate(code: &str, name: &str) -> bool {
    code.match_indices(&format!("{name}::")).any(|(at, _)| {
        !code[..at]
            .trim_end_matches("::")
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// One row of docs/architecture.md's table "What never imports what".
#[derive(Debug)]
struct Rule {
    /// The crate's sources (`simulator-clients/src`) and the folder in it.
    krate: &'static str,
    folder: String,
    /// Folders of the same crate, or crates, it never imports.
    never: Vec<String>,
}

/// The words in backticks of a table's cell.
fn ticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The rows of the table after the line that begins with `marker` in `doc` (its
/// head and rule left out).
fn rows_after<'d>(doc: &'d str, marker: &str) -> Vec<&'d str> {
    let at = doc
        .find(marker)
        .unwrap_or_else(|| panic!("docs/architecture.md has no `{marker}`"));
    doc[at..]
        .lines()
        .skip(1)
        .skip_while(|line| line.trim().is_empty())
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .collect()
}

fn architecture() -> String {
    std::fs::read_to_string(root().join("docs/architecture.md")).unwrap()
}

/// The table's rows, after its marker line.
fn rules() -> Vec<Rule> {
    rows_after(
        &architecture(),
        "<!-- tests/suite/guards/layout.rs reads this table -->",
    )
    .into_iter()
    .map(|row| {
        let cells: Vec<&str> = row.split('|').collect();
        let place = ticked(cells[1]).concat();
        let krate = CRATES
            .into_iter()
            .filter(|k| place.starts_with(&format!("{k}/")))
            .max_by_key(|k| k.len())
            .unwrap_or_else(|| panic!("`{place}` is in no crate of {CRATES:?}"));
        Rule {
            krate,
            folder: place[krate.len() + 1..].to_owned(),
            never: ticked(cells[2]),
        }
    })
    .collect()
}

/// The marker of docs/architecture.md's first table, the one that gives every
/// folder and top-level file its row.
const ROWS_MARKER: &str =
    "<!-- tests/suite/guards/layout.rs reads this table: a row for every folder";

/// Every folder (`src/trace/`) and top-level file (`src/cli.rs`) of each
/// crate's sources, named from the workspace's root.
fn crate_entries() -> Vec<String> {
    let mut entries = Vec::new();
    for krate in CRATES {
        for entry in std::fs::read_dir(root().join(krate)).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            match entry.file_type().unwrap().is_dir() {
                true => entries.push(format!("{krate}/{name}/")),
                false => entries.push(format!("{krate}/{name}")),
            }
        }
    }
    entries.sort();
    entries
}

/// The entries that no row of the table after [`ROWS_MARKER`] in `doc` names in
/// its first cell.
fn entries_without_a_row(doc: &str, entries: &[String]) -> Vec<String> {
    let named: BTreeSet<String> = rows_after(doc, ROWS_MARKER)
        .into_iter()
        .flat_map(|row| ticked(row.split('|').nth(1).unwrap_or_default()))
        .collect();
    entries
        .iter()
        .filter(|e| !named.contains(*e))
        .cloned()
        .collect()
}

#[test]
fn every_folder_and_top_level_file_of_each_crate_has_its_row() {
    let entries = crate_entries();
    assert!(entries.contains(&"src/trace/".to_owned()), "{entries:?}");
    assert!(entries.contains(&"simulator-api/src/settings/".to_owned()));
    let missing = entries_without_a_row(&architecture(), &entries);
    assert!(
        missing.is_empty(),
        "docs/architecture.md's first table has no row for {missing:?}: say what each owns"
    );
}

#[test]
fn a_folder_without_a_row_is_found() {
    let doc = architecture();
    let without: String = doc
        .lines()
        .filter(|line| !line.starts_with("| `src/trace/`"))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_ne!(without, doc, "the table has a row for src/trace/");
    assert_eq!(
        entries_without_a_row(&without, &crate_entries()),
        ["src/trace/"]
    );
}

#[test]
fn no_crate_in_the_workspace_has_an_import_cycle() {
    let mut cycles = Vec::new();
    for krate in CRATES {
        let graph = graph(&root().join(krate));
        assert!(graph.len() > 5, "{krate}: too few modules read");
        for module in graph.keys() {
            if let Some(cycle) = cycle_through(&graph, module) {
                cycles.push(format!("{krate}: {}", cycle.join(" -> ")));
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn a_cycle_is_found_when_there_is_one() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(m, to)| (m.to_owned(), to.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(
        cycle_through(&graph, "a"),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(cycle_through(&graph, "d"), None);
}

#[test]
fn no_crate_in_the_workspace_has_a_cycle_of_folders() {
    let mut cycles = Vec::new();
    for krate in CRATES {
        let folders = folder_graph(&graph(&root().join(krate)));
        for start in folders.keys() {
            if let Some(cycle) = cycle_through(&folders, start) {
                cycles.push(format!("{krate}: {}", cycle.join(" -> ")));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "folders that import each other (move the file that points up, or pass \
         down what it needs):\n{}",
        cycles.join("\n")
    );
}

#[test]
fn a_cycle_of_folders_is_found_where_the_files_have_none() {
    let files: BTreeMap<String, BTreeSet<String>> = [
        ("a::x", vec!["b::y"]),
        ("b::z", vec!["a::w"]),
        ("a::w", vec![]),
        ("b::y", vec![]),
    ]
    .into_iter()
    .map(|(m, to)| (m.to_owned(), to.into_iter().map(str::to_owned).collect()))
    .collect();
    assert!(files.keys().all(|m| cycle_through(&files, m).is_none()));
    assert_eq!(
        cycle_through(&folder_graph(&files), "a"),
        Some(vec!["a".into(), "b".into(), "a".into()])
    );
}

#[test]
fn no_folder_imports_what_docs_architecture_says_it_never_does() {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).unwrap();
    let rules = rules();
    assert!(rules.len() >= 5, "too few rules read: {rules:?}");
    let mut broken = Vec::new();
    for rule in &rules {
        let dir = root().join(rule.krate);
        let (mods, graph) = (modules(&dir), graph(&dir));
        let folders: BTreeSet<&str> = mods.keys().map(|m| folder(m)).collect();
        assert!(
            folders.contains(rule.folder.as_str()),
            "docs/architecture.md names {}/{}, which is not a folder",
            rule.krate,
            rule.folder
        );
        for (module, targets) in graph.iter().filter(|(m, _)| folder(m) == rule.folder) {
            for never in &rule.never {
                // A folder of the same crate, a crate (`simulator-clients`), or
                // a folder of another (`simulator-service::serving`).
                let found = if folders.contains(never.as_str()) {
                    targets.iter().any(|t| folder(t) == never)
                } else {
                    let krate = never.split("::").next().unwrap_or(never);
                    assert!(
                        lock.contains(&format!("name = \"{krate}\"")),
                        "docs/architecture.md: `{never}` is neither a folder of {} nor a crate",
                        rule.krate
                    );
                    uses_crate(&code_of(&mods[module]), &never.replace('-', "_"))
                };
                if found {
                    broken.push(format!("{}: {module} imports {never}", rule.krate));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "imports docs/architecture.md says never happen:\n{}",
        broken.join("\n")
    );
}

/// The marker of docs/architecture.md's table of layers, a row a crate.
const LAYERS_MARKER: &str = "<!-- tests/suite/guards/layout.rs reads these layers";

/// Each crate's layers from `doc`: a folder's depth, 0 at the top.
fn layers(doc: &str) -> BTreeMap<String, BTreeMap<String, usize>> {
    rows_after(doc, LAYERS_MARKER)
        .into_iter()
        .map(|row| {
            let cells: Vec<&str> = row.split('|').collect();
            let depth = cells[2]
                .split('→')
                .enumerate()
                .flat_map(|(depth, layer)| ticked(layer).into_iter().map(move |f| (f, depth)))
                .collect();
            (ticked(cells[1]).concat(), depth)
        })
        .collect()
}

/// The imports between folders of a crate that do not go down its layers, and
/// its folders that no layer holds (the crate's root, `lib.rs` and `main.rs`,
/// aside: it only declares them).
fn against_the_layers(
    folders: &BTreeMap<String, BTreeSet<String>>,
    depth: &BTreeMap<String, usize>,
) -> Vec<String> {
    let mut wrong = Vec::new();
    for (from, targets) in folders {
        if from.is_empty() {
            continue;
        }
        let Some(at) = depth.get(from) else {
            wrong.push(format!("{from} is in no layer"));
            continue;
        };
        for to in targets {
            if depth.get(to).is_none_or(|below| below <= at) {
                wrong.push(format!("{from} imports {to}, not a layer below it"));
            }
        }
    }
    wrong
}

#[test]
fn every_import_goes_down_the_layers_docs_architecture_draws() {
    let layers = layers(&architecture());
    assert_eq!(
        layers.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        CRATES.into_iter().collect(),
        "docs/architecture.md draws the layers of every crate"
    );
    let mut wrong = Vec::new();
    for krate in CRATES {
        let folders = folder_graph(&graph(&root().join(krate)));
        for found in against_the_layers(&folders, &layers[krate]) {
            wrong.push(format!("{krate}: {found}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against docs/architecture.md's layers (move the code, hand down \
         what it needs, or redraw the layers):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn an_import_up_a_layer_or_within_one_is_found() {
    let depth: BTreeMap<String, usize> = [("a", 0), ("b", 1), ("c", 1)]
        .into_iter()
        .map(|(f, d)| (f.to_owned(), d))
        .collect();
    let folders = |edges: &[(&str, &str)]| {
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in edges {
            graph
                .entry((*from).to_owned())
                .or_default()
                .insert((*to).to_owned());
        }
        graph
    };
    assert!(against_the_layers(&folders(&[("a", "b"), ("a", "c")]), &depth).is_empty());
    assert_eq!(
        against_the_layers(
            &folders(&[("", "a"), ("b", "a"), ("b", "c"), ("d", "a")]),
            &depth
        ),
        [
            "b imports a, not a layer below it",
            "b imports c, not a layer below it",
            "d is in no layer"
        ]
    );
}

#[test]
fn a_crate_is_told_from_a_longer_name_that_ends_like_it() {
    assert!(uses_crate("use hyper::header;", "hyper"));
    assert!(uses_crate("let x = ::hyper::Body;", "hyper"));
    assert!(!uses_crate("use crate::x::hyper::y;", "hyper"));
    assert!(!uses_crate("use crate::no_hyper::x;", "hyper"));
    assert!(!uses_crate(
        &code_of("//! hyper::Body is not used"),
        "hyper"
    ));
}

/// The run-alone group of .config/nextest.toml picks its tests by name only:
/// an exercise's, or a name ending in `common::ALONE_SUFFIX`, the rule
/// `common::runs_alone()` holds every CPU-judged test to. A filter that lists
/// names one by one would let a renamed test slip into the shared pool.
#[test]
fn the_run_alone_group_is_picked_by_the_rule_runs_alone_checks() {
    let config = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".config/nextest.toml"),
    )
    .unwrap();
    let alone = config
        .split("[[profile.full.overrides]]")
        .find(|block| block.contains("threads-required = \"num-test-threads\""))
        .expect("a run-alone group in .config/nextest.toml");
    let filter: Vec<&str> = alone
        .split("filter = \"\"\"")
        .nth(1)
        .and_then(|rest| rest.split("\"\"\"").next())
        .expect("the group's filter")
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(
        filter,
        [
            "test(/^workshop::exercises::each::/)",
            &format!("test(/{}$/)", crate::common::ALONE_SUFFIX)
        ]
    );
}

/// A test that calls `runs_alone()` without the name the run-alone group picks
/// fails: this one's name does not end in the suffix.
#[test]
#[should_panic(expected = "must run alone")]
fn a_cpu_judged_test_named_for_the_shared_pool_fails() {
    crate::common::runs_alone();
}

/// The engine's front door: the public modules its `lib.rs` declares.
fn front_door() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(root().join("simulator-service/src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|line| line.strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches([';', '{', ' ']).to_owned())
        .collect()
}

/// Where `code` names the engine past its front door: each
/// `simulator_service::NAME` whose NAME is not a module of `door`. String
/// literals are left out (a profile's frame names the engine's functions).
fn past_the_door(code: &str, door: &BTreeSet<String>) -> Vec<String> {
    let code = code_of(code);
    let outside_strings: String = code.split('"').step_by(2).collect::<Vec<_>>().join(" ");
    paths_after(&outside_strings, "simulator_service::")
        .filter_map(|path| path.split("::").next().map(str::to_owned))
        .filter(|name| !name.is_empty() && !door.contains(name))
        .collect()
}

/// Every `.rs` file under `dir`, whole (tests too: they come in by the door).
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn the_commands_and_the_tests_reach_the_engine_by_its_front_door_only() {
    let door = front_door();
    assert!(
        door.contains("server") && !door.contains("serving"),
        "the door: {door:?}"
    );
    let mut past = Vec::new();
    for dir in ["src", "tests", "examples"] {
        for file in rust_files(&root().join(dir)) {
            // This file's own example of a path past the door.
            if file.ends_with("tests/suite/guards/layout.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for name in past_the_door(&text, &door) {
                past.push(format!("{}: simulator_service::{name}", file.display()));
            }
        }
    }
    assert!(
        past.is_empty(),
        "past the engine's front door ({door:?}):\n{}",
        past.join("\n")
    );
}

#[test]
fn a_path_past_the_front_door_is_found_and_a_frame_name_in_a_string_is_not() {
    let door: BTreeSet<String> = ["server".to_owned(), "parts".to_owned()].into();
    let code = "use simulator_service::server::bind;\n\
                use simulator_service::serving::http::app;\n\
                const FRAME: &str = \"simulator_service::request_path::index\";\n\
                // simulator_service::observe in a comment\n";
    assert_eq!(past_the_door(code, &door), vec!["serving".to_owned()]);
}

/// Every test name .config/nextest.toml picks out by its module names a
/// module of this suite: when the tests moved into folders (`soak::` became
/// `server::soak::`), the heavy group's filter kept the old names, matched
/// nothing, and the soak at saturation ran beside the tracers it was kept from.
/// Each `test(/^a::b::.../)` and `test(=a::b::name)` must name the file
/// `tests/suite/a/b.rs` (or the folder `a/b/`), and an exact name the function
/// in that file or folder.
#[test]
fn every_test_the_runners_schedule_names_is_a_test_of_this_suite() {
    let suite = root().join("tests/suite");
    let config = std::fs::read_to_string(root().join(".config/nextest.toml")).unwrap();
    let mut named = 0;
    for term in config.split("test(").skip(1) {
        let term = term.split(')').next().unwrap_or_default();
        let (exact, path) = match (term.strip_prefix('='), term.strip_prefix("/^")) {
            (Some(path), _) => (true, path),
            (None, Some(regex)) => (false, regex),
            // `test(/_alone$/)`: a suffix, held to its rule by the test above.
            _ => continue,
        };
        let parts: Vec<&str> = path
            .trim_end_matches('/')
            .split("::")
            .take_while(|part| {
                !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_')
            })
            .collect();
        assert!(
            parts.len() >= 2,
            "`test({term})` names no module of the suite"
        );
        let module = suite.join(parts[0]).join(parts[1]);
        let file = module.with_extension("rs");
        assert!(
            file.is_file() || module.is_dir(),
            "`test({term})` in .config/nextest.toml names no test: no {} or {}",
            file.display(),
            module.display()
        );
        if exact {
            let name = format!("fn {}", parts.last().unwrap());
            let mut sources = vec![std::fs::read_to_string(&file).unwrap_or_default()];
            if let Ok(entries) = std::fs::read_dir(&module) {
                sources.extend(
                    entries
                        .flatten()
                        .filter_map(|e| std::fs::read_to_string(e.path()).ok()),
                );
            }
            assert!(
                sources.iter().any(|s| s.contains(&name)),
                "`test({term})` in .config/nextest.toml names no test: no `{name}`"
            );
        }
        named += 1;
    }
    assert!(
        named >= 4,
        "found {named} filters by name in .config/nextest.toml"
    );
}
