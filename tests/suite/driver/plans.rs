//! A load with a plan and pass bars (`--stages`, `--threshold`) against the
//! real server: the same plan read from a scenario file and from the command
//! line, the exit status a bar gives, a bar judged over its stage only, the
//! stages marked in the server's trail, and a bar refused before any load.

use crate::common;

use std::process::{Command, Output};

use clap::Parser;
use common::*;
use simulator_service::scenario::Scenario;

const PLAN: &str = "warm: ramp 20/s 1s, base: hold 2s, peak: spike 300/s 1s, after: hold 1s";

#[test]
fn a_plan_in_a_scenario_file_is_the_plan_on_the_command_line() {
    let bundled = include_str!("../../../scenarios/semaphore-starvation.toml");
    let load_line = bundled
        .lines()
        .find(|l| l.starts_with("load = "))
        .expect("the scenario has a load");
    let planned = format!(r#"load = ["--n", "64", "--stages", "{PLAN}"]"#);
    let scenario = Scenario::parse("planned.toml", &bundled.replace(load_line, &planned))
        .unwrap_or_else(|e| panic!("{e}"));
    let args = simulator_clients::cli::Args::try_parse_from([
        "sim-clients",
        "--n",
        "64",
        "--stages",
        PLAN,
    ])
    .expect("the flags parse");
    let typed = args.plan().expect("a plan");
    assert_eq!(scenario.load.stages, typed.load.stages);
    assert_eq!(scenario.load.pacing, typed.load.pacing);
    let stages = typed.load.stages.expect("stages");
    let names: Vec<&str> = stages.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["warm", "base", "peak", "after"]);
    assert_eq!(typed.stop.duration, Some(std::time::Duration::from_secs(5)));
}

fn sim_clients_run(target: &str, words: &[&str]) -> Output {
    Command::new(sim_clients())
        .args(["--target", target, "--n", "400"])
        .args(words)
        .output()
        .expect("run sim-clients")
}

fn status(out: &Output) -> Option<i32> {
    out.status.code()
}

/// Against the default server (8 permits, about 131 answers a second): 20 a
/// second are answered in a few ms; 300 a second for 1 s pile up a queue of
/// about 170, a wait of over a second.
#[test]
fn a_run_exits_by_its_bars_each_judged_over_its_own_span() {
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("planned.json");
    let out = sim_clients_run(
        &server.url,
        &[
            "--stages",
            PLAN,
            "--json",
            json.to_str().unwrap(),
            "--threshold",
            "base: p(99)<250ms",
            "--threshold",
            "peak: p(99)<250ms",
            "--threshold",
            "p(99)<250ms",
            "--threshold",
            "peak: achieved/offered>0.9",
        ],
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        status(&out),
        Some(99),
        "{printed}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let verdicts: Vec<(String, bool)> = report["thresholds"]
        .as_array()
        .expect("the bars in the report")
        .iter()
        .map(|j| {
            (
                j["threshold"].as_str().unwrap().to_owned(),
                j["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    let passed = |bar: &str| verdicts.iter().find(|(t, _)| t == bar).map(|(_, p)| *p);
    assert_eq!(passed("base: p(99)<250ms"), Some(true), "{printed}");
    assert_eq!(passed("peak: p(99)<250ms"), Some(false), "{printed}");
    assert_eq!(
        passed("p(99)<250ms"),
        Some(false),
        "the run holds the peak: {printed}"
    );
    assert_eq!(
        passed("peak: achieved/offered>0.9"),
        Some(false),
        "{printed}"
    );
    assert!(printed.contains("FAIL  peak: p(99)<250ms"), "{printed}");

    // The stages add up to the run, and the peak's achieved rate is the
    // server's capacity, well under what was offered.
    let stages = report["stages"].as_array().expect("stages");
    let sum = |key: &str| stages.iter().map(|s| s[key].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("sent"), report["requests_sent"].as_u64().unwrap());
    assert_eq!(
        sum("completed"),
        report["requests_completed"].as_u64().unwrap()
    );
    let peak = &stages[2];
    assert!(
        (peak["offered_per_s"].as_f64().unwrap() - 300.0).abs() < 3.0,
        "{peak}"
    );
    assert!(peak["achieved_per_s"].as_f64().unwrap() < 200.0, "{peak}");

    // The server marked each stage as it began.
    let trail = blocking_get_json(&format!("{}/admin/trail", server.url));
    let marked: Vec<&str> = trail["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "stage")
        .map(|e| e["what"].as_str().unwrap())
        .collect();
    assert_eq!(marked.len(), 4, "{marked:?}");
    assert!(marked[2].starts_with("peak: spike to 300/s"), "{marked:?}");

    // A run that keeps its bar exits 0.
    let kept = sim_clients_run(
        &server.url,
        &["--stages", "step 20/s 2s", "--threshold", "p(99)<250ms"],
    );
    assert_eq!(
        status(&kept),
        Some(0),
        "{}",
        String::from_utf8_lossy(&kept.stdout)
    );

    // Bars that do not read are refused before any load: the server saw none.
    let before =
        blocking_get_json(&format!("{}/stats", server.url))["counts"]["requests_started"].clone();
    for bad in ["p(99)<2O0ms", "latency_p99<1s", "spike: p(99)<1s"] {
        let refused = sim_clients_run(&server.url, &["--stages", PLAN, "--threshold", bad]);
        let said = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(status(&refused), Some(2), "{bad}: {said}");
        assert!(
            said.contains(&format!("threshold `{bad}`")),
            "{bad}: {said}"
        );
    }
    let after =
        blocking_get_json(&format!("{}/stats", server.url))["counts"]["requests_started"].clone();
    assert_eq!(before, after, "no load was sent");
}

fn blocking_get_json(url: &str) -> serde_json::Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = get(&client(), url).await;
        response.json()
    })
}

/// The default server's model names its capacity (8 permits over a 61 ms
/// persist: about 131 a second); the knee of a latency bar lies just below
/// it, where the queue for the permits begins.
#[test]
fn the_knee_of_a_latency_bar_lies_at_the_capacity_the_model_names() {
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("knee.json");
    let out = Command::new(sim_clients())
        .args(["knee", "--target", &server.url, "--bar", "p(99)<100ms"])
        .args(["--from", "64/s", "--step", "1s", "--precision", "10%"])
        .args(["--n", "200"])
        .args(["--json", json.to_str().unwrap()])
        .output()
        .expect("run sim-clients knee");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{printed}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let knee = report["knee"].as_f64().expect("a knee");
    let steps = report["steps"].as_array().unwrap();
    let capacity = steps[0]["server"]["model_capacity_per_s"].as_f64().unwrap();
    assert!(
        knee >= 0.8 * capacity && knee <= 1.1 * capacity,
        "knee {knee}/s against the model's {capacity}/s\n{printed}"
    );
    // Climbing by 2 from 64, then bisecting: every step kept, the first fail
    // above the knee within 10 %.
    let levels: Vec<f64> = steps.iter().map(|s| s["level"].as_f64().unwrap()).collect();
    assert_eq!(levels[..2], [64.0, 128.0], "{levels:?}");
    let fail = report["first_fail"].as_f64().unwrap();
    assert!(fail > knee && (fail - knee) / knee <= 0.1, "{knee} {fail}");
    assert!(
        printed.contains("its model: admission: 8 permits"),
        "{printed}"
    );
}
