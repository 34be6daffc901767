//! Every bundled script, attached for real through `scripts/trace` to a server
//! under load from the clients, reports what the server's `/stats` and its own
//! histograms say happened; the seed's count script runs unchanged.
//!
//! Each test starts its own server, starts the tracer, waits until the script's
//! BEGIN has printed (every probe attached and live), drives 40 clients for 3 s
//! through 8 permits so that requests block, waits until nothing is in flight, and
//! stops the tracer with SIGINT, which is Ctrl-C: the summary the script prints
//! then is the one compared. DTrace runs with `--keep-cpus-busy` because on this
//! project's VMs a timer on an idle vCPU never fires (docs/tracing.md).
//!
//! The tests skip with a printed reason where DTrace, bpftrace or root is missing
//! and fail instead when CI is set.
//!
//! `sockets.rs` holds the socket scripts to the kernel's own counters; `tap.rs`
//! holds each script's tap twin (`system-simulator trace NAME`, no root) to the
//! script under bpftrace.
//!
//! Tier C (the full suite only): 45 tests, each 5-25 s and the seed's own script
//! 60 s, side by side with the other shared tests, except the two judged by a
//! tracer's sampling (CPU sampled at 1000 Hz against /proc), which run alone
//! (.config/nextest.toml; about 3 minutes one binary at a time). Run with:
//! `tools/test -E 'test(/^scripts_live::/)'`.

use crate::common;
pub(crate) mod tracer;

use std::time::Duration;

use common::*;
use serde_json::Value;
use tracer::{figures, probes_armed, Tool, Traced};

/// The load: enough clients, often enough, that 8 permits run out.
const LOAD: [&str; 6] = ["--n", "40", "--think-time", "100ms", "--duration", "3s"];

/// [`LOAD`] for long enough that a script's line a second has room: the tests
/// that want at least 3 lines once ran 3 s of load, and a tracer whose seconds
/// began just after its BEGIN printed 2 before the interrupt (in two of
/// fourteen full runs, once running alone); 5 s gives 4 or 5.
const ROWS_LOAD: [&str; 6] = ["--n", "40", "--think-time", "100ms", "--duration", "5s"];

/// What the server saw, once everything has drained.
struct Truth {
    stats: Value,
    metrics: String,
}

impl Truth {
    fn count(&self, field: &str) -> u64 {
        self.stats[field].as_u64().unwrap()
    }

    /// The mean of a Prometheus histogram, in nanoseconds.
    fn mean_ns(&self, histogram: &str) -> f64 {
        let value = |suffix: &str| -> f64 {
            let name = format!("{histogram}_{suffix} ");
            self.metrics
                .lines()
                .find_map(|l| l.strip_prefix(&name))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {name} in /metrics"))
        };
        value("sum") / value("count") * 1e9
    }
}

fn run_load(server: &Server, load: &[&str]) {
    let out = std::process::Command::new(BIN)
        .arg("clients")
        .args(["--target", &server.url])
        .args(load)
        .output()
        .expect("run the clients");
    stdout_of_success(&out);
}

/// [`run_load`] on a blocking thread, so the test's runtime stays free; gives
/// the server back.
async fn run_load_aside(server: Server, load: &[&str]) -> Server {
    let load: Vec<String> = load.iter().map(|w| w.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let load: Vec<&str> = load.iter().map(String::as_str).collect();
        run_load(&server, &load);
        server
    })
    .await
    .unwrap()
}

async fn truth(server: &Server) -> Truth {
    let client = client();
    let stats = settled_stats(&client, &server.url).await;
    let metrics = get(&client, &format!("{}/metrics", server.url)).await.body;
    Truth { stats, metrics }
}

/// Starts a server and the script, drives the load, stops the script with SIGINT.
async fn traced_run(tool: Tool, script: &str) -> Option<(String, Truth)> {
    traced_run_of(tool, script, &[]).await
}

/// [`traced_run`] against a server started with `server_args`.
async fn traced_run_of(tool: Tool, script: &str, server_args: &[&str]) -> Option<(String, Truth)> {
    traced_run_with(tool, script, server_args, &LOAD).await
}

/// [`traced_run_of`] with a load of its own.
async fn traced_run_with(
    tool: Tool,
    script: &str,
    server_args: &[&str],
    load: &[&str],
) -> Option<(String, Truth)> {
    traced_run_full(tool, script, server_args, load, &[]).await
}

/// A cache of 100 elements in front of a store of 2 slots, 20 ms a read (100
/// reads a second), that serves stale entries, and [`CACHE_LOAD`]: 40 clients
/// with no think time reading keys of zipf(1000, 1.0) (the 100 hottest hold
/// about 69 % of the draws), who give up after 150 ms. The misses queue for
/// the store past that, so some fills are abandoned while others fill the
/// cache; [`stale_cache_server`] makes its entries stale, so some reads are
/// answered stale too: every count of cache.bt and cache.d moves.
pub const CACHE_SERVER: [&str; 8] = [
    "--cache-entries",
    "100",
    "--store-concurrency",
    "2",
    "--persist-latency",
    "20ms",
    "--stale-reads",
    "serve",
];

