//! The bundled D and bpftrace scripts, read as text: each `.d` has a `.bt` twin that
//! prints the same labels from the same probes, and every script documents itself.
//! `tests/suite/tracing/scripts_live.rs` runs them for real.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use simulator_service::server::probe_names;

const BUNDLED: [&str; 17] = [
    "cgroup-cpu",
    "runqlat",
    "listener",
    "delayed-ack",
    "count",
    "request-lifetime",
    "persist-time",
    "permit-wait",
    "in-flight",
    "cpu-usage",
    "queue",
    "runtime",
    "size",
    "retry",
    "cache",
    "locks",
    "errors",
];

/// The scripts that count stacks, not labelled figures (exercise 11's profile,
/// exercise 12's offcpu, exercise 15's memory, whose D twin cannot read the
/// resident memory bpftrace's rss_stat gives): no labels to compare, checked by
/// what they sample and aggregate instead.
const STACKS: [&str; 3] = ["profile", "offcpu", "memory"];

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The script without its comments, so the examples in a header count for nothing.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("*/")
            .map_or(rest.len(), |e| start + e + 2);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The string literals a user reads: map keys (`@x["label"]`), column headings and
/// summary lines.
fn labels(code: &str) -> BTreeSet<String> {
    let pieces: Vec<&str> = code.split('"').collect();
    let mut found = BTreeSet::new();
    // Odd pieces are the insides of string literals.
    for i in (1..pieces.len()).step_by(2) {
        let literal = pieces[i];
        let heading = !literal.is_empty()
            && literal
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '-' || c == '%');
        let map_key = pieces[i - 1].ends_with('[');
        if heading || map_key || literal.contains("Summary of") {
            found.insert(literal.to_owned());
        }
    }
    found
}

/// The isim probes a script enables, in either tool's spelling.
fn probes(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for prefix in ["isim*:::", "usdt:*:isim:"] {
        for piece in code.split(prefix).skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                .collect();
            found.insert(name);
        }
    }
    found
}

#[test]
fn every_d_script_has_a_bt_twin_printing_the_same_labels_from_the_same_probes() {
    let mut d_scripts: Vec<String> = std::fs::read_dir(script(""))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|f| f.strip_suffix(".d").map(str::to_owned))
        .collect();
    d_scripts.sort();
    let mut bundled: Vec<String> = BUNDLED
        .iter()
        .chain(&STACKS)
        .map(|s| s.to_string())
        .collect();
    bundled.sort();
    assert_eq!(d_scripts, bundled, "scripts/*.d and the bundled list");

    for name in BUNDLED {
        let d = code(&read(&script(&format!("{name}.d"))));
        let bt = code(&read(&script(&format!("{name}.bt"))));
        assert_eq!(labels(&d), labels(&bt), "labels of {name}.d and {name}.bt");
        assert!(labels(&d).len() >= 3, "{name}: too few labels found");
        assert_eq!(probes(&d), probes(&bt), "probes of {name}.d and {name}.bt");
        for probe in probes(&d) {
            assert!(
                probe_names().contains(&probe.as_str()),
                "{name}: no probe {probe}"
            );
        }
    }
}

/// Every event declared in simulator-api/src/events/defs.rs is traced by some bundled
/// script, in both its D and its bpftrace form (the twins' probes are the same,
/// above), so a new event cannot land without its scripts.
#[test]
fn every_declared_event_is_traced_by_a_d_and_bpftrace_twin() {
    let mut traced = BTreeSet::new();
    for name in BUNDLED {
        traced.extend(probes(&code(&read(&script(&format!("{name}.d"))))));
        traced.extend(probes(&code(&read(&script(&format!("{name}.bt"))))));
    }
    let untraced: Vec<&str> = probe_names()
        .into_iter()
        .filter(|p| !traced.contains(*p))
        .collect();
    assert!(
        untraced.is_empty(),
        "declared events no bundled script traces: {untraced:?} (add them to a .d script and its .bt twin)"
    );
}

