//! The CI soak: `tools/soak.py` for two minutes against the test build, with
//! faults on. It asserts, and this test requires, RSS growth under 10 % after the
//! warm-up, balanced counts, every permit back and no panic in the log. The
//! 30-minute run is the same script without `--duration` (docs/limits.md).
//!
//! Tier C (the full suite only): two minutes. Run with:
//! `tools/test -E 'test(/^soak::/)'`.

use crate::common;

use std::process::Command;

#[test]
#[ignore = "tier C: a 2-minute soak at saturation"]
fn two_minutes_at_saturation_with_faults_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("soak.json");
    let out = Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tools/soak.py"))
        .args(["--duration", "2m", "--bin", common::BIN, "--json"])
        .arg(&summary)
        .output()
        .expect("run python3 tools/soak.py");
    let printed = String::from_utf8_lossy(&out.stdout);
    eprintln!("{printed}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the soak failed a check");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let checks = summary["checks"].as_object().unwrap();
    assert_eq!(checks.len(), 9, "{checks:?}");
    assert!(checks.values().all(|ok| ok == true), "{checks:?}");
    assert!(
        summary["stats"]["persists_timed_out"].as_u64().unwrap() > 0,
        "the stall fault fired"
    );
    assert!(summary["rss_kib"].as_array().unwrap().len() >= 20);
}
