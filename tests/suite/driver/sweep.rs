//! `sim-clients sweep`, for real: a reduced version of the seed's investigation
//! (4 s a step instead of 60, one run instead of three) against the default
//! configuration must have the seed's shape, before and after its fix.

use crate::common;

use common::*;
use serde_json::Value;

/// Each step of the reduced sweep.
const STEP_SECONDS: f64 = 4.0;

fn figure(step: &Value, name: &str) -> f64 {
    step["mean"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("no {name} in {step}"))
}

#[test]
#[ignore = "tier C: 40 s of load, the seed's sweep judged by its shape"]
fn a_reduced_sweep_has_the_seed_shape_before_and_after_the_fix_alone() {
    common::runs_alone();
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (json, markdown, svg) = (
        dir.path().join("sweep.json"),
        dir.path().join("sweep.md"),
        dir.path().join("sweep.svg"),
    );
    let out = std::process::Command::new(sim_clients())
        .args(["sweep", "--target", &server.url])
        .args([
            "--n",
            "1,15,135,1000",
            "--duration",
            &format!("{STEP_SECONDS}s"),
        ])
        .args(["--repeat", "1"])
        .arg("--fix")
        .args([
            "--json".as_ref(),
            json.as_os_str(),
            "--markdown".as_ref(),
            markdown.as_os_str(),
            "--svg".as_ref(),
            svg.as_os_str(),
        ])
        .output()
        .expect("run the sweep");
    let table = stdout_of_success(&out);
    assert!(table.contains("Little's law"), "{table}");
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    outputs_are_well_formed(&markdown, &svg);
    let errors = schema_errors("sweep.schema.json", &report);
    assert!(
        errors.is_empty(),
        "--json against sweep.schema.json: {errors:?}"
    );
    assert!(report["command"].as_str().unwrap().contains("sweep"));

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
        // The seed: 135 clients 7,734 of 7,742 blocked, 1000 all of them: the only
        // requests not blocked are the first burst's, which find the 8 permits
        // free. With the original's 1 ms timer (timer_tick) the gate passes 8 /
        // 61.8 ms and 135 clients stay beyond it. Counted, not as a share: in a
        // 4 s step those 8 alone are 1.5 % (a share of 0.98 failed one CI run at
        // 0.98-0.985 measured over six runs, every one with 8 not blocked).
        // At the tipping point (135 clients, just at the gate's capacity) the
        // queue of waiters now and then runs dry and a few more find a permit
        // free: 8 to 17.9 a step in 20 runs by hand (debug and release servers,
        // 2026-12-02), and one CI run at 16.8 failed a bound of 16. So three
        // times the burst there, and twice it deep in saturation.
        let not_blocked = figure(step, "nonblocked_per_min") * STEP_SECONDS / 60.0;
        let most = match clients.as_u64() {
            Some(135) => 24.0,
            _ => 16.0,
        };
        assert!(
            not_blocked <= most,
            "{clients} clients: {not_blocked:.1} requests not blocked in a {STEP_SECONDS} s step; \
             the seed's 8 (the first burst's free permits), at most {most}"
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

/// The Markdown holds two tables of four rows; the SVG parses, with its three panels.
fn outputs_are_well_formed(markdown: &std::path::Path, svg: &std::path::Path) {
    use pulldown_cmark::{Event, Options, Parser, Tag};
    let text = std::fs::read_to_string(markdown).unwrap();
    let events: Vec<Event> = Parser::new_ext(&text, Options::ENABLE_TABLES).collect();
    let count = |want: fn(&Event) -> bool| events.iter().filter(|e| want(e)).count();
    assert_eq!(
        count(|e| matches!(e, Event::Start(Tag::Table(_)))),
        2,
        "{text}"
    );
    assert_eq!(
        count(|e| matches!(e, Event::Start(Tag::TableRow))),
        8,
        "{text}"
    );

    let svg_path = svg;
    let svg = std::fs::read_to_string(svg).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let polylines = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .count();
    assert!(polylines >= 10, "{polylines} lines drawn");
    let png = std::fs::read(svg_path.with_extension("png")).expect("a PNG beside the SVG");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn a_saved_sweep_is_laid_out_again_without_running() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("saved.json");
    std::fs::write(&saved, "{\"not\": \"a sweep\"}").unwrap();
    let out = std::process::Command::new(BIN)
        .args(["clients", "sweep", "--from"])
        .arg(&saved)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is not a sweep saved with --json"),
        "{stderr}"
    );
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

/// `--scenario` switches the server live for the sweep and back after it; the fix
/// is the scenario's, and the figures have its shape: persists at 1 / 60 ms
/// before, many times that after.
#[test]
#[ignore = "tier C: 13 s of sweep steps in another scenario"]
fn a_sweep_of_another_scenario_switches_the_server_and_back() {
    let server = Server::start(&[]);
    let out = std::process::Command::new(BIN)
        .args(["clients", "sweep", "--target", &server.url])
        .args([
            "--scenario",
            "sequential-persist",
            "--fix",
            "bounded-parallel",
        ])
        .args([
            "--n",
            "10",
            "--think-time",
            "100ms",
            "--duration",
            "3s",
            "--repeat",
            "1",
        ])
        .args(["--json", "-"])
        .output()
        .expect("run the sweep");
    let text = stdout_of_success(&out);
    let json = &text[text.find("\n{").expect("the JSON after the table") + 1..];
    let report: Value = serde_json::from_str(json).unwrap();
    assert_eq!(report["scenario"], "sequential-persist");
    assert_eq!(report["fix"]["name"], "bounded-parallel");
    let before = figure(&report["before"][0], "persists_done_per_min");
    let after = figure(&report["after"][0], "persists_done_per_min");
    assert!(
        (before - 1000.0).abs() < 150.0,
        "one worker: about 1 / 60 ms = 1,000/min, got {before:.0}"
    );
    assert!(
        after > 5.0 * before,
        "32 workers: {after:.0}/min vs {before:.0}/min"
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stats = runtime.block_on(stats(&client(), &server.url));
    assert_eq!(stats["scenario"], "semaphore-starvation", "switched back");
    assert_eq!(stats["config"]["persistence"], "task-per-element");
}

/// The sweep takes retry-storm and any of its fixes by name: one on the server's
/// side runs (here the second, not the model's first); one on the clients' side
/// is refused with where to compare it instead, and the server is put back.
#[test]
fn a_sweep_of_retry_storm_takes_its_server_fixes_and_names_the_clients_ones() {
    let server = Server::start(&[]);
    let sweep = |fix: &str| {
        std::process::Command::new(BIN)
            .args(["clients", "sweep", "--target", &server.url])
            .args(["--scenario", "retry-storm", "--fix", fix])
            .args([
                "--n",
                "5",
                "--think-time",
                "100ms",
                "--duration",
                "1s",
                "--repeat",
                "1",
            ])
            .args(["--step-gap", "0s"])
            .output()
            .expect("run the sweep")
    };
    let server_side = sweep("queue-wait-limit");
    let text = stdout_of_success(&server_side);
    assert!(text.contains("queue-wait-limit"), "{text}");
    let clients_side = sweep("retry-budget");
    assert!(!clients_side.status.success());
    let said = String::from_utf8_lossy(&clients_side.stderr);
    assert!(
        said.contains("a fix on the clients' side") && said.contains("demo --scenario retry-storm"),
        "{said}"
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stats = runtime.block_on(stats(&client(), &server.url));
    assert_eq!(stats["scenario"], "semaphore-starvation", "switched back");
}
