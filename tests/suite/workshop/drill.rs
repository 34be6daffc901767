//! The drill (issue 99): nothing a drill's server shows names its draw.
//!
//! An attendee can read the complaint and the banner, `/stats`, `/scenarios`,
//! `/metrics`, the live view's hello, the process's arguments and environment,
//! and the files it writes. For three draws, no cause's name appears in any of
//! them, and no fix's name or cause word appears in one draw's but not in
//! another's: a word every server says (`remember_replies_for` is a setting of
//! all of them) tells nothing of the draw. The dressed settings of the draws
//! list many keys beside the fault's (`src/workshop/drill/dress.rs`).

use std::collections::BTreeSet;

use simulator_service::scenario;
use system_simulator::workshop::drill::draw::{seed_for, NOTHING};

use super::workshop_pages::stands_in;
use crate::common::*;

/// The service's own settings (not the world's) whose values in `/stats`
/// differ from the defaults: what a diff of its configuration lists.
fn own_settings_moved(stats: &serde_json::Value) -> BTreeSet<String> {
    let defaults = serde_json::to_value(simulator_api::Settings::default()).unwrap();
    simulator_api::SETTINGS
        .iter()
        .filter(|s| !s.world && stats["config"][s.key] != defaults[s.key])
        .map(|s| s.key.to_owned())
        .collect()
}

