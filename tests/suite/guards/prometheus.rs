//! The Prometheus configuration and rules in docs/prometheus/ are checked and
//! unit-tested by Prometheus' own promtool (Debian's `prometheus` package), so a
//! rule that stops parsing, or stops firing when it should, fails here.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{have, skip_or_fail};

fn promtool(args: &[&str]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/prometheus");
    let out = Command::new("promtool")
        .args(args)
        .current_dir(&dir)
        .output()
        .expect("run promtool");
    assert!(
        out.status.success(),
        "promtool {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_scrape_config_and_the_rules_pass_promtool() {
    if !have("promtool") {
        skip_or_fail("promtool not installed (Debian package prometheus)");
        return;
    }
    promtool(&["check", "config", "prometheus.yml"]);
    promtool(&["check", "rules", "rules.yml"]);
}

#[test]
fn the_alerts_fire_when_they_should_and_only_then() {
    if !have("promtool") {
        skip_or_fail("promtool not installed (Debian package prometheus)");
        return;
    }
    promtool(&["test", "rules", "rules.test.yml"]);
}
