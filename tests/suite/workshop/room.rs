//! The workshop room (`system-simulator room`) with real attendees: eight seats,
//! each its own server and `workshop check`, half of them after the fix, read on
//! the facilitator's page in headless Chromium (tier C); the room's refusals
//! over HTTP, a restart from its state file, and a check that reports to a room
//! that is not there or to a server with an admin token (tier B).
//!
//! With `ROOM_SCREENSHOTS=DIR` the browser test also writes the facilitator's,
//! a seat's and the projector's pages there, the drill's column with two
//! seats' trails side by side, and a seat's before and after
//! (docs/workshop/README.md shows them:
//! `ROOM_SCREENSHOTS=docs/workshop/room cargo test --test suite -- --include-ignored
//! workshop::room::eight`).

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::browser::{self, Browser};
use common::{client, get, put_json, send, skip_or_fail, Server, BIN};
use hyper::Method;
use serde_json::{json, Value};

/// An exercise as its attendees know it; its cause's name is `CAUSE`.
const EXERCISE: &str = "trickling-writes";
const CAUSE: &str = "sequential-persist";
const FIX: &str = r#"{"persist_workers": 32}"#;

/// A running room; killed on drop.
struct Room {
    child: Child,
    url: String,
    key: String,
    password: String,
}

impl Room {
    fn start(state: &std::path::Path, listen: &str) -> Room {
        let mut child = Command::new(BIN)
            .args(["room", "--listen", listen, "--password", "plum-42"])
            .args(["--drill-seed", &drill_seed()])
            // Short, so the test sees the seats that failed marked stuck.
            .args(["--stuck-after", "5s"])
            .arg("--state")
            .arg(state)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .expect("the room starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut text = String::new();
        while !text.contains("every `workshop check`") {
            let line = lines.next().expect("the room's banner").unwrap();
            text.push_str(&line);
            text.push('\n');
        }
        // Keep reading what it prints after (the drill's line follows): a
        // closed pipe would fail its next line and end it.
        std::thread::spawn(move || lines.for_each(drop));
        let after = |marker: &str| common::word_after(&text, marker);
        let addr = after("room: listening on ");
        Room {
            url: format!("http://{addr}"),
            key: after("/room/login with the key "),
            password: after("/join/"),
            child,
        }
    }

    fn invitation(&self) -> String {
        format!("{}/join/{}", self.url, self.password)
    }

    async fn board(&self) -> Value {
        self.as_facilitator("/room/board").await.json()
    }

    /// GET `path` with the facilitator's key.
    async fn as_facilitator(&self, path: &str) -> common::Response {
        let auth = format!("Bearer {}", self.key);
        let url = format!("{}{path}", self.url);
        let r = send(
            &client(),
            Method::GET,
            &url,
            &[("authorization", &auth)],
            "",
        )
        .await;
        assert!(r.status.is_success(), "{path}: {}", r.body);
        r
    }

    /// SIGTERM, as a facilitator's Ctrl-C: the room writes its file and exits.
    fn stop(mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exited = common::wait_child(&mut self.child, Duration::from_secs(10));
        assert!(exited.success(), "the room exits cleanly: {exited}");
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `workshop check` of `target` as `seat` of `room` (its token kept under `state`).
fn check_as(seat: &str, target: &str, invitation: &str, state: &std::path::Path) -> Command {
    let mut check = Command::new(BIN);
    check
        .args([
            "workshop",
            "check",
            EXERCISE,
            "--target",
            target,
            "--duration",
            "6s",
        ])
        .env("ISIM_ROOM", invitation)
        .env("ISIM_SEAT", seat)
        .env("XDG_STATE_HOME", state)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    check
}

async fn post(url: &str, token: Option<&str>, body: Value) -> common::Response {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.as_str()));
    }
    send(&client(), Method::POST, url, &headers, body.to_string()).await
}

fn report(seat: &str, attempt: u64) -> Value {
    json!({"seat": seat, "attempt": attempt, "progress": {
        "scenario": EXERCISE, "window_s": 10.0, "elapsed_s": 1.0,
        "conditions": [], "verdict": null, "passed": null}})
}