#[test]
fn every_script_documents_itself_and_pairs_by_request_id() {
    for name in BUNDLED {
        for ext in ["d", "bt"] {
            let file = format!("{name}.{ext}");
            let text = read(&script(&file));
            let header = &text[..text.find("*/").expect("a header comment")];
            for section in ["USAGE:", "EXAMPLE", "scripts/trace"] {
                assert!(header.contains(section), "{file}: no {section} in header");
            }
            let code = code(&text);
            assert!(
                !code.contains("self->"),
                "{file}: thread-locals in async code"
            );
            assert!(code.contains("$1"), "{file}: no way to change the duration");
            assert!(code.contains("END"), "{file}: nothing printed on Ctrl-C");
        }
    }
}

/// What each stack script must do in each tool: (D, bpftrace) pieces of code.
const STACK_CODE: [(&str, &[&str], &[&str]); 3] = [
    // profile: the server's user stacks sampled at 99 Hz, counted.
    (
        "profile",
        &["profile-99", "/pid == $target/", "@[ustack()] = count();"],
        &["profile:hz:99", "/pid == $2/", "@[ustack] = count();"],
    ),
    // offcpu: the time the server's threads spend blocked, summed in us by the
    // user stack they blocked with.
    (
        "offcpu",
        &[
            "sched:::off-cpu",
            "/pid == $target && self->insys/",
            "@[ustack()] = sum((timestamp - self->left) / 1000);",
        ],
        &[
            "tracepoint:sched:sched_switch",
            "pid == $2 && args->prev_state != 0",
            "@stack[tid] = ustack;",
            "= sum((nsecs - $left) / 1000);",
        ],
    ),
    // memory: the allocator's big blocks by the user stack that asked; in
    // bpftrace kept per pointer until freed, beside the kernel's resident pages.
    (
        "memory",
        &[
            "pid$target:a.out:_rjem_malloc:entry",
            "/arg0 >= 4096/",
            "@by_stack[ustack(10)] = sum(arg0);",
        ],
        &[
            "uprobe:$3:_rjem_malloc",
            "tracepoint:kmem:rss_stat",
            "@stack_of[retval] = @asked_at[tid];",
            "@held[@stack_of[arg0]] = @held[@stack_of[arg0]] - @size_of[arg0];",
        ],
    ),
];

#[test]
fn the_stack_scripts_sample_or_time_the_servers_user_stacks_in_both_tools() {
    assert_eq!(STACK_CODE.map(|(name, _, _)| name), STACKS);
    for (name, d_code, bt_code) in STACK_CODE {
        let d = read(&script(&format!("{name}.d")));
        let bt = read(&script(&format!("{name}.bt")));
        for (file, text) in [(format!("{name}.d"), &d), (format!("{name}.bt"), &bt)] {
            let header = &text[..text.find("*/").expect("a header comment")];
            for section in ["USAGE:", "EXAMPLE", "scripts/trace", "frame pointers"] {
                assert!(header.contains(section), "{file}: no {section} in header");
            }
            assert!(
                code(text).contains("$1"),
                "{file}: no way to change the duration"
            );
        }
        let (d, bt) = (code(&d), code(&bt));
        for piece in d_code {
            assert!(d.contains(piece), "{name}.d lacks {piece}");
        }
        for piece in bt_code {
            assert!(bt.contains(piece), "{name}.bt lacks {piece}");
        }
    }
}

#[test]
fn the_seed_count_script_uses_the_seed_provider_form() {
    let seed = read(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/seed-count.d"
    )));
    assert!(seed.contains("isim*:::request-start") && seed.contains("tick-60s"));
    // The bundled D scripts keep the form macOS, illumos and FreeBSD need.
    for name in BUNDLED {
        let d = code(&read(&script(&format!("{name}.d"))));
        assert!(
            !d.contains("$target:::"),
            "{name}.d must say isim*, not isim$target"
        );
    }
}