/// A [`CACHE_SERVER`] whose cache was unreachable for a moment: every entry
/// it kept is stale until a read refreshes it.
pub async fn stale_cache_server() -> Server {
    let server = Server::start(&CACHE_SERVER);
    let config = format!("{}/admin/config", server.url);
    for reachable in [false, true] {
        let body = format!(r#"{{"cache_reachable": {reachable}}}"#);
        let put = put_json(&client(), &config, &body).await;
        assert_eq!(put.status, 200, "{body}: {}", put.body);
    }
    server
}
pub const CACHE_LOAD: [&str; 10] = [
    "--n",
    "40",
    "--think-time",
    "0s",
    "--keys",
    "zipf(1000, 1.0)",
    "--timeout",
    "150ms",
    "--duration",
    "4s",
];

/// How far into its incident a retry-storm server is when the trace starts.
const INTO_THE_INCIDENT: Duration = Duration::from_secs(3);

/// Starts a retry-storm server (no load: the INCIDENT column depends on nothing
/// else), begins its 10 s incident, and [`INTO_THE_INCIDENT`] later starts
/// `trace` on it (the script, or its twin, given the server's pid and URL);
/// returns what it printed from then until 4 s after the incident's end.
async fn traced_from_mid_incident(
    trace: impl FnOnce(u32, String) -> Traced + Send + 'static,
) -> String {
    let server = Server::start(&["--scenario", "retry-storm"]);
    let incident = simulator_api::client::begin_incident(&server.url, None)
        .await
        .unwrap();
    let ends = tokio::time::Instant::now() + Duration::from_millis(incident.lasts_ms);
    tokio::time::sleep(INTO_THE_INCIDENT).await;
    let (pid, url) = (server.pid, server.url.clone());
    let traced = tokio::task::spawn_blocking(move || trace(pid, url))
        .await
        .unwrap();
    let now = stats(&client(), &server.url).await;
    assert!(
        !now["incident"].is_null(),
        "the trace took the rest of the incident to attach: {now}"
    );
    // Four seconds: a tracer on a busy machine prints its per-second lines late
    // (CI once saw DTrace print none in the 2 s after the end this waited before).
    tokio::time::sleep_until(ends + Duration::from_secs(4)).await;
    let output = tokio::task::spawn_blocking(move || traced.interrupt())
        .await
        .unwrap();
    drop(server);
    output
}

/// retry's INCIDENT column (its last) of a trace begun during an incident: 1 from
/// its first line until the incident ended, then 0; and it never saw the
/// incident begin, so it knew from incident-in-force.
fn assert_in_force_until_its_end(output: &str) {
    let flags: Vec<u64> = tracer::rows(output).iter().map(|r| r[3]).collect();
    let in_force = flags.iter().take_while(|&&f| f == 1).count();
    assert!(
        in_force > 0 && in_force < flags.len() && flags[in_force..].iter().all(|&f| f == 0),
        "INCIDENT 1 from the first line to the incident's end, then 0: {flags:?}\n{output}"
    );
    assert!(
        !output.contains("incidents begun"),
        "attached after incident-start, it cannot have seen one\n{output}"
    );
}

/// [`traced_run_with`], with options for `scripts/trace` too.
async fn traced_run_full(
    tool: Tool,
    script: &str,
    server_args: &[&str],
    load: &[&str],
    trace_args: &'static [&'static str],
) -> Option<(String, Truth)> {
    if !tool.available() {
        return None;
    }
    traced_run_on(tool, script, Server::start(server_args), load, trace_args).await
}

/// [`traced_run_full`] on a server already started.
async fn traced_run_on(
    tool: Tool,
    script: &str,
    server: Server,
    load: &[&str],
    trace_args: &'static [&'static str],
) -> Option<(String, Truth)> {
    if !tool.available() {
        return None;
    }
    let pid = server.pid;
    let script = script.to_owned();
    let traced = tokio::task::spawn_blocking(move || {
        Traced::start_until_begin(tool, &script, pid, trace_args)
    })
    .await
    .unwrap();
    let server = run_load_aside(server, load).await;
    let truth = truth(&server).await;
    let output = tokio::task::spawn_blocking(move || traced.interrupt())
        .await
        .unwrap();
    Some((output, truth))
}

fn assert_within(measured: f64, truth: f64, share: f64, what: &str) {
    let off = (measured - truth).abs() / truth;
    assert!(
        off <= share,
        "{what}: script {measured:.0} vs server {truth:.0} ({:.1} % apart, limit {:.0} %)",
        off * 100.0,
        share * 100.0
    );
}

fn check_count(tool: Tool, output: &str, truth: &Truth) {
    let got = figures(output);
    let figure = |label: &str| got.get(label).copied().unwrap_or(0);
    assert!(
        truth.count("requests_blocked") > 0,
        "nothing blocked; the load proves nothing"
    );
    for seed in simulator_api::SEED_COUNTS {
        let (label, field) = (seed.label, seed.field);
        assert_eq!(
            figure(label),
            truth.count(field),
            "{tool:?}: {label} vs /stats {field}\n{output}"
        );
    }
}

macro_rules! both_tools {
    ($($name:ident: $check:expr;)*) => {
        mod dtrace {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "tier C: a tracer attached as root to a server under load"]
                async fn $name() {
                    ($check)(Tool::DTrace).await
                }
            )*
        }
        mod bpftrace {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "tier C: a tracer attached as root to a server under load"]
                async fn $name() {
                    ($check)(Tool::Bpftrace).await
                }
            )*
        }
    };
}

mod errors;

mod memory;

mod sockets;

mod tap;

/// The number after `label` in a script's summary (`throttled periods 7, ...`).
fn summary_figure(output: &str, label: &str) -> u64 {
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|rest| rest.split(',').next()?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in\n{output}"))
}

