//! `trace waits` on exercise 12 (periodic-stall): the slowest requests' lifetimes
//! cut into their parts name the index's lock and the compaction that held it,
//! and the parts sum to each lifetime as the probes timed it within 2 %; the
//! same cut replayed from a recording of the run prints the same. No root.

use crate::common;
use crate::tracing::scripts_live::tracer::Traced;

use std::process::Command;

use common::*;

/// `request ID: X ms (its request-done says Y ms)` and the parts under it.
#[derive(Debug)]
struct Listed {
    header: String,
    lifetime_ms: f64,
    reported_ms: f64,
    parts: Vec<(String, f64)>,
}

fn listed(output: &str) -> Vec<Listed> {
    let mut all: Vec<Listed> = Vec::new();
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("request ") {
            let number = |s: &str| s.trim().trim_end_matches(" ms").parse::<f64>().unwrap();
            let (_, times) = rest.split_once(": ").unwrap();
            let (lifetime, reported) = times.split_once(" (its request-done says ").unwrap();
            all.push(Listed {
                header: line.to_owned(),
                lifetime_ms: number(lifetime),
                reported_ms: number(reported.trim_end_matches(')')),
                parts: Vec::new(),
            });
        } else if let (Some(last), true) = (all.last_mut(), line.starts_with("  ")) {
            let Some((name, ms)) = line.trim().split_once("  ") else {
                continue;
            };
            let ms = ms.trim_start().split(" ms").next().unwrap();
            let Ok(ms) = ms.trim().parse::<f64>() else {
                break;
            };
            last.parts.push((name.trim().to_owned(), ms));
        } else if line.starts_with("Where every request") {
            break;
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread")]
async fn waits_on_exercise_12_names_the_compaction_and_its_parts_sum_to_each_lifetime() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stall.isim");
    let server = Server::start(&["--scenario", "periodic-stall"]);
    let (url, path) = (server.url.clone(), file.clone());
    let started = tokio::task::spawn_blocking(move || {
        let mut waits = Command::new(BIN);
        waits.args(["trace", "waits", "--target", &url, "--seconds", "600"]);
        let mut record = Command::new(BIN);
        record.args(["record", "--target", &url, "--seconds", "600", "--out"]);
        record.arg(&path);
        vec![
            Traced::spawn(waits).until_begin(),
            Traced::spawn(record).until_begin(),
        ]
    })
    .await
    .unwrap();
    // Compactions come every 3 s of the server's: 5 s of load holds at least one.
    let load = [
        "--n",
        "64",
        "--rate",
        "100",
        "--arrivals",
        "poisson",
        "--duration",
        "5s",
    ];
    let printed = crate::tracing::recording::load_then_stop(&server, &load, started).await;
    let live = &printed[0];

    let slowest = listed(live);
    assert!(!slowest.is_empty(), "{live}");
    let first = &slowest[0];
    let (part, _) = first
        .parts
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    assert_eq!(part, "waiting for the index's lock", "{live}");
    assert!(first.lifetime_ms > 100.0, "a stall: {live}");
    let lock_line = live
        .lines()
        .find(|l| l.trim_start().starts_with("waiting for the index's lock"))
        .unwrap();
    assert!(lock_line.contains("behind compaction "), "{lock_line}");
    for request in &slowest {
        let summed: f64 = request.parts.iter().map(|(_, ms)| ms).sum();
        // Each part is printed to 0.1 ms.
        let rounding = 0.05 * request.parts.len() as f64 + 0.05;
        assert!(
            (summed - request.lifetime_ms).abs() <= rounding,
            "{}: parts sum to {summed} ms: {request:?}",
            request.header
        );
        // The tap reads its clock just after the server's own at each end: a
        // thread preempted there on a busy machine moves one side by up to a
        // millisecond or so, which only the stalled requests' 2 % covers.
        let bound = if request.reported_ms > 50.0 {
            0.02 * request.reported_ms
        } else {
            0.02 * request.reported_ms + 1.0
        };
        assert!(
            (request.lifetime_ms - request.reported_ms).abs() <= bound,
            "{}: the tap's lifetime is not the probe's own within 2 %",
            request.header
        );
    }

    let replayed = Command::new(BIN)
        .args(["trace", "waits", "--from"])
        .arg(&file)
        .output()
        .unwrap();
    let replayed = stdout_of_success(&replayed);
    let summary = |text: &str| {
        text[text.find("The slowest").unwrap()..]
            .trim_end()
            .to_owned()
    };
    assert_eq!(summary(&replayed), summary(live), "replayed, the same cut");
    drop(server);
}