fn state_of(cell_text: &Value) -> String {
    cell_text.as_str().unwrap_or("").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: eight servers under their checks' load, read in a real browser (Chromium)"]
async fn eight_seats_show_on_the_facilitators_page_within_5_s_of_their_verdicts_alone() {
    common::runs_alone();
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    let dir = tempfile::tempdir().unwrap();
    let room = Room::start(&dir.path().join("room.json"), "127.0.0.1:0");
    let seats: Vec<String> = (1..=8).map(|i| format!("seat-{i}")).collect();
    let fixed = |i: usize| i.is_multiple_of(2); // seat-1, seat-3, ... apply the fix
    let servers: Vec<Server> = seats
        .iter()
        .map(|_| Server::start_exercise(EXERCISE))
        .collect();
    for (i, server) in servers.iter().enumerate() {
        if fixed(i) {
            let r = put_json(&client(), &format!("{}/admin/config", server.url), FIX).await;
            assert!(r.status.is_success(), "{}", r.body);
        }
    }
    let page = Browser::start(1400, 1000).await;
    page.goto(&format!("{}/room#key={}", room.url, room.key))
        .await;
    page.wait_for(
        "the stream",
        "return document.getElementById('status').textContent === 'live';",
        Duration::from_secs(20),
    )
    .await;

    let began = Instant::now();
    let mut checks: Vec<Option<Child>> = seats
        .iter()
        .zip(&servers)
        .map(|(seat, server)| {
            let mut check = check_as(seat, &server.url, &room.invitation(), dir.path());
            // seat-1 (fixed) and seat-2 (not) keep their runs, for a before
            // and after (`before_and_after`).
            if ["seat-1", "seat-2"].contains(&seat.as_str()) {
                check
                    .arg("--record")
                    .arg(dir.path().join(format!("{seat}.isim")));
            }
            Some(check.spawn().unwrap())
        })
        .collect();
    let mut exited: Vec<Option<(Duration, bool)>> = vec![None; 8];
    let mut shown: Vec<Option<(Duration, String)>> = vec![None; 8];
    let mut outputs = vec![String::new(); 8];
    let cells = seats
        .iter()
        .map(|s| format!("(document.getElementById('cell-{s}-{EXERCISE}') || {{dataset: {{}}}}).dataset.state || ''"))
        .collect::<Vec<_>>()
        .join(", ");
    let read_cells = format!("return [{cells}];");
    while (exited.iter().any(Option::is_none) || shown.iter().any(Option::is_none))
        && began.elapsed() < Duration::from_secs(120)
    {
        for (i, slot) in checks.iter_mut().enumerate() {
            let Some(child) = slot else { continue };
            if let Some(status) = child.try_wait().unwrap() {
                exited[i] = Some((began.elapsed(), status.success()));
                let child = slot.take().unwrap();
                let out = child.wait_with_output().unwrap();
                outputs[i] = format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        let states = page.eval(&read_cells).await;
        for (i, state) in states.as_array().unwrap().iter().enumerate() {
            let state = state_of(state);
            if shown[i].is_none() && (state == "solved" || state == "failed") {
                shown[i] = Some((began.elapsed(), state));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The room shows each seat's own verdict. A seat without the fix always
    // fails; a fixed one passes unless eight servers, their checks and the
    // browser on two CPUs push its latency over the bound (a fixed seat's p99
    // read 61 ms against 50 in one CI run on a slower VM), so the fixed seats
    // must pass at least once for the room to show both states.
    let mut passed_at = [false; 8];
    for i in 0..8 {
        let (exit_at, passed) = exited[i].unwrap_or_else(|| panic!("{} did not finish", seats[i]));
        passed_at[i] = passed;
        let (shown_at, state) = shown[i]
            .clone()
            .unwrap_or_else(|| panic!("{} never shown: {}", seats[i], outputs[i]));
        let expected = if passed { "solved" } else { "failed" };
        assert_eq!(state, expected, "{}: {}", seats[i], outputs[i]);
        assert!(
            fixed(i) || !passed,
            "{}: passed without the fix: {}",
            seats[i],
            outputs[i]
        );
        assert!(
            shown_at <= exit_at + Duration::from_secs(5),
            "{} shown {shown_at:?}, its check exited {exit_at:?}",
            seats[i]
        );
        assert!(
            !outputs[i].contains("the room does not show"),
            "{}",
            outputs[i]
        );
    }
    let summary = page
        .eval(&format!("const s = document.getElementById('summary-{EXERCISE}').dataset; return [+s.solved, +s.attempted];"))
        .await;
    let solved = passed_at.iter().filter(|p| **p).count();
    assert!(solved > 0, "no fixed seat passed: {outputs:#?}");
    assert_eq!(summary, json!([solved, 8]));
    let most = page.text(&format!("summary-{EXERCISE}")).await;
    assert!(most.contains("fails most: "), "{most}");
    // Five seconds on the exercise without solving it: exactly the seats that did not pass.
    let stuck = seats
        .iter()
        .map(|s| format!("document.getElementById('seat-{s}').dataset.stuck === 'yes'"))
        .collect::<Vec<_>>()
        .join(", ");
    let expected: Vec<bool> = passed_at.iter().map(|passed| !passed).collect();
    page.wait_for(
        "the seats that did not pass marked stuck",
        &format!(
            "const s = [{stuck}]; return JSON.stringify(s) === {:?};",
            serde_json::to_string(&expected).unwrap()
        ),
        Duration::from_secs(15),
    )
    .await;
    let drills = drill_column(&page, &room, dir.path()).await;
    before_and_after(&page, &room, dir.path()).await;
    if let Some(out) = std::env::var_os("ROOM_SCREENSHOTS").map(std::path::PathBuf::from) {
        screenshots(&page, &room, dir.path(), &out).await;
        page.wait_for(
            "the board",
            "return document.getElementById('status').textContent === 'live';",
            Duration::from_secs(10),
        )
        .await;
        open_the_debrief(&page).await;
        page.eval("document.getElementById('grid-title').scrollIntoView(); return true;")
            .await;
        page.screenshot(&out.join("drill.png")).await;
        page.eval("document.getElementById('trails-hide').click(); return true;")
            .await;
        open_the_comparisons(&page).await;
        page.eval(
            "document.getElementById('before-after').scrollIntoView({block: 'end'}); return true;",
        )
        .await;
        page.screenshot(&out.join("before-after.png")).await;
    }
    drop(drills);

    // Restarted from its file: the same board, and the seats' tokens still report.
    let before = room.board().await;
    let (url, invitation) = (room.url.clone(), room.invitation());
    room.stop();
    let again = Room::start(
        &dir.path().join("room.json"),
        url.trim_start_matches("http://"),
    );
    assert_eq!(
        again.invitation(),
        invitation,
        "the room keeps its password"
    );
    let after = again.board().await;
    for part in ["seats", "per_exercise", "timeline", "seat_count"] {
        assert_eq!(before[part], after[part], "{part} after the restart");
    }
    // The solved count the page showed before the restart: a fixed seat may
    // fail on a loaded machine (above), so it is not always 4. Waiting for 4
    // when 3 had passed was a CI run's "did not show the page back after the
    // restart" (issue 78): the page had reconnected; the test expected a board
    // the room never had.
    page.wait_for(
        &format!("the page back after the restart, live, with {solved} solved"),
        &format!("return document.getElementById('status').textContent === 'live' && document.getElementById('summary-{EXERCISE}').dataset.solved === '{solved}';"),
        Duration::from_secs(20),
    )
    .await;
    // seat-2 fixes its server and checks again, as seat-2 of the restarted
    // room: its token still reports, and the check is measured against its
    // first (failing) one, kept on the laptop, which the room then shows as
    // seat-2's before and after.
    let fixed = put_json(&client(), &format!("{}/admin/config", servers[1].url), FIX).await;
    assert!(fixed.status.is_success(), "{}", fixed.body);
    let again_check = check_as(&seats[1], &servers[1].url, &again.invitation(), dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&again_check.stdout);
    assert!(text.contains("the room has this verdict"), "{text}");
    assert!(text.contains("measured against the before"), "{text}");
    assert!(
        text.contains("the room has this before and after"),
        "{text}"
    );
    let board = again.board().await;
    let second = &board["seats"][1];
    // Failed at its first attempt (without the fix); judged now by this one,
    // which fails only if the loaded machine pushes the fixed server's
    // latency over its bound (above).
    let expected = match again_check.status.success() {
        true => "solved",
        false => "failed",
    };
    assert_eq!(
        (
            second["cells"][0]["state"].as_str(),
            second["cells"][0]["attempts"].as_u64()
        ),
        (Some(expected), Some(2))
    );
    assert_eq!(second["compared"]["exercise"], EXERCISE, "{second}");
    let comparisons = again.as_facilitator("/room/comparisons").await;
    let seat_2 = comparisons
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["seat"] == "seat-2")
        .cloned()
        .unwrap_or_else(|| panic!("{}", comparisons.body));
    let before = seat_2["report"]["before"].as_str().unwrap();
    assert!(
        before.starts_with("the first failing check of "),
        "{seat_2}"
    );
    let figures: Vec<&str> = seat_2["report"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["figure"].as_str().unwrap())
        .collect();
    for figure in simulator_clients::compare::FIGURES {
        assert!(figures.contains(&figure.name().as_str()), "{seat_2}");
    }
    // The CSV a facilitator downloads has it on seat-2's line.
    let csv = again.as_facilitator("/room.csv").await;
    let line = csv
        .body
        .lines()
        .find(|l| l.starts_with("seat-2,"))
        .unwrap_or_else(|| panic!("{}", csv.body));
    let headline = second["compared"]["headline"].as_str().unwrap();
    assert!(line.contains(headline), "{line} lacks {headline}");
}

/// The seed the room gives for its drill: a draw of semaphore starvation.
fn drill_seed() -> String {
    system_simulator::workshop::drill::draw::seed_for("semaphore-starvation").unwrap()
}

/// This binary with `args` as `seat` of `room`, its token kept under `state`:
/// what it printed; it must succeed.
fn as_seat(seat: &str, room: &Room, state: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("ISIM_ROOM", room.invitation())
        .env("ISIM_SEAT", seat)
        .env("XDG_STATE_HOME", state)
        .output()
        .unwrap();
    common::stdout_of_success(&out)
}

/// Two seats' drills on the room's seed, read on the facilitator's page:
/// seat-1 counts, fixes and names the cause (right, no anti-method); seat-2
/// changes a setting before any look and names another resource's cause
/// (wrong, a random change). A click on a drill cell shows both trails side
/// by side. The drills' servers, for the caller to stop.
async fn drill_column(page: &Browser, room: &Room, state: &std::path::Path) -> Vec<Server> {
    let seed = drill_seed();
    let servers: Vec<Server> = ["seat-1", "seat-2"]
        .iter()
        .map(|_| Server::start_drill(&seed, state))
        .collect();
    let (careful, rash) = (&servers[0].url, &servers[1].url);
    for script in ["count", "permit-wait"] {
        let args = ["trace", script, "--target", careful, "--seconds", "1"];
        as_seat("seat-1", room, state, &args);
    }
    let fixed = put_json(
        &client(),
        &format!("{careful}/admin/config"),
        r#"{"permits": 64}"#,
    )
    .await;
    assert!(fixed.status.is_success(), "{}", fixed.body);
    let said = as_seat(
        "seat-1",
        room,
        state,
        &[
            "drill",
            "diagnose",
            "--seed",
            &seed,
            "--target",
            careful,
            "semaphore-starvation",
        ],
    );
    assert!(said.contains("the room's drill column has it"), "{said}");
    let changed = put_json(
        &client(),
        &format!("{rash}/admin/config"),
        r#"{"permits": 200}"#,
    )
    .await;
    assert!(changed.status.is_success(), "{}", changed.body);
    as_seat(
        "seat-2",
        room,
        state,
        &[
            "drill",
            "diagnose",
            "--seed",
            &seed,
            "--target",
            rash,
            "cpu-quota",
        ],
    );
    page.wait_for(
        "the drill column: seat-1 right, seat-2 wrong",
        "const s = (n) => (document.getElementById('drill-' + n) || {dataset: {}}).dataset.score;          return s('seat-1') === 'right' && s('seat-2') === 'wrong';",
        Duration::from_secs(10),
    )
    .await;
    let seed_shown = page.text("drill-seed").await;
    assert!(seed_shown.contains(&seed), "{seed_shown}");
    open_the_debrief(page).await;
    let first = page.text("trail-seat-1").await;
    for step in [
        "trace count",
        "trace permit-wait",
        "permits=64",
        "semaphore-starvation: right",
    ] {
        assert!(first.contains(step), "seat-1's trail lacks {step}: {first}");
    }
    assert!(
        !first.contains('⚠'),
        "seat-1 measured before it changed: {first}"
    );
    let second = page.text("trail-seat-2").await;
    assert!(second.contains("random change"), "{second}");
    assert!(second.contains("cpu-quota: wrong"), "{second}");
    // The page as it was, for what follows: the debrief closed, at the top.
    page.goto("about:blank").await;
    page.goto(&format!("{}/room#key={}", room.url, room.key))
        .await;
    page.wait_for(
        "the board again",
        "return document.getElementById('status').textContent === 'live';",
        Duration::from_secs(10),
    )
    .await;
    servers
}

/// seat-2's check (no fix) and seat-1's (the fix), both recorded, compared
/// by `compare` as seat-1's before and after: the room's column shows its
/// headline, and a click its figures.
async fn before_and_after(page: &Browser, room: &Room, state: &std::path::Path) {
    let run = Command::new(BIN)
        .arg("compare")
        .args([state.join("seat-2.isim"), state.join("seat-1.isim")])
        .env("ISIM_ROOM", room.invitation())
        .env("ISIM_SEAT", "seat-1")
        .env("XDG_STATE_HOME", state)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    // 99 is a comparison in which a figure got worse: still a comparison.
    assert!(matches!(run.status.code(), Some(0 | 99)), "{said}");
    assert!(
        said.contains("the room has this before and after"),
        "{said}"
    );
    page.wait_for(
        "seat-1's before and after on the board",
        &format!("const c = document.getElementById('compared-seat-1'); return !!c && c.textContent.includes('{EXERCISE}');"),
        Duration::from_secs(10),
    )
    .await;
    open_the_comparisons(page).await;
    let shown = page.text("comparison-seat-1").await;
    for figure in simulator_clients::compare::FIGURES {
        assert!(shown.contains(&figure.name()), "{figure:?}: {shown}");
    }
    assert!(shown.contains("seat-2.isim"), "{shown}");
}

/// A click on seat-1's before and after: every seat's comparison opens.
async fn open_the_comparisons(page: &Browser) {
    let opened = "return !!document.getElementById('comparison-seat-1');";
    click_then(page, "compared-seat-1", "seat-1's comparison", opened).await;
}

/// A click on seat-1's drill cell: the debrief opens with both seats' trails.
async fn open_the_debrief(page: &Browser) {
    let opened = "return !!document.getElementById('trail-seat-1') && !!document.getElementById('trail-seat-2');";
    click_then(page, "drill-seat-1", "both trails side by side", opened).await;
}

/// A click on the element `id`, then a wait (bounded) for `what` it opens.
async fn click_then(page: &Browser, id: &str, what: &str, opened: &str) {
    page.eval(&format!(
        "document.getElementById('{id}').click(); return true;"
    ))
    .await;
    page.wait_for(what, opened, Duration::from_secs(10)).await;
}

/// The pages of the room as the guide shows them: the facilitator's, seat-2's
/// own (its token from the file its checks keep it in) and the projector's.
async fn screenshots(page: &Browser, room: &Room, state: &std::path::Path, out: &std::path::Path) {
    std::fs::create_dir_all(out).unwrap();
    page.screenshot(&out.join("facilitator.png")).await;
    let rooms = state.join("system-simulator/rooms");
    let kept = std::fs::read_dir(&rooms)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let token = std::fs::read_to_string(kept.join("seat-2.token")).unwrap();
    let live = "return document.getElementById('status').textContent === 'live';";
    for (name, query) in [
        ("seat.png", format!("#token={token}")),
        ("projector.png", "?as=projector".to_owned()),
    ] {
        // A new document each time: a change of the fragment alone would not
        // load the page again.
        page.goto("about:blank").await;
        page.goto(&format!("{}/room{query}", room.url)).await;
        page.wait_for(name, live, Duration::from_secs(10)).await;
        page.screenshot(&out.join(name)).await;
    }
    let phone = Browser::start(390, 844).await;
    phone
        .goto(&format!("{}/room#key={}", room.url, room.key))
        .await;
    phone
        .wait_for("the phone's page", live, Duration::from_secs(10))
        .await;
    phone.screenshot(&out.join("phone.png")).await;
    page.goto(&format!("{}/room#key={}", room.url, room.key))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_room_refuses_a_wrong_password_a_wrong_token_and_another_seats_report() {
    let dir = tempfile::tempdir().unwrap();
    let room = Room::start(&dir.path().join("room.json"), "127.0.0.1:0");
    let join = |seat: &str, password: &str| {
        let url = format!("{}/room/join", room.url);
        let body = json!({"seat": seat, "password": password});
        async move { post(&url, None, body).await }
    };
    let refused = join("alice", "wrong").await;
    assert_eq!(refused.status, 401);
    assert!(refused.json()["message"]
        .as_str()
        .unwrap()
        .contains("password"));
    assert_eq!(join("bob smith", &room.password).await.status, 400);
    let alice = join("alice", &room.password).await.json()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let bob = join("bob", &room.password).await.json()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        join("bob", &room.password).await.status,
        409,
        "a taken seat"
    );

    let reports = format!("{}/room/report", room.url);
    let as_bob_with = |token: Option<String>| {
        let reports = reports.clone();
        async move { post(&reports, token.as_deref(), report("bob", 1)).await }
    };
    let other = as_bob_with(Some(alice.clone())).await;
    assert_eq!(other.status, 403, "{}", other.body);
    assert!(other.json()["message"]
        .as_str()
        .unwrap()
        .contains("alice's, not bob's"));
    assert_eq!(as_bob_with(Some("0".repeat(32))).await.status, 401);
    assert_eq!(as_bob_with(None).await.status, 401);
    assert_eq!(as_bob_with(Some(bob.clone())).await.status, 204);
    let mut unknown = report("bob", 2);
    unknown["progress"]["scenario"] = json!("no-such-exercise");
    assert_eq!(post(&reports, Some(&bob), unknown).await.status, 400);
    // A check that names the cause is counted as its exercise.
    let mut by_cause = report("bob", 1);
    by_cause["progress"]["scenario"] = json!(CAUSE);
    assert_eq!(post(&reports, Some(&bob), by_cause).await.status, 204);
    // Bodies as bytes, not JSON values: one broken, one with a figure that
    // JSON cannot hold as a number, refused at the door, saying so.
    let as_bob_raw = |body: String| {
        let (reports, auth) = (reports.clone(), format!("Bearer {bob}"));
        async move {
            let headers = [
                ("content-type", "application/json"),
                ("authorization", auth.as_str()),
            ];
            send(&client(), Method::POST, &reports, &headers, body).await
        }
    };
    let r = as_bob_raw("{\"seat\": ".to_owned()).await;
    assert!(r.status.is_client_error(), "a broken body: {}", r.status);
    let huge = report("bob", 3).to_string().replace(
        "\"conditions\":[]",
        "\"conditions\":[{\"label\":\"p99\",\"bound\":\"< 50\",\"limit\":50,\"value\":1e999,\"holds\":false}]",
    );
    assert!(huge.contains("1e999"), "{huge}");
    let r = as_bob_raw(huge).await;
    assert!(
        r.status.is_client_error() && r.body.contains("out of range"),
        "an infinite figure: {} {}",
        r.status,
        r.body
    );

    // What each viewer may read: a secret comes in a header (a bearer token
    // or the cookie /room/login sets), never in a URL.
    let board = |query: &str, headers: Vec<(&'static str, String)>| {
        let url = format!("{}/room/board{query}", room.url);
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            send(&client(), Method::GET, &url, &headers, "").await
        }
    };
    let bearer = |secret: &str| vec![("authorization", format!("Bearer {secret}"))];
    let in_url = board(&format!("?key={}", room.key), vec![]).await;
    assert_eq!(in_url.status, 400, "{}", in_url.body);
    assert!(in_url.body.contains("never go in a URL"), "{}", in_url.body);
    assert_eq!(board(&format!("?token={bob}"), vec![]).await.status, 400);
    assert_eq!(board("", bearer(&"f".repeat(32))).await.status, 401);
    let projector = board("", vec![]).await.json();
    let columns = projector["exercises"].as_array().unwrap();
    assert!(columns.contains(&json!(EXERCISE)), "{projector}");
    assert!(!columns.contains(&json!(CAUSE)), "{projector}");
    assert_eq!(
        (
            projector["seat_count"].as_u64(),
            projector["seats"].as_array().unwrap().len()
        ),
        (Some(2), 0)
    );
    let bobs = board("", bearer(&bob)).await.json();
    assert_eq!(bobs["seats"].as_array().unwrap().len(), 1);
    assert_eq!(bobs["seats"][0]["seat"], "bob");
    // The room's own machine needs no key, unless a page elsewhere (its Host)
    // asks; signing in sets a cookie that is the facilitator's from then on.
    let here = board("?as=facilitator", vec![]).await.json();
    assert_eq!(here["viewer"], "facilitator", "{here}");
    let rebound = board(
        "?as=facilitator",
        vec![("host", "prank.example:7900".into())],
    )
    .await;
    assert_eq!(rebound.status, 401, "{}", rebound.body);
    let login = format!("{}/room/login", room.url);
    let form = [("content-type", "application/x-www-form-urlencoded")];
    let wrong = send(&client(), Method::POST, &login, &form, "secret=0123").await;
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    let signed = send(
        &client(),
        Method::POST,
        &login,
        &form,
        format!("secret={}", room.key),
    )
    .await;
    assert_eq!(signed.status, 303, "{}", signed.body);
    let cookie = signed.headers["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let by_cookie = board("", vec![("cookie", pair)]).await.json();
    assert_eq!(by_cookie["viewer"], "facilitator", "{by_cookie}");
    let facilitator = bearer(&room.key);
    let csv = get(&client(), &format!("{}/room.csv", room.url)).await;
    assert_eq!(csv.status, 401, "the CSV is the facilitator's");
    let csv_url = format!("{}/room.csv", room.url);
    let auth = facilitator[0].1.as_str();
    let csv = send(
        &client(),
        Method::GET,
        &csv_url,
        &[("authorization", auth)],
        "",
    )
    .await;
    assert!(csv.body.starts_with("seat,exercise,state,"), "{}", csv.body);
    assert!(
        csv.body.contains(&format!("\nbob,{EXERCISE},running,1,")),
        "{}",
        csv.body
    );

    // Revealed, a seat sees every row; freed, a seat joins again with a new token.
    let reveal = send(
        &client(),
        Method::PUT,
        &format!("{}/room/reveal", room.url),
        &[
            ("content-type", "application/json"),
            ("authorization", auth),
        ],
        r#"{"revealed": true}"#,
    )
    .await;
    assert!(reveal.status.is_success(), "{}", reveal.body);
    assert_eq!(
        board("", bearer(&bob)).await.json()["seats"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let free = send(
        &client(),
        Method::DELETE,
        &format!("{}/room/seats/bob", room.url),
        &[("authorization", auth)],
        "",
    )
    .await;
    assert_eq!(free.status, 204);
    assert_eq!(
        as_bob_with(Some(bob.clone())).await.status,
        401,
        "a freed token"
    );
    let again = join("bob", &room.password).await.json()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(again, bob);

    // One address holds 64 connections at most; the next is told why, and
    // the room answers every other address.
    let addr: std::net::SocketAddr = room.url.trim_start_matches("http://").parse().unwrap();
    let mut held = Vec::new();
    for _ in 0..64 {
        held.push(from_address("127.0.0.3", addr).await);
    }
    let mut over = from_address("127.0.0.3", addr).await;
    let mut said = String::new();
    tokio::time::timeout(
        Duration::from_secs(5),
        tokio::io::AsyncReadExt::read_to_string(&mut over, &mut said),
    )
    .await
    .expect("the refusal within 5 s")
    .unwrap();
    assert!(
        said.starts_with("HTTP/1.1 503") && said.contains("the most one address may"),
        "{said}"
    );
    assert_eq!(
        get(&client(), &format!("{}/healthz", room.url))
            .await
            .status,
        200
    );
    drop(held);
}

/// A connection to `to` from loopback address `from`.
async fn from_address(from: &str, to: std::net::SocketAddr) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(to).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_with_the_servers_admin_token_shows_on_its_live_view_and_a_missing_room_costs_one_warning(
) {
    let server = Server::start_with_env(&["--scenario", EXERCISE, "--admin-token", "sekrit"], &[]);
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1 of loopback: the room cannot be reached.
    let out = check_as(
        "alice",
        &server.url,
        "http://127.0.0.1:1/join/plum-42",
        dir.path(),
    )
    .env("ISIM_ADMIN_TOKEN", "sekrit")
    .output()
    .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "the fix is not in: not yet\n{stdout}{stderr}"
    );
    assert!(stdout.contains("not yet: "), "{stdout}");
    assert_eq!(
        stderr
            .matches("note: the room does not show this check")
            .count(),
        1,
        "{stderr}"
    );
    assert!(!stderr.contains("live view does not show"), "{stderr}");
    let live = live_check(&server.url).await;
    assert_eq!(live["verdict"], "not yet", "{live}");
    // The check names the exercise as its attendee knows it.
    let exercise = simulator_service::scenario::Scenario::load(EXERCISE).unwrap();
    assert_eq!(live["scenario"], exercise.visible_name());

    // Without the token the check still judges, and says why the view is blank.
    let out = Command::new(BIN)
        .args([
            "workshop",
            "check",
            EXERCISE,
            "--target",
            &server.url,
            "--duration",
            "6s",
        ])
        .env_remove("ISIM_ADMIN_TOKEN")
        .env_remove("ISIM_ROOM")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr.matches("--admin-token or ISIM_ADMIN_TOKEN").count(),
        1,
        "{stderr}"
    );
}

/// The check the server's live view shows (the `check` of `/live/events`' hello).
async fn live_check(base: &str) -> Value {
    common::live_hello(base).await["tick"]["check"].clone()
}

/// Sockets that send half a request head and wait, from 40 other loopback
/// addresses (so the room's limit for one address does not turn them away),
/// reopened as the room closes them: pranksters on the venue's Wi-Fi.
const HALF_OPEN: &str = r#"
import resource, socket, sys, time
n, host, port, seconds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
def half(i):
    s = socket.socket()
    # From 40 addresses, each under the room's limit for one.
    s.bind(("127.0.0.%d" % (10 + i % 40), 0))
    s.connect((host, port))
    s.send(b"GET /room HTTP/1.1\r\nHost: room\r\n")
    s.setblocking(False)
    return s
held = [half(i) for i in range(n)]
print("holding", len(held), flush=True)
reopened, end = 0, time.time() + seconds
while time.time() < end:
    for i, s in enumerate(held):
        try:
            if s.recv(1) == b"":
                raise ConnectionError
        except BlockingIOError:
            continue
        except OSError:
            pass
        s.close()
        held[i] = half(i)
        reopened += 1
    time.sleep(0.2)
print("reopened", reopened, flush=True)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 2,000 half-open connections held against the room for 30 s"]
async fn two_thousand_half_open_connections_leave_the_room_answering() {
    if !common::have("python3") {
        return skip_or_fail("python3 holds the half-open connections");
    }
    let dir = tempfile::tempdir().unwrap();
    let room = Room::start(&dir.path().join("room.json"), "127.0.0.1:0");
    let port = room.url.rsplit(':').next().unwrap().to_owned();
    let mut prankster = Command::new("python3")
        .args(["-c", HALF_OPEN, "2000", "127.0.0.1", &port, "30"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = BufReader::new(prankster.stdout.take().unwrap()).lines();
    let first = said.next().unwrap().unwrap();
    assert_eq!(first, "holding 2000", "the prankster's sockets are open");
    let cpu_before = cpu_seconds(room.child.id());
    let began = Instant::now();

    let join = post(
        &format!("{}/room/join", room.url),
        None,
        json!({"seat": "ada", "password": room.password}),
    )
    .await;
    assert_eq!(join.status, 200, "{}", join.body);
    let token = join.json()["token"].as_str().unwrap().to_owned();
    let reports = format!("{}/room/report", room.url);
    let mut slowest = Duration::ZERO;
    let mut attempt = 0;
    while began.elapsed() < Duration::from_secs(30) {
        attempt += 1;
        let asked = Instant::now();
        let health = tokio::time::timeout(
            Duration::from_secs(5),
            get(&client(), &format!("{}/healthz", room.url)),
        )
        .await
        .expect("/healthz answers within 5 s");
        slowest = slowest.max(asked.elapsed());
        assert_eq!(health.status, 200, "{}", health.body);
        let r = post(&reports, Some(&token), report("ada", attempt)).await;
        assert_eq!(r.status, 204, "{}", r.body);
        let board = room.board().await;
        let attempts = &board["seats"][0]["cells"][0]["attempts"];
        assert_eq!(attempts.as_u64(), Some(attempt), "{board}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let cpu = cpu_seconds(room.child.id()) - cpu_before;
    let took = began.elapsed().as_secs_f64();
    let reopened = said.next().unwrap().unwrap();
    let _ = prankster.wait();
    eprintln!(
        "room: /healthz at worst {} ms; {:.2} CPU seconds in {took:.0} s; the prankster {reopened}",
        slowest.as_millis(),
        cpu
    );
    // The issue's bounds. Measured on a 2-vCPU VM, debug build: /healthz at
    // worst 10 ms (5 ms on one core, taskset -c 0), the room 0.40-0.42 CPU s
    // in 30 s (0.014 of a core): 100x and 35x under them.
    assert!(
        slowest < Duration::from_secs(1),
        "/healthz took {slowest:?}"
    );
    assert!(
        cpu / took < 0.5,
        "the room used {cpu:.1} CPU seconds in {took:.0} s"
    );
    // The head deadline closed every half-open socket once at least.
    let reopened: u64 = reopened.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(reopened >= 2000, "{reopened} reopened");
}

/// A process's user and system CPU time so far, from /proc/PID/stat.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime, fields 14 and 15 of the whole line.
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}
