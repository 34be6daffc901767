//! Every exercise on a smaller machine: `workshop figures` for all six with the
//! measured servers on one core (`taskset -c 0`) and capped at half a core (a
//! cgroup CPU quota), and for each fix the win condition as `workshop check` gives
//! it: failing before the fix, passing after (or, for a fix the page marks as a
//! trade-off, still failing). The load is not confined, so a slow driver cannot
//! pass for a slow server. tests/workshop_pages.rs does the same on the whole
//! machine and holds the pages' figures.
//!
//! An exercise whose verdict is wrong is measured once more and the second
//! window decides (`judged_twice_if_wrong` in tests/common/figures.rs says why).
//!
//! The CPU work's cost is calibrated in CPU time on the server at start
//! (`work_cpu`), so a laptop 3x slower per core runs the same exercise as this
//! one; what this test adds is fewer cores and less CPU than a core.
//!
//! The quota needs root (a cgroup of our own); without it the half-core run skips
//! with the reason, and fails instead under CI.
//!
//! Tier C (the full suite only): about 5 minutes of real load, run alone. Run with:
//! `cargo test --test exercises_anywhere -- --include-ignored`.

mod common;

use std::process::Command;

use common::figures::{judged_twice_if_wrong, keep, tables, verdict_errors};
use common::{have, is_root, skip_or_fail, BIN};
use system_simulator::scenario;

/// Every exercise's figures with the servers confined by `flags`; the verdict
/// errors of all of them (an exercise whose verdict is wrong is measured once
/// more, and the second window decides: `judged_twice_if_wrong`).
fn figures_confined(confinement: &str, flags: &[&str]) -> Vec<String> {
    let out = Command::new(BIN)
        .args(["workshop", "figures", "--duration", "6s"])
        .args(flags)
        .output()
        .expect("run workshop figures");
    let printed = String::from_utf8_lossy(&out.stdout);
    keep(confinement, &printed);
    assert!(
        out.status.success(),
        "workshop figures {flags:?}: {}\n{printed}",
        String::from_utf8_lossy(&out.stderr)
    );
    let blocks: Vec<&str> = printed.split("<!-- figures:end -->").collect();
    let names = scenario::names();
    assert_eq!(blocks.len(), names.len() + 1, "{printed}");
    let mut errors = Vec::new();
    for (name, block) in names.iter().zip(&blocks) {
        let judge = |block: &str| -> Vec<String> {
            assert!(
                block.contains(&format!("figures {name} --write")),
                "{block}"
            );
            if block.contains(system_simulator::workshop::figures::NOT_MEASURED) {
                // Only an exercise with a CPU quota of its own may be beyond a
                // confined server (src/workshop/fit.rs says why); it says so.
                let s = scenario::Scenario::load(name).unwrap();
                assert!(
                    !s.settings().cpu_quota.is_zero(),
                    "{name} not measured:\n{block}"
                );
                eprintln!("{confinement}: {name} not measured: {}", block.trim());
                return Vec::new();
            }
            let fresh = tables(block);
            assert!(!fresh.is_empty(), "{name}: no figures\n{block}");
            verdict_errors(name, &fresh)
        };
        errors.extend(judged_twice_if_wrong(
            name,
            confinement,
            flags,
            Some(block.to_string()),
            judge,
        ));
    }
    errors
}

#[test]
#[ignore = "tier C: 5 minutes of load, every exercise on one core and at half a core (root for the quota)"]
fn every_exercise_shows_its_symptom_and_cure_on_one_core_and_half_a_core() {
    let mut errors = Vec::new();
    if have("taskset") {
        errors.extend(figures_confined("one-core", &["--server-cpus", "0"]));
    } else {
        skip_or_fail("no taskset (util-linux) to put the server on one core");
    }
    if is_root() {
        errors.extend(figures_confined(
            "half-core",
            &["--server-cpu-quota", "0.5"],
        ));
    } else {
        skip_or_fail("a CPU quota needs root (a cgroup of our own)");
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