/// The server's cgroup's `cpu.stat` throttled periods, read from its file.
fn throttled_periods(cgroup: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("{cgroup}/cpu.stat")).unwrap();
    stat.lines()
        .find_map(|l| l.strip_prefix("nr_throttled "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no nr_throttled in {cgroup}/cpu.stat:\n{stat}"))
}

/// cpu-quota's throttled periods against the kernel's own count over the same
/// seconds: a tenth of a core (10 ms a 100 ms period) and works of 30 ms of CPU
/// from 4 clients, so nearly every period of the load is throttled. Nothing is
/// throttled before the load or after it drains (the canary alone takes well
/// under 1 % of a core), so the file read after the script's BEGIN and after its
/// interrupt brackets exactly what the script saw. The script counts a period
/// when a thread runs again just after the period timer: it may miss one whose
/// thread had not waited a whole millisecond, hence a few periods of room.
async fn cpu_quota_agrees_with_cpu_stat(tool: Tool) {
    common::runs_alone();
    if !tool.available() {
        return;
    }
    let server = Server::start(&THROTTLED);
    let http = client();
    let cgroup = stats(&http, &server.url).await["cpu_cgroup"]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    let pid = server.pid;
    let traced = tokio::task::spawn_blocking(move || {
        Traced::start_until_begin(tool, "cgroup-cpu", pid, &[])
    })
    .await
    .unwrap();
    let before = throttled_periods(&cgroup);
    let server = tokio::task::spawn_blocking(move || {
        run_load(
            &server,
            &["--n", "4", "--think-time", "100ms", "--duration", "4s"],
        );
        server
    })
    .await
    .unwrap();
    settled_stats(&http, &server.url).await;
    let kernel = throttled_periods(&cgroup) - before;
    let output = tokio::task::spawn_blocking(move || traced.interrupt())
        .await
        .unwrap();
    let script = summary_figure(&output, "throttled periods ");
    // Enough periods for the comparison below to mean something. Alone, the load
    // throttles most of its 40 periods; beside other tracer tests (DTrace keeps
    // CPUs busy while it attaches) the server gets less than its quota in some,
    // and 16 were seen: the bound is about what the script is compared on, not
    // how hard this machine let the load run.
    assert!(
        kernel >= 10,
        "4 s at a tenth of a core: {kernel} throttled periods"
    );
    // Alone, both tools matched cpu.stat within a tenth (or 3). Beside the
    // suite's saturated minutes DTrace once counted 30 against 34: its lines
    // showed a second with 3 periods and none throttled, the server (and the
    // tracer's consumer) starved, its canary 940 ms late. An eighth (or 5), the
    // room the twins' test has, still fails a script that counts the wrong
    // thing (the periods themselves: 40 against 34).
    let room = 5.max(kernel / 8);
    assert!(
        script.abs_diff(kernel) <= room,
        "{tool:?}: the script counted {script} throttled periods, cpu.stat {kernel} (room {room})\n{output}"
    );
    assert!(
        output.lines().filter(|l| l.contains(" | ")).count() >= 4,
        "{tool:?}: a line a second\n{output}"
    );
}

/// runqlat.bt and .d sum the time the server's threads waited for a CPU from
/// the scheduler's tracepoints; the kernel sums the same in each thread's
/// schedstat, which the server reports (`/stats.runqueue_wait_ns`). Over the
/// same load, beside its neighbour, the two agree within 10 %, both ways,
/// with the machine to the test (`_alone`): beside other tracers the kernel
/// skips a tracing BPF program that would run while another runs on its CPU
/// (DTrace for Linux's are BPF too). Beside the bpftrace runqlat tests DTrace
/// summed 6,528 ms of schedstat's 7,941 (0.82); alone 4,073 of 4,027 (1.01;
/// 2-vCPU AMD EPYC, 2026-12-02).
///
/// Two things differ between what the script sums and what schedstat sums,
/// and the test takes both out rather than allowing for them:
///
/// - The script learns a thread is the server's at its first switch (its
///   header says so), so the wait before that is not counted. Beside the
///   other tracer tests that was 934 ms of 8,640 (10.8 %): the threads' first
///   waits behind the neighbour, the blocking pool's new threads the longest.
///   A load of a second first, under the tracer, has every thread switch (and
///   the pool's threads live on 10 s idle); only then does the window begin.
/// - The script's summary runs from its BEGIN to Ctrl-C, and DTrace's consumer
///   notices Ctrl-C only at its next switch interval, counting on meanwhile
///   (677 ms more of 3,578 once). The window here is the script's lines a
///   second, from the first line printed after the warm-up settled to the
///   first printed after the load settled: it holds the kernel's window
///   (read inside it) and at most a second of an idle server on each side.
///
/// A window that disagrees is measured once more, on a fresh server, and the
/// second decides, as the exercises' are (`judged_twice_if_wrong`): a
/// fresh-clone CI run alone, 2026-12-03, had bpftrace's lines sum 2,718 ms
/// against schedstat's 3,910 (no BPF program skipped), while five runs by
/// hand the same day were 0.4-8 % apart. A script that is wrong is wrong twice.
async fn runqlat_agrees_with_schedstat(tool: Tool) {
    if !tool.available() {
        return;
    }
    let (mut script, mut kernel, mut printed) = schedstat_window(tool).await;
    eprintln!("{tool:?}: runqlat's lines waited {script} ms, schedstat {kernel} ms");
    if !within_a_tenth(script, kernel) {
        eprintln!("{tool:?}: they disagree; measuring a second window, which decides:\n{printed}");
        (script, kernel, printed) = schedstat_window(tool).await;
        eprintln!("{tool:?}: the second window: runqlat {script} ms, schedstat {kernel} ms");
    }
    // 4 s beside a neighbour with two threads a CPU: seconds of waiting.
    assert!(
        kernel >= 500,
        "{tool:?}: schedstat counted {kernel} ms\n{printed}"
    );
    assert!(
        within_a_tenth(script, kernel),
        "{tool:?}: the script's lines from the warm-up's end summed {script} ms waited, \
         schedstat {kernel} ms\n{printed}"
    );
}

/// Whether the script's sum is within 10 % of the kernel's.
fn within_a_tenth(script: u64, kernel: u64) -> bool {
    script.abs_diff(kernel) * 10 <= kernel
}

/// One window of [`runqlat_agrees_with_schedstat`] on a fresh server: the
/// script's milliseconds waited, schedstat's, and what to print if they
/// disagree (the window's lines, the BPF programs skipped, all of it).
async fn schedstat_window(tool: Tool) -> (u64, u64, String) {
    let server = Server::start(&NEIGHBOURED);
    let http = client();
    let pid = server.pid;
    let traced =
        tokio::task::spawn_blocking(move || Traced::start_until_begin(tool, "runqlat", pid, &[]))
            .await
            .unwrap();
    let waited = |s: Value| {
        s["runqueue_wait_ns"]
            .as_u64()
            .expect("Linux gives schedstat")
    };
    let warm_up = [&NEIGHBOURED_LOAD[..], &["--duration", "1s"]].concat();
    let server = run_load_aside(server, &warm_up).await;
    settled_stats(&http, &server.url).await;
    let traced = tokio::task::spawn_blocking(move || {
        let mut traced = traced;
        traced.next_line();
        traced
    })
    .await
    .unwrap();
    let first_line = traced.printed().len();
    let before = waited(stats(&http, &server.url).await);
    const LOAD_SECONDS: u64 = 4;
    let duration = format!("{LOAD_SECONDS}s");
    let load = [&NEIGHBOURED_LOAD[..], &["--duration", &duration]].concat();
    let server = run_load_aside(server, &load).await;
    let after = waited(settled_stats(&http, &server.url).await);
    let (traced, window) = tokio::task::spawn_blocking(move || {
        let mut traced = traced;
        traced.next_line();
        let window = traced.printed()[first_line..].to_vec();
        (traced, window)
    })
    .await
    .unwrap();
    let misses = traced.bpf_recursion_misses();
    let output = tokio::task::spawn_blocking(move || traced.interrupt())
        .await
        .unwrap();
    drop(server);
    let kernel = (after - before) / 1_000_000;
    let script: u64 = window.iter().filter_map(|l| runqlat_row_waited_ms(l)).sum();
    let printed = format!(
        "{} lines (BPF programs skipped: {misses:?})\n{}\n--- all of it\n{output}",
        window.len(),
        window.join("\n")
    );
    (script, kernel, printed)
}

/// WAITED-MS of one of runqlat's lines a second (`SEC ON-CPU-MS WAITED-MS
/// WAITED-PER-MS-RUN`); `None` for any other line.
pub(crate) fn runqlat_row_waited_ms(line: &str) -> Option<u64> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words[..] {
        [sec, on_cpu, waited, per] if per.contains('.') => {
            sec.parse::<u64>().ok()?;
            on_cpu.parse::<u64>().ok()?;
            waited.parse().ok()
        }
        _ => None,
    }
}

