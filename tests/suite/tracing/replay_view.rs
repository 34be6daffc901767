//! A recording served as the live view (`system-simulator replay`), read in a
//! real browser: exercise 1 recorded through its fix, replayed ten times its
//! pace. The page shows the recording's seconds to its end with the figures
//! the server had (its totals, every request in the heatmap, the fix's marker,
//! the admission badge after it, the slowest request's waits); moved back with its slider, it shows the
//! seconds up to the new place and holds there; a bad move is refused and
//! changes nothing.
//!
//! With `LIVE_VIEW_SCREENSHOTS=DIR` the page at its end is written there
//! (`replay.png`).
//!
//! Tier C (the full suite only): a 12 s load, then a browser.

use crate::common;
use crate::tracing::scripts_live::tracer::Traced;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::browser::{self, Browser};
use common::*;

/// Exercise 1's ticket load (135 clients, 1 s apart), short.
const LOAD: [&str; 6] = ["--n", "135", "--think-time", "1s", "--duration", "12s"];

/// A replay that ends with the test, passed or failed.
struct Replaying(Child);

impl Drop for Replaying {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `replay FILE` on a free port; the child and its base URL (the line
/// it prints names the recorded server first and the page last,
/// `http://ADDR/live`).
fn replay(file: &std::path::Path, flags: &[&str]) -> (Replaying, String) {
    let mut child = Command::new(BIN)
        .arg("replay")
        .arg(file)
        .args(["--listen", "127.0.0.1:0"])
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("replay starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .rfind(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .trim_end_matches(';')
        .trim_end_matches("/live")
        .to_owned();
    (Replaying(child), url)
}

async fn eval_u64(page: &Browser, script: &str) -> u64 {
    page.eval(script)
        .await
        .as_u64()
        .unwrap_or_else(|| panic!("{script}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: a 12 s load recorded, then replayed in a real browser (Chromium)"]
async fn exercise_1_recorded_through_its_fix_replays_in_the_live_view() {
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.isim");
    let server = Server::start(&["--scenario", "semaphore-starvation"]);
    let http = client();
    let fix = stats(&http, &server.url).await["fixes"][0]["config"].to_string();
    let (url, out) = (server.url.clone(), file.clone());
    let recorder = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(BIN);
        command.args(["record", "--target", &url, "--seconds", "600", "--out"]);
        command.arg(&out);
        Traced::spawn(command).until_begin()
    })
    .await
    .unwrap();
    let mut load = Command::new(BIN)
        .args(["clients", "--target", &server.url])
        .args(LOAD)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // The fix once the plateau shows: requests waiting at the gate.
    let within = Duration::from_secs(20);
    let waited = std::time::Instant::now();
    while stats(&http, &server.url).await["permits_waiting"].as_u64() == Some(0) {
        assert!(waited.elapsed() < within, "no request waited for a permit");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    let applied = put_json(&http, &format!("{}/admin/config", server.url), &fix).await;
    assert_eq!(applied.status, 200, "{}", applied.body);
    wait_child(&mut load, Duration::from_secs(60));
    let done = settled_stats(&http, &server.url).await["requests_done"]
        .as_u64()
        .unwrap();
    // A second passes, so the recorder's last tick reads the settled /stats.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    tokio::task::spawn_blocking(move || Traced::interrupt_all(vec![recorder]))
        .await
        .unwrap();

    let (_replaying, base) = replay(&file, &["--speed", "10"]);
    let page = Browser::start(1600, 2400).await;
    page.goto(&format!("{base}/live?span=60")).await;
    page.wait_for(
        "the replay at its end",
        "return replay !== null && replay.at_s === replay.length_s && seconds.length === replay.length_s;",
        within,
    )
    .await;
    assert_eq!(page.text("status").await, "replay (held)");
    assert_eq!(page.text("scenario").await, "semaphore-starvation");
    // The totals are the server's own at the end; each request that ended is in
    // one second's count and in one second's heatmap.
    let shown = eval_u64(&page, "return tick.totals.requests_done;").await;
    assert_eq!(shown, done);
    let counted = "return seconds.reduce((n, s) => n + s.counts.requests_done, 0);";
    assert_eq!(eval_u64(&page, counted).await, done);
    let heat = "return seconds.reduce((n, s) => n + s.lifetime.reduce((a, b) => a + b, 0), 0);";
    assert_eq!(eval_u64(&page, heat).await, done);
    // Before the fix, requests waited at the gate; the fix is marked; after
    // it, the badge shows its permits.
    let blocked = "return seconds.reduce((n, s) => n + s.counts.requests_blocked, 0);";
    assert!(eval_u64(&page, blocked).await > 0);
    // Each second's slowest request is cut from the recorded events; before
    // the fix, the slowest waited for a permit.
    let permit_waits = "return seconds.filter((s) => s.slowest?.parts.some((p) => p.part === 'waiting for a permit')).length;";
    assert!(eval_u64(&page, permit_waits).await > 0);
    page.wait_for(
        "the slowest request's bar",
        "return !document.getElementById('waits').hidden && document.getElementById('waits-bar').children.length > 0;",
        within,
    )
    .await;
    page.wait_for(
        "the fix's marker",
        "return [...document.querySelectorAll('#markers li')].some(li => li.textContent.includes('permits=1080'));",
        within,
    )
    .await;
    let badge = page.text("badge-admission").await;
    assert!(badge.contains("/1080"), "{badge}");
    if let Some(dir) = std::env::var_os("LIVE_VIEW_SCREENSHOTS") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        page.screenshot(&dir.join("replay.png")).await;
    }

    // Moved back with the slider: the history up to there, held.
    page.eval(
        "const at = document.getElementById('replay-at'); at.value = 3; at.dispatchEvent(new Event('change')); return 0;",
    )
    .await;
    page.wait_for(
        "the replay moved to second 3",
        "return replay.at_s === 3 && seconds.length === 3 && replay.paused;",
        within,
    )
    .await;
    let at_3 = eval_u64(&page, "return tick.totals.requests_done;").await;
    let first_3 = eval_u64(&page, counted).await;
    assert_eq!(at_3, first_3, "the totals at second 3 are its seconds' sum");
    assert!(at_3 < done);
    // A bad move is refused, with its reason, and the replay stays.
    let refused = put_json(&http, &format!("{base}/replay"), r#"{"at_s": 100000}"#).await;
    assert_eq!(refused.status, 400);
    assert!(
        refused.body.contains("past the recording's end"),
        "{}",
        refused.body
    );
    let state: serde_json::Value =
        serde_json::from_str(&put_json(&http, &format!("{base}/replay"), "{}").await.body).unwrap();
    assert_eq!(state["at_s"], 3);
}
