//! The live view (`GET /live`) in a real browser: headless Chromium over
//! WebDriver (tests/suite/common/browser.rs), against the real server in the
//! semaphore-starvation exercise under its ticket's load. Everything is read from
//! the rendered page, not from the stream: its numbers against `/stats`, the
//! marker of a fix, a running check's conditions and verdict, and the page
//! coming back by itself after the server restarts.
//!
//! With `LIVE_VIEW_SCREENSHOTS=DIR` the test also writes the page before and
//! after the fix there (docs/workshop/README.md shows them:
//! `LIVE_VIEW_SCREENSHOTS=docs/workshop/live cargo test --release --test live_view --
//! --include-ignored`).
//!
//! Tier C (the full suite only): 20 s of load read in a real browser.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::browser::{self, Browser};
use common::{client, put_json, skip_or_fail, stats, wait_child, Server, BIN, NEIGHBOURED_LOAD};

fn free_loopback() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

async fn number(b: &Browser, id: &str) -> f64 {
    let script = format!("return +document.getElementById({id:?}).dataset.value;");
    b.eval(&script).await.as_f64().unwrap_or(f64::NAN)
}

fn screenshots() -> Option<std::path::PathBuf> {
    std::env::var_os("LIVE_VIEW_SCREENSHOTS").map(Into::into)
}