/// Everything an attendee of the drill `seed` reads from its server, without
/// root: one text, and the own settings its `/stats` moved from the defaults.
async fn what_an_attendee_reads(seed: &str) -> (String, BTreeSet<String>) {
    let cwd = tempfile::tempdir().unwrap();
    let server = Server::start_drill(seed, cwd.path());
    let client = client();
    let mut read = Vec::new();
    let mut moved = BTreeSet::new();
    for route in ["/stats", "/scenarios", "/metrics", "/healthz"] {
        let r = get(&client, &format!("{}{route}", server.url)).await;
        assert_eq!(r.status, 200, "{route}: {}", r.body);
        if route == "/stats" {
            moved = own_settings_moved(&r.json());
        }
        read.push(r.body);
    }
    let hello = live_hello(&server.url).await;
    let hello = hello.to_string();
    assert!(hello.contains(r#""name":"drill""#), "{hello}");
    read.push(hello);
    for file in ["cmdline", "environ"] {
        let bytes = std::fs::read(format!("/proc/{}/{file}", server.pid)).unwrap_or_default();
        read.push(String::from_utf8_lossy(&bytes).replace('\0', " "));
    }
    let (_, printed) = server.terminate(std::time::Duration::from_secs(20));
    read.push(printed);
    let written: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().collect();
    assert!(written.is_empty(), "the drill wrote {written:?}");
    (read.join("\n"), moved)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_a_drills_server_shows_names_its_draw() {
    if !cfg!(target_os = "linux") {
        return skip_or_fail("reads the process's arguments and environment from /proc");
    }
    let drawn = ["noisy-neighbour", "remembered-replies", NOTHING];
    let mut surfaces = Vec::new();
    let mut diffs = Vec::new();
    for answer in drawn {
        let seed = seed_for(answer).unwrap();
        let (text, moved) = what_an_attendee_reads(&seed).await;
        assert!(text.contains("drill"), "{answer}: {text}");
        assert!(moved.len() >= 12, "{answer}: a diff lists {moved:?}");
        surfaces.push((answer, text));
        diffs.push(moved);
    }
    // A diff of the service's own settings against the defaults lists the
    // same keys for the neighbour's draw as for nothing's: the dressing sets
    // theirs, and the neighbour's fault is in its world (a process `top`
    // shows), not in a setting. Remembered replies' fault is a setting, and
    // its diff lists it.
    assert_eq!(diffs[0], diffs[2], "noisy-neighbour's diff against none's");
    assert_ne!(diffs[1], diffs[2]);
    let all = scenario::bundled().unwrap();
    let mut words = BTreeSet::new();
    for s in &all {
        words.extend(s.cause_words.iter().cloned());
        words.extend(s.fixes.iter().map(|f| f.name.clone()));
        words.insert(s.visible_name().to_owned());
    }
    let mut told = Vec::new();
    for s in &all {
        for (answer, text) in &surfaces {
            if stands_in(text, &s.name) {
                told.push(format!("{answer}'s server names the cause {}", s.name));
            }
        }
    }
    for word in &words {
        let saying: Vec<&str> = surfaces
            .iter()
            .filter(|(_, text)| stands_in(text, word))
            .map(|(answer, _)| *answer)
            .collect();
        if !saying.is_empty() && saying.len() < surfaces.len() {
            told.push(format!(
                "`{word}` is said by the servers of {saying:?} only"
            ));
        }
    }
    assert!(told.is_empty(), "{}", told.join("\n"));
}

/// Runs this binary with `args` and returns what it printed; it must succeed.
fn run_ok(args: &[&str]) -> String {
    let out = std::process::Command::new(BIN).args(args).output().unwrap();
    stdout_of_success(&out)
}

/// The lines of a drill's report that follow its trail, as (clock, kind, what).
fn trail_lines(report: &str) -> Vec<(String, String, String)> {
    report
        .lines()
        .skip_while(|l| !l.starts_with("the trail"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| {
            let mut words = l.split_whitespace();
            let clock = words.next().unwrap().to_owned();
            let kind = words.next().unwrap().to_owned();
            (clock, kind, words.collect::<Vec<_>>().join(" "))
        })
        .collect()
}

/// Seconds since the server started, from a report's `m:ss`.
fn seconds(clock: &str) -> u64 {
    let (m, s) = clock.split_once(':').unwrap();
    m.parse::<u64>().unwrap() * 60 + s.parse::<u64>().unwrap()
}

/// A scripted attendee counts, then looks at the permits' waits, then fixes
/// and names the cause: the report shows those steps in that order with their
/// times, and names no anti-method. Another changes a setting before any look:
/// the report names the random change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trail_shows_a_scripted_attendees_steps_in_order_and_names_a_random_change() {
    let seed = seed_for("semaphore-starvation").unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = Server::start_drill(&seed, cwd.path());
    let target = server.url.clone();
    let client = client();
    let recording = cwd.path().join("drill.isim");
    let mut recorder = std::process::Command::new(BIN)
        .args(["record", "--target", &target, "--seconds", "60", "--out"])
        .arg(&recording)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    run_ok(&["trace", "count", "--target", &target, "--seconds", "1"]);
    run_ok(&[
        "trace",
        "permit-wait",
        "--target",
        &target,
        "--seconds",
        "1",
    ]);
    let fixed = put_json(
        &client,
        &format!("{target}/admin/config"),
        r#"{"permits": 64}"#,
    )
    .await;
    assert_eq!(fixed.status, 200, "{}", fixed.body);
    let said = run_ok(&[
        "drill",
        "diagnose",
        "--seed",
        &seed,
        "--target",
        &target,
        "semaphore-starvation",
    ]);
    assert!(said.contains("semaphore-starvation: right"), "{said}");
    let again = run_ok(&[
        "drill", "diagnose", "--seed", &seed, "--target", &target, "none",
    ]);
    assert!(
        again.contains("your first, semaphore-starvation: right"),
        "{again}"
    );
    let report = run_ok(&["drill", "report", "--seed", &seed, "--target", &target]);
    let steps = trail_lines(&report);
    let at = |kind: &str, what: &str| {
        steps
            .iter()
            .position(|(_, k, w)| k == kind && w.starts_with(what))
            .unwrap_or_else(|| panic!("no {kind} {what} in the trail:\n{report}"))
    };
    let order = [
        at("look", "trace count"),
        at("look", "trace permit-wait"),
        at("change", "permits=64"),
        at("diagnosis", "semaphore-starvation"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{report}");
    let times: Vec<u64> = order.iter().map(|&i| seconds(&steps[i].0)).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "{times:?}\n{report}"
    );
    // Each trace ran for a second after the server was up.
    assert!(times[1] >= 1 && times[3] >= 2, "{times:?}\n{report}");
    assert!(
        report.contains("(semaphore-starvation: right)"),
        "the first diagnosis is scored: {report}"
    );
    let bookkeeping = steps
        .iter()
        .any(|(_, k, w)| (k == "look" || k == "load") && w.contains("(drill "));
    assert!(
        !bookkeeping,
        "the drill's own reads are bookkeeping: {report}"
    );
    assert!(!report.contains("anti-method"), "{report}");
    assert!(report.contains("the trail cannot see them"), "{report}");
    // The recording keeps the trail: its report, once the recorder has read
    // the diagnosis (it reads the trail each second), shows the same steps.
    let from = recording.to_str().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let kept = loop {
        let out = std::process::Command::new(BIN)
            .args(["drill", "report", "--seed", &seed, "--from", from])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("(semaphore-starvation: right)") {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the recording never kept the diagnosis: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    for step in ["trace count", "trace permit-wait", "permits=64"] {
        assert!(
            kept.contains(step),
            "the recording's trail lacks {step}: {kept}"
        );
    }
    std::process::Command::new("kill")
        .args(["-INT", &recorder.id().to_string()])
        .status()
        .unwrap();
    let ended = wait_child(&mut recorder, std::time::Duration::from_secs(10));
    assert!(
        ended.success(),
        "the recorder ends whole on Ctrl-C: {ended}"
    );
    drop(server);

    let rash = Server::start_drill(&seed, cwd.path());
    let changed = put_json(
        &client,
        &format!("{}/admin/config", rash.url),
        r#"{"permits": 200}"#,
    )
    .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    run_ok(&[
        "drill",
        "note",
        "--target",
        &rash.url,
        "ran bpftrace permit-wait.bt",
    ]);
    let report = run_ok(&["drill", "report", "--seed", &seed, "--target", &rash.url]);
    assert!(
        report.contains("anti-method     random change: `permits=200`"),
        "{report}"
    );
    assert!(
        report.contains("note      ran bpftrace permit-wait.bt"),
        "{report}"
    );
}

/// The draw of nothing: the healthy service passes the drill's check as it
/// is, with no change (the sixteen causes fail and pass theirs in
/// `workshop::exercises::each`, whose whole-machine run is the drill's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: a drill check's window on a server of its own; runs alone"]
async fn the_draw_of_nothing_passes_the_drills_check_untouched_alone() {
    runs_alone();
    let seed = seed_for(NOTHING).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = Server::start_drill(&seed, cwd.path());
    let out = std::process::Command::new(BIN)
        .args(["drill", "check", "--seed", &seed, "--target", &server.url])
        .args(["--duration", "6s"])
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{printed}");
    assert!(printed.contains("solved"), "{printed}");
}
