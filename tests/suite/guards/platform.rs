//! The OS is named in one place a crate: `simulator-service/src/platform/` in the service,
//! `simulator-clients/src/platform/` in the load driver (simulator-api names
//! none). Anywhere else, a `cfg` on an OS, a `std::os` path or a raw libc call
//! is a part that would not build, or would silently differ, on another OS, and
//! that the guide's table of what runs where would not know of. Read from the
//! source as text, comments left out; tests included, except the workspace's
//! integration tests, which may skip on an OS where a tool is missing.

use std::path::{Path, PathBuf};

/// The words that name an OS or reach past the standard library to one.
const OS_WORDS: &[&str] = &[
    "target_os",
    "cfg(unix",
    "cfg(windows",
    "cfg(not(unix",
    "cfg(not(windows",
    "std::os::",
    "libc::",
    "signal::unix",
    "io::unix",
];

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// `file:line: text` for each line of `text` (comments aside) naming an OS.
fn naming_an_os(file: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let code = line.split("//").next().unwrap_or_default();
            OS_WORDS.iter().any(|word| code.contains(word))
        })
        .map(|(i, line)| format!("{file}:{}: {}", i + 1, line.trim()))
        .collect()
}

#[test]
fn no_part_outside_the_platform_modules_names_an_os() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for src in [
        "src",
        "simulator-api/src",
        "simulator-service/src",
        "simulator-clients/src",
    ] {
        rust_files(&root.join(src), &mut files);
    }
    let platform = [
        root.join("simulator-service/src/platform"),
        root.join("simulator-clients/src/platform"),
    ];
    let mut named = Vec::new();
    for file in files
        .iter()
        .filter(|f| !platform.iter().any(|p| f.starts_with(p)))
    {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(root).unwrap().display().to_string();
        named.extend(naming_an_os(&shown, &text));
    }
    assert!(
        named.is_empty(),
        "these name an OS outside simulator-service/src/platform/ and simulator-clients/src/platform/; move them there behind a portable function:\n{}",
        named.join("\n")
    );
    // And the modules this test exempts exist (a rename would exempt nothing).
    assert!(platform.iter().all(|p| p.join("mod.rs").exists()));
}

#[test]
fn a_cfg_a_std_os_path_and_a_libc_call_are_each_found_and_a_comment_is_not() {
    let text = "fn a() {}\n\
                #[cfg(target_os = \"linux\")]\n\
                use std::os::fd::AsRawFd;\n\
                // libc::gettid in a comment is words\n\
                let tid = unsafe { libc::gettid() };\n";
    let found = naming_an_os("x.rs", text);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].starts_with("x.rs:2:"), "{found:?}");
    assert!(found[2].contains("gettid"), "{found:?}");
}
