//! `workshop check`, the win condition, as a user runs it: the binary's exit
//! status. It fails on an exercise as it starts, with no other load on the server
//! (a stopped load cannot make it pass: the check brings its own), passes once the
//! fix is in, and refuses a server in another scenario and a window with another
//! load running beside it. That it fails before and passes after *every*
//! documented fix is `tests/workshop_pages.rs`, which measures each fix for the
//! pages' figures through the same check.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_check_fails_with_no_other_load_and_passes_after_the_fix() {
    let _turn = SERIAL.lock().await;
    let server = Server::start(&["--scenario", "sequential-persist"]);
    let (passed, printed) = check(&server, "sequential-persist");
    assert!(
        !passed && printed.contains("FAIL") && printed.contains("not yet"),
        "{printed}"
    );
    put(&server, r#"{"persist_workers": 32}"#).await;
    let (passed, printed) = check(&server, "sequential-persist");
    assert!(passed && printed.contains("solved"), "{printed}");
}