/// With screenshots asked for, lets the charts fill for `seconds` first (for the
/// picture only: nothing is asserted after it that needs the time), then takes one.
async fn screenshot(b: &Browser, name: &str, seconds: u64) {
    if let Some(dir) = screenshots() {
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        std::fs::create_dir_all(&dir).unwrap();
        b.screenshot(&dir.join(name)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 20 s of load read in a real browser (Chromium)"]
async fn the_page_shows_the_exercise_live_in_a_real_browser() {
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    let listen = free_loopback();
    let server = Server::start_exercise_on("semaphore-starvation", &listen);
    let base = server.url.clone();
    let http = client();
    let mut load = Command::new(BIN)
        .args([
            "clients",
            "--target",
            &base,
            "--n",
            "135",
            "--think-time",
            "1s",
        ])
        .args([
            "--duration",
            if screenshots().is_some() {
                "75s"
            } else {
                "16s"
            },
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("sim-clients starts");

    let page = Browser::start(1600, 2000).await;
    page.goto(&format!("{base}/live?span=60")).await;
    let within = Duration::from_secs(20);
    page.wait_for(
        "the stream and a second with requests",
        "return document.getElementById('status').textContent === 'live' && +document.getElementById('v-done-total').dataset.value > 0;",
        within,
    )
    .await;
    // A workshop's server names its exercise, never the cause.
    assert_eq!(page.text("scenario").await, "throughput-plateau");

    // The plateau: every permit in use and requests waiting at the gate.
    page.wait_for(
        "requests waiting at the gate",
        "return +document.getElementById('v-waiting').dataset.value > 0;",
        within,
    )
    .await;
    let (shown, now) = (
        number(&page, "v-done-total").await,
        stats(&http, &base).await,
    );
    let done = now["requests_done"].as_f64().unwrap();
    // The page shows the last second's end; /stats is read just after: at most
    // about a second of requests apart (the plateau is ~130/s), never ahead.
    assert!(
        shown <= done && done - shown <= 300.0,
        "page {shown} against /stats {done}"
    );
    assert!(page.text("v-permits").await.ends_with("/ 8"));
    // Each permit is held until its element is written, and the reply leaves
    // at the hand-off: the gate's 8 are answered and not yet written.
    assert_eq!(number(&page, "v-unwritten").await, 8.0);
    // Every chart has its last second's figures as text beside it.
    for id in ["now-done", "now-requests_blocked", "now-capacity"] {
        let text = page.text(id).await;
        assert!(text.ends_with("/s"), "{id}: {text:?}");
    }
    let badge = page.text("badge-admission").await;
    assert!(
        badge.starts_with("permits ") && badge.contains("waiting"),
        "{badge}"
    );
    screenshot(&page, "before-fix.png", 25).await;

    // The fix, live: a marker labelled with it, and the gate no longer waited on.
    let r = put_json(
        &http,
        &format!("{base}/admin/config"),
        r#"{"permits": 1080}"#,
    )
    .await;
    assert!(r.status.is_success(), "{}", r.body);
    page.wait_for(
        "the fix's marker",
        "return [...document.querySelectorAll('#markers li')].some(li => li.textContent.includes('permits=1080'));",
        within,
    )
    .await;
    page.wait_for(
        "the new capacity and no one waiting",
        "return document.getElementById('v-permits').textContent.endsWith('/ 1080') && +document.getElementById('v-waiting').dataset.value === 0;",
        within,
    )
    .await;
    assert!(page.text("changed").await.contains("permits=1080"));
    screenshot(&page, "after-fix.png", 25).await;
    // The check brings its own load and refuses to judge beside another.
    let _ = load.kill();
    let _ = load.wait();

    // A check against the server: its conditions while it runs, then its verdict.
    let mut check = Command::new(BIN)
        .args([
            "workshop",
            "check",
            "semaphore-starvation",
            "--target",
            &base,
        ])
        .args(["--duration", "6s"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("workshop check starts");
    page.wait_for(
        "the running check's conditions",
        "return document.getElementById('verdict').textContent === 'running…' && document.querySelectorAll('#check-rows tr').length === 3;",
        within,
    )
    .await;
    let status = wait_child(&mut check, Duration::from_secs(60));
    assert!(status.success(), "the check of a fixed server passes");
    page.wait_for(
        "the verdict",
        "return document.getElementById('verdict').textContent === 'solved';",
        within,
    )
    .await;

    // A restart: the page says it is disconnected, then comes back by itself.
    let (_, _) = server.terminate(Duration::from_secs(30));
    page.wait_for(
        "that it is disconnected",
        "return document.getElementById('status').textContent.startsWith('disconnected');",
        within,
    )
    .await;
    let _again = Server::start_exercise_on("semaphore-starvation", &listen);
    page.wait_for(
        "the restarted server",
        "return document.getElementById('status').textContent === 'live (server restarted)' && document.getElementById('v-permits').textContent.endsWith('/ 8');",
        within,
    )
    .await;
}

/// A badge test's run: the scenario's load against `server`, long enough for a
/// picture when one is asked for, and the live view open on it once `badge`'s
/// text passes `shows` (a JavaScript regular expression over it). Returns the
/// page, the badge's text and the load, to stop after the picture. The load
/// outlasts the wait: a browser that starts slowly on a busy machine (the
/// suite's first minute) must still find it running.
/// The kernel's chart (exercises 8-10): the panel shows, and its series
/// (`value`, a function of a second in the page's script) has a second of at
/// least `least`.
async fn kernel_chart(page: &Browser, value: &str, least: u32) {
    page.wait_for(
        "the kernel's chart with a second of data",
        &format!(
            "return !document.getElementById('kernel-panel').hidden \
               && seconds.some((s) => (({value})(s) ?? 0) >= {least});"
        ),
        Duration::from_secs(30),
    )
    .await;
}

/// `flags`' load against `server`, and the live view open on it.
async fn live_view_under(server: &Server, flags: &[&str]) -> (Browser, std::process::Child) {
    let load = Command::new(BIN)
        .args(["clients", "--target", &server.url])
        .args(flags)
        .stdout(Stdio::null())
        .spawn()
        .expect("sim-clients starts");
    let page = Browser::start(1600, 2000).await;
    page.goto(&format!("{}/live?span=60", server.url)).await;
    (page, load)
}

/// A page's fix: a `PUT /admin/config` body, or a command outside the service
/// (`$NEIGHBOUR` the world's neighbour's pid).
enum Fix<'a> {
    Config(&'a str),
    Outside(&'a str),
}

/// With screenshots asked for, the kernel chart's picture for a page: 10 s
/// more before the page's `fix`, the fix, the clients started again on new
/// connections when the fix reaches only those (`reconnect`: the load's flags;
/// the old clients are `load`), and the picture 15 s after: the series falls
/// at the fix's marker.
async fn kernel_picture(
    page: &Browser,
    server: &Server,
    fix: Fix<'_>,
    picture: &str,
    load: &mut std::process::Child,
    reconnect: Option<&[&str]>,
) {
    if screenshots().is_none() {
        return;
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    match fix {
        Fix::Config(body) => {
            let applied = put_json(&client(), &format!("{}/admin/config", server.url), body).await;
            assert_eq!(applied.status, 200, "{}", applied.body);
        }
        Fix::Outside(command) => {
            system_simulator::workshop::figures::run_outside(command, &server.url)
                .await
                .unwrap();
        }
    }
    if let Some(flags) = reconnect {
        let _ = load.kill();
        wait_child(load, Duration::from_secs(10));
        *load = Command::new(BIN)
            .args(["clients", "--target", &server.url])
            .args(flags)
            .stdout(Stdio::null())
            .spawn()
            .expect("sim-clients starts");
    }
    page.eval("document.getElementById('kernel-panel').scrollIntoView(); return true;")
        .await;
    screenshot(page, picture, 15).await;
}

async fn badge_under_load(
    server: &Server,
    load: &[&str],
    badge: &str,
    what: &str,
    shows: &str,
) -> (Browser, String, std::process::Child) {
    let load = Command::new(BIN)
        .args(["clients", "--target", &server.url])
        .args(load)
        .arg("--duration")
        .arg("60s")
        .stdout(Stdio::null())
        .spawn()
        .expect("sim-clients starts");
    let page = Browser::start(1600, 2000).await;
    page.goto(&format!("{}/live?span=60", server.url)).await;
    page.wait_for(
        what,
        &format!(
            "const b = document.getElementById('badge-{badge}'); \
             return b !== null && /{shows}/.test(b.textContent);"
        ),
        Duration::from_secs(20),
    )
    .await;
    let text = page.text(&format!("badge-{badge}")).await;
    (page, text, load)
}

/// Exercise 8 in the browser: the work's badge names the server's CPU quota and
/// the time the kernel throttled it each second, which the server's cgroup
/// counts (`/stats.cpu_cgroup`). Root: the server makes its cgroup. The picture
/// on its page: `LIVE_VIEW_SCREENSHOTS=docs/workshop/live cargo test --release
/// --test live_view -- --include-ignored the_work_badge`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 10 s of load read in a real browser (Chromium), as root"]
async fn the_work_badge_shows_the_cpu_quota_and_its_throttling() {
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    if !common::is_root() {
        return skip_or_fail("the cpu-quota exercise makes a cgroup: root");
    }
    // The exercise's own one-core quota throttles only when the bursts find both
    // CPUs free; beside the suite's other tests they may not for seconds. A fifth
    // of a core is throttled every period of this load wherever it runs; the
    // picture for the page (LIVE_VIEW_SCREENSHOTS, run alone) is the exercise's.
    let (quota, cores) = if screenshots().is_some() {
        ("100ms", "1.00")
    } else {
        ("20ms", "0.20")
    };
    let server = Server::start(&[
        "--answers",
        "hidden",
        "--scenario",
        "cpu-quota",
        "--cpu-quota",
        quota,
    ]);
    let (page, badge, mut load) = badge_under_load(
        &server,
        &["--n", "32", "--rate", "8", "--arrivals", "poisson"],
        "work",
        "a second in which the kernel throttled the server",
        " throttled [1-9][0-9,]* ms\\/s$",
    )
    .await;
    assert!(badge.contains(&format!("quota {cores} CPU")), "{badge}");
    let throttled_us = stats(&client(), &server.url).await["cpu_cgroup"]["throttled_us"]
        .as_u64()
        .unwrap();
    assert!(throttled_us > 0, "the badge showed throttling: {badge}");
    screenshot(&page, "cpu-quota.png", 25).await;
    kernel_chart(&page, "(s) => s.cpu_quota && s.cpu_quota.throttled_ms", 1).await;
    let fix = r#"{"work_limit": "quota"}"#;
    let fix = Fix::Config(fix);
    kernel_picture(&page, &server, fix, "cpu-quota-kernel.png", &mut load, None).await;
    let _ = load.kill();
    wait_child(&mut load, Duration::from_secs(10));
}

/// Exercise 9 in the browser: once the data port's listener has dropped
/// connections, the entry's badge shows its accept queue at its longest against its limit and
/// what it dropped each second, which the server reads from its own socket
/// (`/stats.connections`). The picture on its page: `LIVE_VIEW_SCREENSHOTS=docs/workshop/live
/// cargo test --release --test live_view -- --include-ignored the_entry_badge`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 10 s of load read in a real browser (Chromium)"]
async fn the_entry_badge_shows_the_listen_queue_and_its_drops() {
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    let server = Server::start(&["--answers", "hidden", "--scenario", "accept-queue"]);
    let load = [
        "--rate",
        "100",
        "--arrivals",
        "bursts",
        "--connections",
        "per-request",
        "--n",
        "300",
    ];
    let (page, badge, mut load) = badge_under_load(
        &server,
        &load,
        "clients",
        "a second in which the listener dropped connections",
        " dropped [1-9][0-9,]*\\/s$",
    )
    .await;
    // The queue at its longest in a second of drops: full (the kernel holds
    // one over its limit of 64). Read at the second's end it would be 0, the
    // herd taken by then.
    let longest: u32 = badge
        .split("listen queue up to ")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no longest queue in {badge}"));
    assert!(
        badge.contains(" · dropped") && badge.contains("/64 ") && longest >= 48,
        "{badge}"
    );
    let drops = stats(&client(), &server.url).await["connections"]["listen_drops"]
        .as_u64()
        .unwrap();
    assert!(drops > 0, "the badge showed drops: {badge}");
    screenshot(&page, "accept-queue.png", 25).await;
    kernel_chart(&page, "(s) => s.listener && s.listener.drops", 1).await;
    let fix = Fix::Config(r#"{"listen_backlog": 4096}"#);
    kernel_picture(
        &page,
        &server,
        fix,
        "accept-queue-kernel.png",
        &mut load,
        None,
    )
    .await;
    let _ = load.kill();
    wait_child(&mut load, Duration::from_secs(10));
}

/// Exercise 10 in the browser: the kernel's chart counts the ACKs sent late
/// by the delayed-ACK timer a second (the server's namespace's
/// `TcpExtDelayedACKs`), about one a request under the ticket's load (8
/// clients, a 41 ms round each: 190 a second). The picture on its page:
/// `LIVE_VIEW_SCREENSHOTS=docs/workshop/live tools/test -E
/// 'test(=workshop::live_view::the_kernel_chart_counts_the_delayed_acks)'`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 10 s of load read in a real browser (Chromium)"]
async fn the_kernel_chart_counts_the_delayed_acks() {
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    let server = Server::start(&["--answers", "hidden", "--scenario", "nagle-delayed-ack"]);
    let flags = ["--n", "8", "--think-time", "10ms", "--duration", "60s"];
    let (page, mut load) = live_view_under(&server, &flags).await;
    // Margin: 150 a second here with the clients alone; 50 is 3x under.
    kernel_chart(&page, "(s) => s.delayed_acks", 50).await;
    // `tcp_nodelay` reaches connections accepted after it: the clients connect
    // again, as the page says.
    let fix = r#"{"tcp_nodelay": true}"#;
    let picture = "nagle-delayed-ack-kernel.png";
    kernel_picture(
        &page,
        &server,
        Fix::Config(fix),
        picture,
        &mut load,
        Some(&flags),
    )
    .await;
    let _ = load.kill();
    wait_child(&mut load, Duration::from_secs(10));
}

/// Exercise 14 in the browser: the kernel's chart draws the milliseconds a
/// second the server's threads waited for a CPU (its threads' schedstat,
/// `/stats.runqueue_wait_ns`), 700-900 a second beside its neighbour under the
/// ticket's load, and no throttled time beside it: no quota of its own. The
/// picture on its page: `LIVE_VIEW_SCREENSHOTS=docs/workshop/live tools/test
/// -E 'test(=workshop::live_view::the_kernel_chart_draws_the_run_queue_wait)'`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 10 s of load beside a neighbour read in a real browser (Chromium)"]
async fn the_kernel_chart_draws_the_run_queue_wait() {
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    let server = Server::start(&["--answers", "hidden", "--scenario", "noisy-neighbour"]);
    let flags = [&NEIGHBOURED_LOAD[..], &["--duration", "60s"]].concat();
    let (page, mut load) = live_view_under(&server, &flags).await;
    // Margin: 700-900 ms a second here; 100 is 7x under.
    kernel_chart(&page, "(s) => s.runqueue_wait_ms", 100).await;
    let shown = page
        .eval("return !document.getElementById('leg-runq').hidden && document.getElementById('leg-throttled').hidden;")
        .await;
    assert_eq!(
        shown,
        serde_json::json!(true),
        "the wait's legend, and no quota's"
    );
    let fix = Fix::Outside("renice -n 19 -p $(ls /proc/$NEIGHBOUR/task) >/dev/null");
    let picture = "noisy-neighbour-kernel.png";
    kernel_picture(&page, &server, fix, picture, &mut load, None).await;
    let _ = load.kill();
    wait_child(&mut load, Duration::from_secs(10));
}

/// Exercise 11 in the browser: the profile button asks the server for 5 s of
/// its stacks and draws the flame graph, whose widest tower under load is the
/// hot function. The picture on its page: `LIVE_VIEW_SCREENSHOTS=docs/workshop/live
/// tools/test -E 'test(=workshop::live_view::the_profile_button_draws_the_flame_graph)'`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: a profile under load read in a real browser (Chromium)"]
async fn the_profile_button_draws_the_flame_graph() {
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    let server = Server::start(&["--answers", "hidden", "--scenario", "cpu-hot-spot"]);
    let mut load = crate::tracing::profile::load(&server.url, 60);
    let page = Browser::start(1600, 2400).await;
    page.goto(&format!("{}/live?span=60", server.url)).await;
    page.eval("document.getElementById('profile-go').click(); return true;")
        .await;
    page.wait_for(
        "the flame graph drawn",
        "return /^sampled/.test(document.getElementById('profile-state').textContent);",
        Duration::from_secs(30),
    )
    .await;
    let drawn = page
        .eval(
            "const f = document.getElementById('profile-frame'); \
             return !f.hidden && f.contentDocument !== null \
               && f.contentDocument.documentElement.outerHTML;",
        )
        .await;
    let svg = drawn.as_str().unwrap_or_default();
    assert!(svg.contains("<svg"), "no SVG in the frame: {drawn}");
    assert!(
        svg.contains(crate::tracing::profile::HOT),
        "the hot function is not drawn"
    );
    page.eval("document.getElementById('profile-panel').scrollIntoView(); return true;")
        .await;
    screenshot(&page, "cpu-hot-spot.png", 0).await;
    let _ = load.kill();
    wait_child(&mut load, Duration::from_secs(10));
}

/// Exercise 12's chart: in periodic-stall under its ticket's load, the longest
/// request of a second stands out every few seconds, each stall beside the bar
/// of the compaction that held the index's lock, while the p50 stays low. The
/// picture on its page: `LIVE_VIEW_SCREENSHOTS=docs/workshop/live tools/test
/// -E 'test(=workshop::live_view::the_longest_request_chart_lines_each_stall_up_with_its_compaction_alone)'`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 15 s of a stalling exercise read in a real browser (Chromium), alone"]
async fn the_longest_request_chart_lines_each_stall_up_with_its_compaction_alone() {
    // Alone: which request of a second is slowest depends on the CPU the
    // server gets. Beside the shared tests in CI, requests queued on the
    // workers the lock blocked were the slowest of every second (737 and 740
    // ms, none of it for the lock), so no second's slowest had waited for it.
    common::runs_alone();
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    let server = Server::start(&["--answers", "hidden", "--scenario", "periodic-stall"]);
    let mut load = Command::new(BIN)
        .args([
            "clients",
            "--target",
            &server.url,
            "--n",
            "64",
            "--rate",
            "100",
        ])
        .args(["--arrivals", "poisson", "--duration", "40s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the load");
    let page = Browser::start(1600, 2400).await;
    // The cut of each request into its waits on, as its box checked does.
    page.goto(&format!("{}/live?span=60&waits=true", server.url))
        .await;
    // Two compactions ended (one every 3 s after the last ended).
    page.wait_for(
        "two compactions on the chart",
        "return seconds.filter((s) => s.compaction_hold_ms != null).length >= 2;",
        Duration::from_secs(30),
    )
    .await;
    let figures = page
        .eval(
            "const held = seconds.filter((s) => s.compaction_hold_ms != null); \
             const longest = Math.max(...seconds.map((s) => s.longest_ms ?? 0)); \
             const p50s = seconds.map((s) => s.p50_ms).filter((p) => p !== null).sort((a, b) => a - b); \
             return [Math.min(...held.map((s) => s.compaction_hold_ms)), longest, \
                     p50s[Math.floor(p50s.length / 2)], \
                     document.getElementById('now-hold').textContent];",
        )
        .await;
    let hold = figures[0].as_f64().unwrap_or(f64::NAN);
    let longest = figures[1].as_f64().unwrap_or(f64::NAN);
    let p50 = figures[2].as_f64().unwrap_or(f64::NAN);
    println!("held {hold:.0} ms at least, longest request {longest:.0} ms, median p50 {p50:.1} ms, legend {:?}", figures[3]);
    // A compaction holds the lock for its 250 ms write at least; the stalled
    // requests wait as long; the p50 is a few ms (margins: 310 ms held, 320
    // longest, 3.5 p50 here).
    assert!(
        hold >= 250.0,
        "each compaction holds the lock 250 ms at least: {hold}"
    );
    assert!(
        longest >= 200.0,
        "the stall shows as the longest request: {longest}"
    );
    assert!(p50 < 20.0, "the p50 stays low: {p50}");
    assert!(figures[3].as_str().unwrap_or("").ends_with("(last)"));
    // The slowest request in view is the one the panel's head names; its
    // parts sum to its lifetime (exactly, by the cut's construction; 2 % for
    // the float sum).
    let slowest = page
        .eval(
            "const cuts = seconds.map((s) => s.slowest).filter((c) => c); \
             const slowest = (a, b) => (b.lifetime_ms > a.lifetime_ms ? b : a); \
             const lock = (c) => c.parts.find((p) => p.part.includes('lock'))?.ms ?? 0; \
             const cut = cuts.reduce(slowest); \
             const locked = cuts.filter((c) => lock(c) > 0).reduce(slowest, {lifetime_ms: 0, parts: []}); \
             return [cut.id, cut.lifetime_ms, cut.parts.reduce((n, p) => n + p.ms, 0), lock(cut), \
                     document.getElementById('waits-head').textContent, JSON.stringify(cut.parts), \
                     locked.lifetime_ms, lock(locked), locked.behind_compaction ?? null];",
        )
        .await;
    let id = slowest[0].as_u64().unwrap_or(0);
    let lifetime = slowest[1].as_f64().unwrap_or(f64::NAN);
    let summed = slowest[2].as_f64().unwrap_or(f64::NAN);
    let lock = slowest[3].as_f64().unwrap_or(f64::NAN);
    let head = slowest[4].as_str().unwrap_or("");
    println!(
        "the slowest: {lifetime:.1} ms, {lock:.1} ms of it waiting for the lock; {head:?}; {}",
        slowest[5]
    );
    assert!(
        (summed - lifetime).abs() <= lifetime * 0.02,
        "{summed} of {lifetime}"
    );
    assert!(head.starts_with(&format!("request {id},")), "{head}");
    assert_eq!(head.contains("behind compaction"), lock > 0.0, "{head}");
    // The slowest that waited for the lock waited for it most of its life,
    // behind a compaction. Margins: the lock held 97-99.5 % of it in every
    // run (307 of 310 ms, 341 of 345, 351.6 of 357 alone; 434 of 445 and 525
    // of 528 beside six busy loops on two cores; 383.6 of 386 on one core,
    // taskset -c 0); the bound is half, and 200 ms against 310-528. It is
    // not always the slowest of all: the wait blocks the async worker it runs
    // on (the exercise's lesson), and a request queued behind it on that
    // worker waits as long in no probe's part (a CI run beside six other
    // tests: 740 ms, none of it for the lock, after a hold of 660 ms).
    let (locked, locked_lock) = (
        slowest[6].as_f64().unwrap_or(f64::NAN),
        slowest[7].as_f64().unwrap_or(f64::NAN),
    );
    println!(
        "the slowest that waited for the lock: {locked:.1} ms, {locked_lock:.1} of it for the lock"
    );
    assert!(locked >= 200.0, "a stall waited for the lock: {locked}");
    assert!(
        locked_lock >= locked * 0.5,
        "the stall is the lock's: {locked_lock} of {locked}"
    );
    assert!(slowest[8].is_u64(), "behind a compaction: {}", slowest[8]);
    page.eval("document.getElementById('longest-panel').scrollIntoView(); return true;")
        .await;
    screenshot(&page, "periodic-stall.png", 10).await;
    let _ = load.kill();
    wait_child(&mut load, Duration::from_secs(10));
}

/// Exercise 13's charts: in cold-cache under its ticket's load, the hit ratio
/// a second sits near 0.9 until the incident (its markers on both charts) and
/// stays at 0 after it, while the fills abandoned a second run at the misses'
/// rate. The picture on its page: `LIVE_VIEW_SCREENSHOTS=docs/workshop/live
/// tools/test -E 'test(=workshop::live_view::the_cache_charts_show_a_cache_that_never_warms_again)'`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 20 s of a cache outage read in a real browser (Chromium)"]
async fn the_cache_charts_show_a_cache_that_never_warms_again() {
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    let server = Server::start(&["--answers", "hidden", "--scenario", "cold-cache"]);
    let flags = [
        "--rate",
        "200",
        "--n",
        "1000",
        "--keys",
        "zipf(10000, 1.2)",
        "--timeout",
        "1s",
        "--retries",
        "3",
        "--duration",
        "40s",
    ];
    let (page, mut load) = live_view_under(&server, &flags).await;
    // Margin: 0.87-0.93 a second here before the incident; 0.75 is 1.16x under.
    page.wait_for(
        "the cache's chart with a warm second",
        "return !document.getElementById('cache-panel').hidden \
           && seconds.some((s) => (hitRatio(s.counts) ?? 0) > 0.75);",
        Duration::from_secs(30),
    )
    .await;
    if screenshots().is_some() {
        // For the picture only: some warm seconds before the incident.
        tokio::time::sleep(Duration::from_secs(8)).await;
    }
    let began = put_json(&client(), &format!("{}/admin/incident", server.url), "").await;
    assert_eq!(began.status, 200, "{}", began.body);
    // Margin: every read misses after the incident (0 hits) and 600-800 fills a
    // second are abandoned here; 100 is 6x under.
    page.wait_for(
        "a cold second with fills abandoned after the incident's end",
        "const end = markers.filter((m) => /incident ends/.test(m.label)).map((m) => m.t).pop() ?? Infinity; \
         return seconds.some((s) => s.t > end + 2 && hitRatio(s.counts) === 0 \
           && (s.counts.cache_fills_abandoned ?? 0) > 100);",
        Duration::from_secs(30),
    )
    .await;
    // The lifetime's quantiles never above the second's longest request (a
    // wide bucket's estimate once drew the p50 at 2.66 s beside a longest of 1.04).
    page.wait_for(
        "every second's p50 and p99 at most its longest request",
        "return seconds.filter((s) => s.longest_ms != null).length > 10            && seconds.every((s) => s.longest_ms == null              || ((s.p50_ms ?? 0) <= s.longest_ms + 1e-6 && (s.p99_ms ?? 0) <= s.longest_ms + 1e-6));",
        Duration::from_secs(5),
    )
    .await;
    page.eval("document.getElementById('cache-panel').scrollIntoView(); return true;")
        .await;
    screenshot(&page, "cold-cache.png", 12).await;
    let _ = load.kill();
    wait_child(&mut load, Duration::from_secs(10));
}

/// Out of descriptors in the browser: a server under `ulimit -n 64` sent more
/// idle connections than that. The page, opened before on the operator's
/// listener, keeps its stream; the trouble chart draws the failed accepts a
/// second, and the clients' box says how many failed beside the descriptors
/// open against the limit, as `/stats` counts them. The picture:
/// `LIVE_VIEW_SCREENSHOTS=DIR tools/test -E 'test(/the_clients_box_counts/)'`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: a real browser (Chromium) beside a server out of descriptors"]
async fn the_clients_box_counts_failed_accepts_and_the_descriptors_at_their_limit() {
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    let server = Server::start_under_ulimit("-n 64", &["--header-read-timeout", "60s"]);
    let operator = server.operator_url.clone().expect("an operator listener");
    let page = Browser::start(1600, 2000).await;
    page.goto(&format!("{operator}/live?span=60")).await;
    page.wait_for(
        "the page's first second",
        "return /sent/.test(document.getElementById('badge-clients')?.textContent ?? '');",
        Duration::from_secs(20),
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..80 {
        held.push(tokio::net::TcpStream::connect(server.addr()).await.unwrap());
    }
    page.wait_for(
        "a second of failed accepts in the clients' box",
        "const b = document.getElementById('badge-clients'); \
         return b !== null && / [1-9][0-9]* accepts failed\\/s · descriptors 64\\/64$/.test(b.textContent);",
        Duration::from_secs(20),
    )
    .await;
    let legend = page.text("now-accept_errors").await;
    assert!(
        legend.ends_with("/s") && legend != "0/s",
        "the trouble chart's figure: {legend}"
    );
    let failed = stats(&client(), &operator).await["accept_errors"]
        .as_u64()
        .unwrap();
    assert!(failed > 0, "the box showed failures, /stats counts them");
    screenshot(&page, "out-of-descriptors.png", 5).await;
    drop(held);
}

/// Exercise 15 in the browser: under the ticket's load the chart **Resident
/// memory** climbs, a second's reading above the first by more than 8 MiB
/// within 30 s (it grows by about 3.9 a second; 8 is half of 5 s of it), and
/// its legend gives the growth; after the fix it levels off. The picture on
/// its page: `LIVE_VIEW_SCREENSHOTS=docs/workshop/live tools/test full -E
/// 'test(=workshop::live_view::the_memory_chart_climbs_while_the_replies_are_kept)'`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 10 s of load read in a real browser (Chromium)"]
async fn the_memory_chart_climbs_while_the_replies_are_kept() {
    if let Some(why) = browser::missing() {
        return skip_or_fail(&why);
    }
    let server = Server::start(&["--answers", "hidden", "--scenario", "remembered-replies"]);
    let scenario = simulator_service::scenario::Scenario::load("remembered-replies").unwrap();
    let load = scenario.load.with_duration(Duration::from_secs(60));
    let words: Vec<&str> = load.words().iter().map(String::as_str).collect();
    let (page, mut load) = live_view_under(&server, &words).await;
    page.wait_for(
        "the resident memory 8 MiB above its first second",
        "const m = seconds.filter((s) => s.memory).map((s) => s.memory.resident_bytes); \
         return m.length > 1 && m[m.length - 1] - m[0] > 8 * 1024 * 1024;",
        Duration::from_secs(30),
    )
    .await;
    page.wait_for(
        "the legend's growth",
        "return /MiB\\/s$/.test(document.getElementById('now-growth').textContent);",
        Duration::from_secs(15),
    )
    .await;
    if screenshots().is_some() {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let fix = r#"{"remember_replies_for": "5s"}"#;
        let applied = put_json(&client(), &format!("{}/admin/config", server.url), fix).await;
        assert_eq!(applied.status, 200, "{}", applied.body);
        page.eval("document.getElementById('memory-panel').scrollIntoView(); return true;")
            .await;
        screenshot(&page, "remembered-replies-memory.png", 20).await;
    }
    let _ = load.kill();
    wait_child(&mut load, Duration::from_secs(10));
}
