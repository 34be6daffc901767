//! `sim-clients sweep`, for real: a reduced version of the seed's investigation
//! (4 s a step instead of 60, one run instead of three) against the default
//! configuration must have the seed's shape, before and after its fix.

mod common;

use common::*;
use serde_json::Value;

fn figure(step: &Value, name: &str) -> f64 {
    step["mean"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("no {name} in {step}"))
}

#[test]
fn a_reduced_sweep_has_the_seed_shape_before_and_after_the_fix() {
    let server = Server::start(&[]);
    let json = tempfile::NamedTempFile::new().unwrap();
    let out = std::process::Command::new(BIN)
        .args(["clients", "sweep", "--target", &server.url])
        .args(["--n", "1,15,135,1000", "--duration", "4s", "--repeat", "1"])
        .arg("--fix")
        .arg("--json")
        .arg(json.path())
        .output()
        .expect("run the sweep");
    let table = stdout_of_success(&out);
    assert!(table.contains("Little's law"), "{table}");
    let report: Value = serde_json::from_slice(&std::fs::read(json.path()).unwrap()).unwrap();

    let capacity_per_min = report["capacity_per_s"].as_f64().unwrap() * 60.0;
    let saturation = report["saturation_clients"].as_f64().unwrap();
    assert!(
        (125.0..140.0).contains(&saturation),
        "tipping point {saturation}"
    );
    let before = report["before"].as_array().unwrap();
    let blocked = |i: usize| figure(&before[i], "blocked_per_min");
    assert_eq!(blocked(0), 0.0, "1 client never blocks");
    assert!(blocked(1) > 0.0, "15 clients arriving together block");
    for step in &before[2..] {
        let clients = &step["clients"];
        assert!(
            figure(step, "blocked_share") > 0.9,
            "{clients} clients: nearly all blocked"
        );
        let done = figure(step, "requests_done_per_min");
        assert!(
            (done - capacity_per_min).abs() <= 0.10 * capacity_per_min,
            "{clients} clients: {done:.0}/min against the gate's {capacity_per_min:.0}/min"
        );
    }

    let after = report["after"].as_array().expect("the fixed sweep");
    for step in after {
        let clients = step["clients"].as_u64().unwrap();
        assert_eq!(step["permits"].as_u64(), Some(8 * clients));
        assert_eq!(
            figure(step, "blocked_per_min"),
            0.0,
            "{clients}: nothing blocks"
        );
        let done = figure(step, "requests_done_per_min");
        let predicted = step["predicted_per_min"].as_f64().unwrap();
        assert!(
            (done - predicted).abs() <= 0.05 * predicted,
            "{clients} clients: {done:.0}/min, proportional to clients would be {predicted:.0}"
        );
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stats = runtime.block_on(stats(&client(), &server.url));
    assert_eq!(stats["permits_total"], 8, "the sweep puts the permits back");
}

#[test]
fn a_sweep_without_client_counts_is_refused() {
    let out = std::process::Command::new(BIN)
        .args(["clients", "sweep", "--target", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--n"), "{stderr}");
}