#[test]
fn runqlat_s_rows_are_read_and_nothing_else_is() {
    assert_eq!(
        runqlat_row_waited_ms("     3        352       1024               2.91"),
        Some(1024)
    );
    assert_eq!(
        runqlat_row_waited_ms("   SEC  ON-CPU-MS  WAITED-MS  WAITED-PER-MS-RUN"),
        None
    );
    assert_eq!(
        runqlat_row_waited_ms("  on a CPU 4 ms, waited for one 9 ms: 2.25 ms waited per ms run"),
        None
    );
}

both_tools! {
    runqlat_sums_what_schedstat_sums_alone: runqlat_agrees_with_schedstat;
    cpu_quota_counts_what_cpu_stat_counts_alone: cpu_quota_agrees_with_cpu_stat;
    count_equals_stats: |tool| async move {
        let Some((output, truth)) = traced_run(tool, "count").await else { return };
        check_count(tool, &output, &truth);
    };
    count_shows_shed_requests: |tool| async move {
        let Some((output, truth)) = traced_run_of(tool, "count", &["--when-full", "shed"]).await else { return };
        let shed = truth.count("requests_shed");
        assert!(shed > 0, "8 permits against 40 clients: some requests are shed");
        assert_eq!(figures(&output)["shed requests (503)"], shed, "{output}");
        check_count(tool, &output, &truth);
    };
    count_shows_hedged_writes: |tool| async move {
        let server_args = ["--scenario", "slow-backend", "--hedge-after", "60ms"];
        let Some((output, truth)) = traced_run_of(tool, "count", &server_args).await else { return };
        let hedged = truth.count("persists_hedged");
        assert!(hedged > 0, "a quarter of the slow backend's writes outlive 60 ms");
        assert_eq!(figures(&output)["hedged persistent writes"], hedged, "{output}");
        check_count(tool, &output, &truth);
    };
    count_shows_abandoned_requests: |tool| async move {
        // 2 permits for 100 ms persists pass 20 a second; 4 clients that give up
        // after 150 ms and send again at once offer more, so some wait past their
        // timeout at the gate and hang up.
        let server_args = ["--permits", "2", "--persist-latency", "100ms"];
        let load = ["--n", "4", "--think-time", "0s", "--timeout", "150ms", "--duration", "3s"];
        let Some((output, truth)) = traced_run_with(tool, "count", &server_args, &load).await else { return };
        let abandoned = truth.count("requests_abandoned");
        assert!(abandoned > 0, "clients that time out at the gate leave requests behind");
        assert_eq!(figures(&output)["abandoned requests (client gone)"], abandoned, "{output}");
        let wasted = truth.count("persists_wasted");
        assert!(wasted > 0, "the abandoned requests' writes end after their clients left");
        assert_eq!(figures(&output)["wasted persistent writes (client gone)"], wasted, "{output}");
        check_count(tool, &output, &truth);
    };
    retry_tells_useful_from_wasted_work: |tool| async move {
        // count_shows_abandoned_requests' load: clients that give up after 150 ms
        // at a gate that passes 20 a second, for ROWS_LOAD's 5 s (a line a second).
        let server_args = ["--permits", "2", "--persist-latency", "100ms"];
        let load = ["--n", "4", "--think-time", "0s", "--timeout", "150ms", "--duration", "5s"];
        let trace = &["--client-timeout", "150"];
        let Some((output, truth)) = traced_run_full(tool, "retry", &server_args, &load, trace).await else { return };
        let got = figures(&output);
        let wasted = truth.count("persists_wasted");
        assert!(wasted > 0, "writes ended after their clients left\n{output}");
        assert_eq!(got["wasted persistent writes (client gone)"], wasted, "{output}");
        let useful = truth.count("persists_done") - wasted - truth.count("persists_failed");
        assert_eq!(got.get("useful persistent writes").copied().unwrap_or(0), useful, "{output}");
        assert_eq!(got["abandoned requests (client gone)"], truth.count("requests_abandoned"), "{output}");
        assert_eq!(got["requests done (not cancelled)"], truth.count("requests_done"), "{output}");
        // A client gone after 150 ms: a permit granted after more was granted to nobody.
        let late = got["permit waits longer than the clients' timeout"];
        assert!(late > 0 && late <= truth.count("requests_blocked"), "{output}");
        let rows = tracer::rows(&output);
        assert!(rows.len() >= 3, "one line a second over the run:\n{output}");
        let wasted_per_second: u64 = rows.iter().map(|r| r[1]).sum();
        assert!(wasted_per_second <= wasted, "{output}");
    };
    cache_counts_what_stats_counts: |tool: Tool| async move {
        if !tool.available() {
            return;
        }
        let server = stale_cache_server().await;
        let Some((output, truth)) =
            traced_run_on(tool, "cache", server, &CACHE_LOAD, &[]).await else { return };
        let got = figures(&output);
        for (label, counter) in [
            ("reads that hit", "cache_hits"),
            ("reads that missed", "cache_misses"),
            ("reads answered stale", "cache_stale_hits"),
            ("fills begun", "cache_fills_started"),
            ("fills that filled the cache", "cache_fills_done"),
            ("fills abandoned (client gone)", "cache_fills_abandoned"),
        ] {
            let want = truth.count(counter);
            assert!(want > 0, "{counter}: the load makes some\n{output}");
            assert_eq!(got.get(label).copied().unwrap_or(0), want, "{label}\n{output}");
        }
        assert!(tracer::rows(&output).len() >= 3, "one line a second over the run:\n{output}");
    };
    retry_counts_cancelled_requests: |tool| async move {
        let server_args = ["--permits", "2", "--persist-latency", "100ms", "--on-disconnect", "cancel"];
        let load = ["--n", "4", "--think-time", "0s", "--timeout", "150ms", "--duration", "3s"];
        let trace = &["--client-timeout", "150"];
        let Some((output, truth)) = traced_run_full(tool, "retry", &server_args, &load, trace).await else { return };
        let got = figures(&output);
        let cancelled = truth.count("requests_cancelled");
        assert!(cancelled > 0, "clients gone at the gate cancel their requests\n{output}");
        assert_eq!(got["cancelled requests (client gone)"], cancelled, "{output}");
        assert_eq!(
            got["requests done (not cancelled)"] + cancelled,
            truth.count("requests_started"),
            "every request-start has its request-done\n{output}"
        );
    };
    retry_knows_an_incident_already_in_force: |tool: Tool| async move {
        if !tool.available() {
            return;
        }
        let output = traced_from_mid_incident(move |pid, _| {
            Traced::start_until_begin(tool, "retry", pid, &[])
        })
        .await;
        assert_in_force_until_its_end(&output);
    };
    request_lifetime_agrees_with_the_server: |tool| async move {
        let Some((output, truth)) = traced_run(tool, "request-lifetime").await else { return };
        let got = figures(&output);
        assert_eq!(got["total requests"], truth.count("requests_done"), "{output}");
        let mean = truth.mean_ns("isim_request_lifetime_seconds");
        assert_within(got["average request lifetime"] as f64, mean, 0.10, "average lifetime");
        assert!(got["min request lifetime"] <= got["max request lifetime"]);
    };
    persist_time_agrees_with_the_server: |tool| async move {
        let Some((output, truth)) = traced_run(tool, "persist-time").await else { return };
        let got = figures(&output);
        assert_eq!(got["total writes"], truth.count("persists_done"), "{output}");
        let mean = truth.mean_ns("isim_persist_latency_seconds");
        assert_within(got["average write"] as f64, mean, 0.10, "average write");
    };
    permit_wait_agrees_with_the_server: |tool| async move {
        let Some((output, truth)) = traced_run(tool, "permit-wait").await else { return };
        let got = figures(&output);
        let blocked = truth.count("requests_blocked");
        assert!(blocked > 0, "nothing blocked");
        assert_eq!(got["blocked requests"], blocked, "{output}");
        assert_eq!(got["permits granted"], blocked, "every wait ended after the drain");
        let mean = truth.mean_ns("isim_permit_wait_seconds");
        assert_within(got["average permit wait"] as f64, mean, 0.10, "average permit wait");
    };
    in_flight_shows_the_gate_fill_up: |tool| async move {
        let Some((output, truth)) = traced_run_with(tool, "in-flight", &[], &ROWS_LOAD).await else { return };
        let got = figures(&output);
        assert_eq!(got["max persists in flight"], 8, "8 permits, all taken\n{output}");
        assert_eq!(got["min permits free"], 0);
        assert_eq!(got["blocked requests"], truth.count("requests_blocked"));
        let rows = tracer::rows(&output);
        assert!(rows.len() >= 3, "one line a second over the run:\n{output}");
        assert!(rows.iter().all(|r| r[1] <= 8), "never more in flight than permits");
        assert!(rows.iter().any(|r| r[1] == 8 && r[3] > 0), "a saturated second");
        let blocked_per_second: u64 = rows.iter().map(|r| r[3]).sum();
        assert!(blocked_per_second <= truth.count("requests_blocked"));
    };
    queue_agrees_with_the_server: |tool| async move {
        // One worker at 2 ms a persist (500/s) against 40 clients at ~390/s in
        // bursts: a backlog forms, and drains within a second or two at the end.
        let server_args = ["--scenario", "sequential-persist", "--persist-latency", "2ms"];
        let Some((output, truth)) = traced_run_of(tool, "queue", &server_args).await else { return };
        let got = figures(&output);
        let queued = truth.count("queue_enqueued");
        assert!(queued > 0, "nothing was queued");
        assert_eq!(got["elements queued"], queued, "{output}");
        assert_eq!(got["elements dequeued"], truth.count("queue_dequeued"), "{output}");
        assert!(got["max queue depth"] > 1, "a backlog formed\n{output}");
        let mean = truth.mean_ns("isim_queue_wait_seconds");
        assert_within(got["average queue wait"] as f64, mean, 0.10, "average queue wait");
    };
    queue_counts_refusals_and_drops: |tool| async move {
        // The store's 16 writes at once (267/s) against ~390/s: a queue of 32 that
        // refuses when full, and drops what waited over 50 ms.
        let server_args = [
            "--scenario", "spawn-per-request", "--persistence", "pool", "--persist-workers", "16",
            "--persist-queue", "32", "--when-full", "shed", "--queue-wait-limit", "50ms",
        ];
        let Some((output, truth)) = traced_run_of(tool, "queue", &server_args).await else { return };
        let got = figures(&output);
        let (refused, dropped) = (truth.count("queue_refused"), truth.count("queue_dropped"));
        assert!(refused + dropped > 0, "the overflow was neither refused nor dropped");
        assert_eq!(got.get("elements refused (queue full)").copied().unwrap_or(0), refused, "{output}");
        assert_eq!(got.get("elements dropped (waited too long)").copied().unwrap_or(0), dropped, "{output}");
        assert_eq!(got["elements queued"], truth.count("queue_enqueued"), "{output}");
    };
    size_sorts_requests_by_size_class: |tool| async move {
        let load = [
            "--n", "15", "--think-time", "100ms", "--payload-size", "lognormal(256k, 1M)",
            "--duration", "3s",
        ];
        let Some((output, truth)) =
            traced_run_with(tool, "size", &["--scenario", "size-variance"], &load).await
        else {
            return;
        };
        let got = figures(&output);
        let by_class: u64 = ["requests < 64 KiB", "requests 64 KiB - 1 MiB", "requests >= 1 MiB"]
            .iter()
            .map(|label| got.get(*label).copied().unwrap_or(0))
            .sum();
        assert_eq!(by_class, truth.count("requests_done"), "every request in one class\n{output}");
        assert!(got["requests < 64 KiB"] > 0 && got["requests 64 KiB - 1 MiB"] > 0, "{output}");
        // 22 ms plus 100 ms per MiB: a write of 1 MiB or more takes over 100 ms.
        assert!(got["average persist < 64 KiB"] < 40_000_000, "{output}");
        if let Some(large) = got.get("average persist >= 1 MiB") {
            assert!(*large > 100_000_000, "{output}");
        }
    };
    runtime_agrees_with_the_server: |tool| async move {
        // A millisecond of zstd per element on the async workers, on any machine.
        let server_args = ["--scenario", "blocking-runtime", "--work-cpu", "1ms"];
        let Some((output, truth)) = traced_run_of(tool, "runtime", &server_args).await else { return };
        let got = figures(&output);
        let works = truth.count("work_done");
        assert!(works > 0, "no work was done");
        assert_eq!(got["works started"], truth.count("work_started"), "{output}");
        assert_eq!(got["works done"], works, "{output}");
        assert_eq!(got["works on async workers"], works, "{output}");
        let mean = truth.mean_ns("isim_work_seconds");
        assert_within(got["average work time"] as f64, mean, 0.10, "average work time");
        // The canary wake-ups about 90 times a second while the script runs.
        assert!(got["canary wake-ups"] >= 100, "{output}");
        assert!(got["max canary lateness"] >= got["average canary lateness"]);
    };
    profile_names_the_hot_function: |tool: Tool| async move {
        if !tool.available() {
            return;
        }
        let server = Server::start(&["--scenario", "cpu-hot-spot"]);
        let mut driver = crate::tracing::profile::load(&server.url, 40);
        let pid = server.pid;
        // scripts/trace profile folds the tracer's stacks when it ends.
        let output = tokio::task::spawn_blocking(move || {
            Traced::start(tool, "profile", pid, &["--seconds", "6"]).wait_exit(Duration::from_secs(120))
        })
        .await
        .unwrap();
        let _ = driver.kill();
        let _ = driver.wait();
        let folded = simulator_service::profile::Folded::parse(&output).expect("folded stacks");
        let (hot, path) = (crate::tracing::profile::HOT, crate::tracing::profile::REQUEST_PATH);
        eprintln!(
            "{tool:?}: {} samples in the request path, {:.3} of them {hot}'s",
            folded.samples_in(path),
            folded.share_within(hot, path)
        );
        // Margins, two runs of the debug server: bpftrace 167 and 185 samples
        // (3.3x over 50), 0.982 and 0.984 of them the hot function's; DTrace 134
        // and 137 (2.7x), 0.978 and 0.993 (1.96x over 0.5).
        assert!(folded.samples_in(path) >= 50, "{tool:?}: too few samples\n{output}");
        // The function's tower: every sample with it on the stack (in a debug
        // build its own callees, such as Iter::all, sit on top of it).
        let share = folded.share_within(hot, path);
        assert!(share >= 0.5, "{tool:?}: {hot} held {share:.2} of the request path\n{output}");
    };
    offcpu_puts_the_lock_wait_widest: |tool: Tool| async move {
        if !tool.available() {
            return;
        }
        let server = Server::start(&STALL_SERVER);
        let mut driver = stall_load(&server.url);
        let (pid, url) = (server.pid, server.url.clone());
        // The trace ends by itself 10 s after its banner; the compactions come
        // and go inside that.
        let traced = tokio::task::spawn_blocking(move || {
            Traced::start(tool, "offcpu", pid, &["--seconds", "10"]).until_banner()
        })
        .await
        .unwrap();
        let waited_ns = compactions_while_traced(&url, 3).await;
        let output = tokio::task::spawn_blocking(move || traced.wait_exit(Duration::from_secs(90)))
            .await
            .unwrap();
        let _ = driver.kill();
        let _ = driver.wait();
        let folded = simulator_service::profile::Folded::parse(&output).expect("folded stacks");
        // The widest tower of the request path's (a stack's innermost frame of
        // ours) is the wait under Index::take_lock.
        let mut towers: Vec<(u64, &str)> = folded
            .stacks
            .iter()
            .filter(|(stack, _)| stack.contains(crate::tracing::profile::REQUEST_PATH))
            .map(|(stack, us)| (*us, innermost_of_ours(stack)))
            .collect();
        towers.sort_unstable();
        let (widest_us, widest) = *towers.last().expect("request-path stacks");
        let lock_us = folded.samples_in(LOCK_WAIT);
        let probes_us = waited_ns / 1000;
        eprintln!(
            "{tool:?}: widest request-path tower {widest} ({widest_us} us); under {LOCK_WAIT}: {lock_us} us off the CPU; the lock probes' waits: {probes_us} us"
        );
        assert!(widest.ends_with(LOCK_WAIT), "{tool:?}: the widest tower is {widest}\n{output}");
        // Both time the same waits: from the futex's sleep (sched_switch out,
        // or off-cpu) to the thread running again (or its futex call's
        // return), against from before lock() to after it. Margins, debug
        // server, three compactions: bpftrace 1,179,399 us against the probes'
        // 1,179,477 (0.01 % apart), DTrace 1,583,957 against 1,583,683 and
        // 1,524,368 against 1,524,427 (0.02 %); at least 1.18 s waited (1.97x
        // over 600 ms).
        let apart = lock_us.abs_diff(probes_us) as f64 / probes_us.max(1) as f64;
        assert!(
            probes_us >= 600_000 && apart <= 0.10,
            "{tool:?}: off-CPU {lock_us} us under {LOCK_WAIT}, the probes {probes_us} us\n{output}"
        );
    };
    cpu_usage_agrees_with_proc_alone: |tool| async move {
        common::runs_alone();
        let Some((sampled_ms, proc_ms, pid)) = cpu_run(tool).await else { return };
        // 1000 Hz sampling against the kernel's own accounting (10 ms ticks):
        // within a quarter, and never above it by more. On one VM kind (2-vCPU
        // AMD EPYC, Linux 6.18, 2026-11-28) DTrace's profile-1000 caught only
        // 0.62-0.70 of the busier tokio worker's CPU time (416 ms of 610,
        // 443 of 650; /proc's utime+stime and schedstat agreed with each
        // other), at 997 Hz too, where bpftrace's profile:hz caught 0.80-0.82
        // and both caught 0.93-0.97 of a process that spins or works 0.3 ms a
        // millisecond. Until that is understood, DTrace is held to less: a
        // script that counted nothing, or every CPU's samples, still fails.
        // Margin: the worst DTrace reading seen, 369 of 600 ms, is 1.27x above
        // its floor (600 - 40 - 0.45 x 600 = 290 ms); one core and half a core
        // do not apply (the test runs the server on the whole machine, alone).
        let under = match tool {
            Tool::DTrace => 0.45,
            Tool::Bpftrace => 0.25,
        };
        let (sampled, used) = (sampled_ms as f64, proc_ms as f64);
        assert!(
            sampled <= used + 40.0 + 0.25 * used && sampled >= used - 40.0 - under * used,
            "pid {pid}: sampled {sampled_ms} ms vs /proc {proc_ms} ms ({tool:?}: at most {under} under)"
        );
        assert!(proc_ms > 0, "the load used no CPU?");
    };
}

