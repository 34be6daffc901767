//! The folders are the architecture, so imports go one way: no module of any crate
//! in the workspace imports, through others, a module that imports it. Read from
//! the source as text (every `crate::a::b` path and `super::x` sibling), per file;
//! test modules are left out (a test may reach anywhere).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, keyed by its module path (`observe::events`).
fn modules(dir: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
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
                let text = std::fs::read_to_string(&path).unwrap();
                // A file's own tests may import anything.
                let text = match text.find("#[cfg(test)]\nmod tests") {
                    Some(at) => text[..at].to_owned(),
                    None => text,
                };
                found.insert(parts.join("::"), text);
            }
        }
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

#[test]
fn no_crate_in_the_workspace_has_an_import_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cycles = Vec::new();
    for krate in ["src", "simulator-api/src", "simulator-clients/src"] {
        let graph = graph(&root.join(krate));
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
