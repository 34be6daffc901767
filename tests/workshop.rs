//! `workshop check`, the win condition, against the real binaries: for every
//! exercise it fails on the scenario as it starts and passes after each documented
//! fix applied live (a fix marked as a trade-off, like shedding most of the load,
//! must still fail); it refuses a server in another scenario and a window with
//! another load running beside it. The check always brings its own load, so no
//! load at all on the server (a stopped load) never makes it pass: every "before"
//! below runs with no other load.
//!
//! One test runs the exercises one after another: each check is a few seconds of
//! real load, and checks running side by side would measure each other.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use system_simulator::scenario;

/// `workshop check NAME` against `server`: (passed, what it printed).
fn check(server: &Server, exercise: &str) -> (bool, String) {
    let out = Command::new(BIN)
        .args(["workshop", "check", exercise, "--target", &server.url])
        .args(["--duration", "8s"])
        .output()
        .expect("run workshop check");
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => (true, printed),
        Some(1) => (false, printed),
        other => panic!("workshop check exited {other:?}:\n{printed}"),
    }
}

/// The two tests take turns: a check measures real time on shared cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn put(server: &Server, body: &str) {
    let answer = put_json(&client(), &format!("{}/admin/config", server.url), body).await;
    assert_eq!(answer.status, 200, "{body}: {}", answer.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_exercise_fails_before_and_passes_after_each_fix() {
    let _turn = SERIAL.lock().await;
    for exercise in scenario::bundled().unwrap() {
        let server = Server::start(&["--scenario", &exercise.name]);
        let (passed, printed) = check(&server, &exercise.name);
        assert!(
            !passed,
            "{}: passed before any fix:\n{printed}",
            exercise.name
        );
        assert!(printed.contains("FAIL"), "{printed}");
        for fix in &exercise.fixes {
            let body = serde_json::to_string(&fix.config_for(exercise.clients()).unwrap()).unwrap();
            put(&server, &body).await;
            let (passed, printed) = check(&server, &exercise.name);
            match &fix.trade_off {
                None => assert!(
                    passed,
                    "{} after {}: not passed:\n{printed}",
                    exercise.name, fix.name
                ),
                Some(_) => assert!(
                    !passed,
                    "{} after trade-off {}: passed:\n{printed}",
                    exercise.name, fix.name
                ),
            }
            put(&server, &format!(r#"{{"scenario": "{}"}}"#, exercise.name)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_check_refuses_another_scenario_and_another_load() {
    let _turn = SERIAL.lock().await;
    // A server restarted in another scenario, however healthy, is not the exercise.
    let other = Server::start(&[
        "--scenario",
        "sequential-persist",
        "--persist-workers",
        "32",
    ]);
    let (passed, printed) = check(&other, "semaphore-starvation");
    assert!(
        !passed && printed.contains("runs scenario sequential-persist"),
        "{printed}"
    );

    // A load beside the check's changes what the window means: refused.
    let server = Server::start(&["--scenario", "semaphore-starvation", "--permits", "100000"]);
    let url = server.url.clone();
    let beside = std::thread::spawn(move || {
        Command::new(BIN)
            .args([
                "clients",
                "--target",
                &url,
                "--n",
                "50",
                "--think-time",
                "10ms",
            ])
            .args(["--duration", "12s"])
            .output()
            .unwrap()
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (passed, printed) = check(&server, "semaphore-starvation");
    assert!(
        !passed && printed.contains("stop any other load"),
        "{printed}"
    );
    beside.join().unwrap();
    // Without it, the same server (its fix applied at start) passes.
    let (passed, printed) = check(&server, "semaphore-starvation");
    assert!(passed, "{printed}");
}