/// periodic-stall with no compaction until a test asks for them, so every one
/// falls inside what it traces.
const STALL_SERVER: [&str; 4] = ["--scenario", "periodic-stall", "--compaction-every", "0s"];

/// The frame an off-CPU stack of the index's lock ends in (ours: std's lock
/// and the futex call sit above it).
const LOCK_WAIT: &str = "simulator_service::request_path::index::Index::take_lock";

/// periodic-stall's ticket load (100 a second, open loop) for 90 s at most, in the background.
fn stall_load(url: &str) -> std::process::Child {
    std::process::Command::new(BIN)
        .args(["clients", "--target", url, "--n", "64", "--rate", "100"])
        .args(["--arrivals", "poisson", "--duration", "90s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the load")
}

/// Turns the compactions on (every 2 s) until `n` have ended, off again, waits
/// for the one running to end; the lock probes' waits over that, in ns (the
/// server's `isim_lock_wait_seconds` histogram, which lock-wait-done records).
async fn compactions_while_traced(url: &str, n: u64) -> u64 {
    let http = client();
    let waited = |metrics: String| -> u64 {
        let seconds: f64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix("isim_lock_wait_seconds_sum "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0);
        (seconds * 1e9).round() as u64
    };
    let before = waited(get(&http, &format!("{url}/metrics")).await.body);
    let config = format!("{url}/admin/config");
    put_json(&http, &config, r#"{"compaction_every": "2s"}"#).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while stats(&http, url).await["compactions_done"]
        .as_u64()
        .unwrap()
        < n
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{n} compactions within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    put_json(&http, &config, r#"{"compaction_every": "0s"}"#).await;
    loop {
        let s = stats(&http, url).await;
        if s["compactions_started"] == s["compactions_done"] {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the last compaction ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    waited(get(&http, &format!("{url}/metrics")).await.body) - before
}

/// The innermost frame of a folded stack that is the service's (simulator-service).
fn innermost_of_ours(stack: &str) -> &str {
    stack
        .rsplit(';')
        .find(|frame| frame.starts_with("simulator_service::"))
        .unwrap_or("")
}

/// Like [`traced_run`] for cpu-usage (a line a second), with the server's CPU time
/// read from /proc around the load: (milliseconds sampled, milliseconds used, pid).
async fn cpu_run(tool: Tool) -> Option<(u64, u64, u32)> {
    if !tool.available() {
        return None;
    }
    let server = Server::start(&[]);
    let pid = server.pid;
    let measured = tokio::task::spawn_blocking(move || {
        let traced = Traced::start_until_begin(tool, "cpu-usage", pid, &["--interval", "1"]);
        let before = tracer::proc_cpu_ms(pid);
        run_load(&server, &LOAD);
        let output = traced.interrupt();
        let used = tracer::proc_cpu_ms(pid) - before;
        (tracer::cpu_ms(&output), used, pid)
    })
    .await
    .unwrap();
    Some(measured)
}

/// The seed's count script, exactly as its author wrote it (`isim*:::`, no BEGIN,
/// `tick-60s { exit(0); }`), through `scripts/trace` on Linux DTrace: it ends by
/// itself after 60 s and counts what /stats counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: the seed's script runs its own 60 s under DTrace, as root"]
async fn the_seed_count_script_runs_unchanged_and_counts_correctly() {
    let tool = Tool::DTrace;
    if !tool.available() {
        return;
    }
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/seed-count.d");
    let server = Server::start(&[]);
    let pid = server.pid;
    let (traced, server) = tokio::task::spawn_blocking(move || {
        let mut traced = Traced::start(tool, fixture, pid, &[]);
        // The script prints nothing until it ends, so "attached" is read off the
        // server itself: the tracer has raised the USDT semaphores of its probes.
        let probes = [
            "request-start",
            "request-done",
            "request-block",
            "request-nonblock",
            "persist-start",
            "persist-done",
        ];
        traced.wait_for(Duration::from_secs(90), || probes_armed(pid, &probes));
        run_load(&server, &LOAD);
        (traced, server)
    })
    .await
    .unwrap();
    let truth = truth(&server).await;
    let output = tokio::task::spawn_blocking(move || traced.wait_exit(Duration::from_secs(120)))
        .await
        .unwrap();
    assert!(
        output.contains(":tick-60s"),
        "ended by its own tick:\n{output}"
    );
    check_count(tool, &output, &truth);
}

/// The line the exercise pages print, typed exactly so while the ticket's load
/// runs from a second system-simulator process (the load driver, the same
/// binary): options after the name, no pid, no --keep-cpus-busy, in a network
/// namespace as a page's terminal is (tests/suite/guards/pages_run.rs). It finds the
/// server by its listening socket and says which pid it chose, keeps the CPUs
/// busy by itself where DTrace for Linux needs it, and a trace of `--seconds 20`
/// ends by itself, its summary saying 20 seconds, with the persists it saw.
///
/// That `--seconds` reached the script is read from the summary the script
/// prints ("taken in 20 seconds", a second or two more when attaching was slow;
/// 60 if the flag were lost), not from the wall time: the
/// tracer's start (compiling the script, attaching the probes) took up to 25.2 s
/// with release builds beside the suite, and 21 s more than the 20 once with a
/// release build and the shared tests beside (issue 41's run C), so a bound on
/// the time told a slow machine from a broken flag by 1.0x. The time is bounded
/// only to fail fast where DTrace's timer never fires (the reason the CPUs are
/// kept busy): 120 s, 2.9x the slowest seen.
fn the_pages_trace_line_runs_as_typed(tool: Tool) {
    if !tool.available() {
        return;
    }
    // Its own network namespace: `scripts/trace` with no pid picks the server that
    // listens on a port, and there it sees only this one, whatever else runs.
    let netns = Netns::new(&format!("{tool:?}").to_lowercase());
    let server = Server::start_in(&netns, &[]);
    let mut load = netns
        .command(BIN)
        .args(["clients", "--target", &server.url])
        // Runs until the trace has ended, whenever that is: killed then.
        .args(["--n", "135", "--think-time", "1s", "--duration", "120s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the load driver");
    let chosen = match tool {
        Tool::DTrace => "--dtrace",
        Tool::Bpftrace => "--bpftrace",
    };
    let started = std::time::Instant::now();
    let out = netns
        .command(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/trace"))
        .args(["persist-time", "--seconds", "20", chosen])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run scripts/trace");
    let took = started.elapsed();
    let _ = load.kill();
    let _ = load.wait();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(
        stderr.contains(&format!(
            "tracing pid {}, the system-simulator that listens",
            server.pid
        )),
        "said which process it chose: {stderr}"
    );
    // The summary counts from the script's BEGIN, which bpftrace runs before it
    // has attached every probe: under the full suite the attaching took 2 s
    // more once ("taken in 22 seconds"), and a lost flag would say 60.
    let taken: u64 = stdout
        .split("taken in ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no summary of the trace: {stderr}\n{stdout}"));
    assert!(
        (20..40).contains(&taken),
        "the summary of a --seconds 20 trace says {taken} s: {stderr}\n{stdout}"
    );
    assert!(
        took <= Duration::from_secs(120),
        "a 20 s trace took {took:?}: {stderr}\n{stdout}"
    );
    let writes = figures(&stdout).get("total writes").copied().unwrap_or(0);
    assert!(writes > 1_000, "{writes} writes traced:\n{stdout}");
}

#[test]
#[ignore = "tier C: a tracer attached as root to a server under load"]
fn the_pages_trace_line_runs_as_typed_under_dtrace() {
    the_pages_trace_line_runs_as_typed(Tool::DTrace);
}

#[test]
#[ignore = "tier C: a tracer attached as root to a server under load"]
fn the_pages_trace_line_runs_as_typed_under_bpftrace() {
    the_pages_trace_line_runs_as_typed(Tool::Bpftrace);
}

/// DTrace for Linux ends with its trace: `scripts/trace` preloads
/// scripts/dtrace-quick-exit.c, which skips the freeing of the kernel's types
/// at its end (7.5 s of CPU here), and the tracer still takes down what it set
/// up: no uprobe of its own is left in tracefs once it has exited. A shim that
/// skipped `dtrace_close` whole would leave its `dt_PID_dtrace/BEGIN` and
/// `END` behind and fail this.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: DTrace attached as root to a server"]
async fn dtrace_ends_with_its_trace_and_leaves_no_uprobe_behind() {
    if !Tool::DTrace.available() {
        return;
    }
    if !have("cc") {
        skip_or_fail("no C compiler: scripts/trace cannot build the DTrace shim");
        return;
    }
    let server = Server::start(&[]);
    let pid = server.pid.to_string();
    let dry = std::process::Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/trace"))
        .args(["count", &pid, "--dtrace", "--seconds", "2", "--dry-run"])
        .output()
        .unwrap();
    let described = String::from_utf8_lossy(&dry.stdout);
    assert!(
        described.contains("LD_PRELOAD=") && described.contains("dtrace-quick-exit"),
        "{described}"
    );
    let traced = tokio::task::spawn_blocking(move || {
        Traced::start_until_begin(Tool::DTrace, "count", server.pid, &["--seconds", "2"])
    })
    .await
    .unwrap();
    let tracer = traced.pid();
    let uprobes = || {
        [
            "/sys/kernel/tracing/uprobe_events",
            "/sys/kernel/debug/tracing/uprobe_events",
        ]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .expect("tracefs's uprobe_events")
    };
    let own = format!("dt_{tracer}_");
    assert!(
        uprobes().contains(&own),
        "DTrace's own uprobes while it runs:\n{}",
        uprobes()
    );
    let output = tokio::task::spawn_blocking(move || traced.wait_exit(Duration::from_secs(60)))
        .await
        .unwrap();
    assert!(output.contains("Counting isim probes"), "{output}");
    let left = uprobes();
    assert!(
        !left.contains(&own),
        "left behind by dtrace {tracer}:\n{left}"
    );
    // Loaded into a tracer that runs as root: root's own file, in a folder
    // nobody else can write.
    use std::os::unix::fs::MetadataExt;
    let shim = described
        .split_whitespace()
        .find_map(|word| word.strip_prefix("LD_PRELOAD="))
        .map(std::path::PathBuf::from)
        .unwrap();
    for path in [shim.as_path(), shim.parent().unwrap()] {
        let meta = std::fs::metadata(path).unwrap();
        assert!(
            meta.uid() == 0 && meta.mode() & 0o022 == 0,
            "{}: uid {} mode {:o}",
            path.display(),
            meta.uid(),
            meta.mode()
        );
    }
}
