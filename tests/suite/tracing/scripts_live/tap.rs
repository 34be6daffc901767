//! The tap twins (`system-simulator trace NAME`, the bundled scripts' logic over
//! the server's probe tap) against their bpftrace scripts: each pair attached to
//! the same server, through the same load, then stopped (the twin asks the server
//! to end its stream after everything so far, so nothing in transit is missed).
//! Every count agrees exactly and every histogram's p50 and p99 fall in the same
//! power-of-two bucket. The figures a script times between two probes (a
//! tracer's clock in its handler against the tap's stamp just before the probe)
//! agree within 5 % or 200 us. The canary (runtime) wakes every 10 ms whatever
//! the load, so what two observers see of it depends on when each started and
//! stopped (a second apart under a loaded machine): both see it, and its
//! lateness's median falls in the same bucket.

use std::process::Command;

use system_simulator::trace::hist_rows;

use super::*;

/// Labels whose figure is a time a script measured between two probes.
const TIMED: &[&str] = &[
    "average request lifetime",
    "max request lifetime",
    "min request lifetime",
    "average write",
    "max write",
    "min write",
    "average permit wait",
    "max permit wait",
    "min permit wait",
];

/// Labels of the canary, which ticks whatever the load.
const CANARY: &[&str] = &[
    "canary wake-ups",
    "average canary lateness",
    "max canary lateness",
];

/// One script's two outputs.
struct Pair {
    script: &'static str,
    /// The tracer's (bpftrace's, or DTrace's where a test says so).
    bpftrace: String,
    tap: String,
}

/// Starts a server, each script under bpftrace and as its tap twin, waits until
/// all have begun, drives `load`, waits until nothing is in flight, and stops them.
async fn twins_under_load(
    server_args: &[&str],
    load: &[&str],
    scripts: &[(&'static str, &'static [&'static str])],
) -> Option<Vec<Pair>> {
    twins_under(Tool::Bpftrace, server_args, load, scripts).await
}

/// [`twins_under_load`] with the tool of its choice (DTrace for Linux holds its
/// target under ptrace: one script a server).
async fn twins_under(
    tool: Tool,
    server_args: &[&str],
    load: &[&str],
    scripts: &[(&'static str, &'static [&'static str])],
) -> Option<Vec<Pair>> {
    if !tool.available() {
        return None;
    }
    Some(twins_on(tool, Server::start(server_args), load, scripts).await)
}

/// [`twins_under`] on a server already started.
async fn twins_on(
    tool: Tool,
    server: Server,
    load: &[&str],
    scripts: &[(&'static str, &'static [&'static str])],
) -> Vec<Pair> {
    let (pid, url) = (server.pid, server.url.clone());
    let scripts = scripts.to_vec();
    let started = tokio::task::spawn_blocking(move || {
        scripts
            .iter()
            .map(|&(script, options)| {
                let traced = Traced::start_until_begin(tool, script, pid, options);
                let mut twin = Command::new(BIN);
                twin.args(["trace", script, "--target", &url, "--seconds", "600"])
                    .args(options);
                (script, traced, Traced::spawn(twin).until_begin())
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let server = run_load_aside(server, load).await;
    settled_stats(&client(), &server.url).await;
    let pairs = tokio::task::spawn_blocking(move || {
        started
            .into_iter()
            .map(|(script, traced, twin)| {
                let (bpftrace, tap) = Traced::interrupt_together(traced, twin);
                Pair {
                    script,
                    bpftrace,
                    tap,
                }
            })
            .collect()
    })
    .await
    .unwrap();
    drop(server);
    pairs
}

/// The bucket of the histogram's `share` quantile (0.5, 0.99), by its label.
fn quantile_bucket(rows: &[(String, u64)], share: f64) -> String {
    let total: u64 = rows.iter().map(|(_, n)| n).sum();
    let rank = ((total as f64) * share).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (label, n) in rows {
        seen += n;
        if seen >= rank {
            return label.clone();
        }
    }
    panic!("no bucket holds rank {rank} of {total}: {rows:?}")
}

/// Every histogram's `@map[label` as printed (the head's value is empty).
fn histograms(output: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|l| l.strip_prefix('@')?.strip_suffix("]: ").map(str::to_owned))
        .collect()
}

fn assert_twins_agree(pair: &Pair) {
    let (bt, tap) = (figures(&pair.bpftrace), figures(&pair.tap));
    let both = format!(
        "{}:\n--- bpftrace\n{}\n--- tap\n{}",
        pair.script, pair.bpftrace, pair.tap
    );
    assert_eq!(
        bt.keys().collect::<Vec<_>>(),
        tap.keys().collect::<Vec<_>>(),
        "the same figures\n{both}"
    );
    for (label, &traced) in &bt {
        let twin = tap[label];
        if TIMED.contains(&label.as_str()) {
            let apart = traced.abs_diff(twin);
            assert!(
                apart as f64 <= (0.05 * traced as f64).max(200_000.0),
                "{label}: {traced} vs {twin}\n{both}"
            );
        } else if CANARY.contains(&label.as_str()) {
            assert!(
                traced > 0 && twin > 0,
                "{label}: {traced} vs {twin}\n{both}"
            );
        } else {
            assert_eq!(traced, twin, "{label}\n{both}");
        }
    }
    let heads = histograms(&pair.bpftrace);
    assert_eq!(heads, histograms(&pair.tap), "the same histograms\n{both}");
    for head in heads {
        let (traced, twin) = (
            hist_rows(&pair.bpftrace, &head),
            hist_rows(&pair.tap, &head),
        );
        assert!(!traced.is_empty(), "{head} has rows\n{both}");
        if head.contains("canary") {
            assert_canary_nested(&traced, &twin, &format!("{head}\n{both}"));
            continue;
        }
        for &share in &[0.5, 0.99] {
            assert_eq!(
                quantile_bucket(&traced, share),
                quantile_bucket(&twin, share),
                "{head} p{}\n{both}",
                share * 100.0
            );
        }
    }
}

/// The canary ticks every 10 ms whatever the load, so the two histograms hold
/// different ticks: bpftrace begins before the twin is started (the twin's start,
/// a debug binary connecting, takes 0.3-1 s), and both are stopped together. Their
/// medians may then sit a bucket apart (CI on a slow VM kind: 99 of bpftrace's 272
/// ticks in [1M, 2M), 71 of the twin's 230, so the twin's p50 fell in [2M, 4M)).
/// What holds is nesting: every bucket of the twin holds at most what bpftrace's
/// holds, give or take the two ticks at the shared end, and the twin saw most of
/// bpftrace's ticks. A twin that read another argument, or another probe, puts
/// its ticks in buckets bpftrace's does not have.
fn assert_canary_nested(traced: &[(String, u64)], twin: &[(String, u64)], both: &str) {
    const TICKS_AT_THE_END: u64 = 2;
    let traced_in = |label: &str| {
        traced
            .iter()
            .find(|(l, _)| l == label)
            .map_or(0, |&(_, n)| n)
    };
    for (label, n) in twin {
        assert!(
            *n <= traced_in(label) + TICKS_AT_THE_END,
            "the twin's {label} holds {n}, bpftrace's {}: {both}",
            traced_in(label)
        );
    }
    let (traced_total, twin_total) = (
        traced.iter().map(|(_, n)| n).sum::<u64>(),
        twin.iter().map(|(_, n)| n).sum::<u64>(),
    );
    assert!(
        twin_total * 2 >= traced_total,
        "the twin saw {twin_total} ticks, bpftrace {traced_total}: {both}"
    );
}

/// A gate of 2 permits at 100 ms a persist against 4 clients that give up after
/// 150 ms ([`GATE_LOAD`]): requests block, wait past the clients' timeout, are
/// abandoned, and their writes end for nobody, so every figure of the gate's
/// scripts moves.
const GATE_SERVER: [&str; 4] = ["--permits", "2", "--persist-latency", "100ms"];
const GATE_LOAD: [&str; 8] = [
    "--n",
    "4",
    "--think-time",
    "0s",
    "--timeout",
    "150ms",
    "--duration",
    "3s",
];

/// The six scripts of the gate on [`GATE_SERVER`] under [`GATE_LOAD`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: bpftrace attached as root beside the tap twins"]
async fn the_gate_scripts_twins_report_what_bpftrace_reports() {
    let scripts: &[(&str, &[&str])] = &[
        ("count", &[]),
        ("request-lifetime", &[]),
        ("persist-time", &[]),
        ("permit-wait", &[]),
        ("in-flight", &[]),
        ("retry", &["--client-timeout", "150"]),
    ];
    let Some(pairs) = twins_under_load(&GATE_SERVER, &GATE_LOAD, scripts).await else {
        return;
    };
    for pair in &pairs {
        assert_twins_agree(pair);
    }
    let count = figures(&pairs[0].tap);
    assert!(
        count["abandoned requests (client gone)"] > 0,
        "{}",
        pairs[0].tap
    );
    assert!(count["blocked requests"] > 0, "{}", pairs[0].tap);
}

/// The cache's twin under a cache whose fills are both done and abandoned and
/// whose stale entries are served (`stale_cache_server`, `CACHE_LOAD`), beside
/// bpftrace and then DTrace: every count equal, and the one a second lines
/// alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: bpftrace and DTrace attached as root beside the tap twin"]
async fn the_cache_twin_reports_what_bpftrace_and_dtrace_report() {
    use crate::tracing::scripts_live::{stale_cache_server, CACHE_LOAD};
    if !Tool::Bpftrace.available() {
        return;
    }
    let server = stale_cache_server().await;
    let pairs = twins_on(Tool::Bpftrace, server, &CACHE_LOAD, &[("cache", &[])]).await;
    assert_twins_agree(&pairs[0]);
    let got = figures(&pairs[0].tap);
    assert!(got["fills abandoned (client gone)"] > 0, "{}", pairs[0].tap);
    assert!(got["fills that filled the cache"] > 0, "{}", pairs[0].tap);
    assert!(got["reads answered stale"] > 0, "{}", pairs[0].tap);
    if !Tool::DTrace.available() {
        return;
    }
    let server = stale_cache_server().await;
    let pairs = twins_on(Tool::DTrace, server, &CACHE_LOAD, &[("cache", &[])]).await;
    let pair = &pairs[0];
    let (traced, twin) = (figures(&pair.bpftrace), figures(&pair.tap));
    let both = format!("--- dtrace\n{}\n--- tap\n{}", pair.bpftrace, pair.tap);
    let counts: Vec<_> = traced
        .iter()
        .filter(|(l, _)| !TIMED.contains(&l.as_str()))
        .collect();
    assert!(counts.len() >= 5, "the script's counts\n{both}");
    for (label, value) in counts {
        assert_eq!(twin.get(label), Some(value), "{label}\n{both}");
    }
}

/// A pool's queue that refuses when full and drops what waited over 50 ms; sizes
/// of three classes; a millisecond of zstd per element on the async workers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: bpftrace attached as root beside the tap twins"]
async fn the_queue_size_and_runtime_twins_report_what_bpftrace_reports() {
    let queue_server = [
        "--scenario",
        "spawn-per-request",
        "--persistence",
        "pool",
        "--persist-workers",
        "16",
        "--persist-queue",
        "32",
        "--when-full",
        "shed",
        "--queue-wait-limit",
        "50ms",
    ];
    let Some(pairs) = twins_under_load(&queue_server, &LOAD, &[("queue", &[])]).await else {
        return;
    };
    assert_twins_agree(&pairs[0]);
    assert!(
        figures(&pairs[0].tap)["elements queued"] > 0,
        "{}",
        pairs[0].tap
    );

    let size_load = [
        "--n",
        "15",
        "--think-time",
        "100ms",
        "--payload-size",
        "lognormal(256k, 1M)",
        "--duration",
        "3s",
    ];
    let size_server = ["--scenario", "size-variance"];
    let Some(pairs) = twins_under_load(&size_server, &size_load, &[("size", &[])]).await else {
        return;
    };
    assert_twins_agree(&pairs[0]);

    let runtime_server = ["--scenario", "blocking-runtime", "--work-cpu", "1ms"];
    let Some(pairs) = twins_under_load(&runtime_server, &LOAD, &[("runtime", &[])]).await else {
        return;
    };
    assert_twins_agree(&pairs[0]);
    assert!(figures(&pairs[0].tap)["works done"] > 0, "{}", pairs[0].tap);
}

/// The D twins print their counts with `printa` (`  label   value`), their
/// histograms in DTrace's own layout: the counts are held equal here, one script
/// a server, for the two scripts with the most counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: DTrace attached as root beside the tap twins"]
async fn the_count_and_retry_twins_count_what_dtrace_counts() {
    for script in [
        ("count", &[][..]),
        ("retry", &["--client-timeout", "150"][..]),
    ] {
        let Some(pairs) = twins_under(Tool::DTrace, &GATE_SERVER, &GATE_LOAD, &[script]).await
        else {
            return;
        };
        let pair = &pairs[0];
        let (traced, twin) = (figures(&pair.bpftrace), figures(&pair.tap));
        let both = format!(
            "{}:\n--- dtrace\n{}\n--- tap\n{}",
            pair.script, pair.bpftrace, pair.tap
        );
        let counts: Vec<_> = traced
            .iter()
            .filter(|(l, _)| !TIMED.contains(&l.as_str()))
            .collect();
        assert!(counts.len() >= 4, "the script's counts\n{both}");
        for (label, value) in counts {
            assert_eq!(twin.get(label), Some(value), "{label}\n{both}");
        }
    }
}

/// The retry twin knows an incident in force when it starts, as retry.bt and
/// retry.d do (`retry_knows_an_incident_already_in_force`): no root needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 9 s of a server's incident"]
async fn the_retry_twin_knows_an_incident_already_in_force() {
    let output = traced_from_mid_incident(|_, url| {
        let mut twin = Command::new(BIN);
        twin.args(["trace", "retry", "--target", &url, "--seconds", "600"]);
        Traced::spawn(twin).until_begin()
    })
    .await;
    assert_in_force_until_its_end(&output);
}

/// The twins of the two CPU scripts, which read the kernel's own counts of the
/// server from `/stats` (its cgroup's `cpu.stat`, its CPU time) where the scripts
/// rebuild them from the scheduler: on a server at a tenth of a core under works
/// of 30 ms ([`THROTTLED`], the load of the cpu-quota test), the throttled periods
/// agree about as the script and `cpu.stat` do (within an eighth, or 5), and the CPU
/// milliseconds as the script and /proc do (1000 Hz sampling against the
/// kernel's accounting: 40 ms and a quarter). Alone in the suite: both figures
/// depend on the CPU the server gets while the two observers watch it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: bpftrace attached as root beside the twins that read /stats"]
async fn the_cpu_twins_report_what_bpftrace_reports_alone() {
    crate::common::runs_alone();
    let tool = Tool::Bpftrace;
    if !tool.available() {
        return;
    }
    let server = Server::start(&THROTTLED);
    // The work's calibration at start runs under the quota too: the observers
    // begin a second apart, so they start once the group has stopped being
    // throttled, and both windows hold the same throttled periods (the load's).
    let http = client();
    let throttled = || async {
        stats(&http, &server.url).await["cpu_cgroup"]["throttled_periods"]
            .as_u64()
            .expect("a cgroup with a quota")
    };
    let mut last = throttled().await;
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = throttled().await;
        if now == last {
            break;
        }
        last = now;
    }
    let pairs = twins_on(
        tool,
        server,
        &["--n", "4", "--think-time", "100ms", "--duration", "4s"],
        &[("cgroup-cpu", &[]), ("cpu-usage", &["--interval", "1"])],
    )
    .await;
    let [quota, usage] = &pairs[..] else {
        unreachable!()
    };
    let both = |pair: &Pair| {
        format!(
            "{}:\n--- bpftrace\n{}\n--- twin\n{}",
            pair.script, pair.bpftrace, pair.tap
        )
    };
    let traced = summary_figure(&quota.bpftrace, "throttled periods ");
    let twin = summary_figure(&quota.tap, "throttled periods ");
    assert!(twin >= 10, "the load was throttled\n{}", both(quota));
    // The script against cpu.stat is held within a tenth (or 3); the twin reads
    // cpu.stat over its own window, which begins a moment after the script's:
    // an eighth (or 5) holds both.
    assert!(
        traced.abs_diff(twin) <= 5.max(twin / 8),
        "throttled periods {traced} vs {twin}\n{}",
        both(quota)
    );
    let (sampled, accounted) = (tracer::cpu_ms(&usage.bpftrace), tracer::cpu_ms(&usage.tap));
    eprintln!(
        "throttled periods: bpftrace {traced}, twin {twin}; CPU: sampled {sampled} ms, accounted {accounted} ms"
    );
    assert!(accounted > 0, "the load used no CPU?\n{}", both(usage));
    assert!(
        (sampled as f64 - accounted as f64).abs() <= 40.0 + 0.25 * accounted as f64,
        "CPU {sampled} ms sampled vs {accounted} ms accounted\n{}",
        both(usage)
    );
}

/// The index's lock (exercise 12): `trace locks` as an unprivileged user,
/// beside locks.bt, on periodic-stall under its ticket's load while three
/// compactions come and go, all of them after both began and before both
/// end (each holding the lock about 300 ms): the same counts, the same waits'
/// buckets, and the milliseconds waited, summed over the lines a second,
/// within 10 % of each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: bpftrace attached as root beside the tap twin run as nobody"]
async fn the_locks_twin_run_as_nobody_reports_what_bpftrace_reports() {
    if !Tool::Bpftrace.available() {
        return;
    }
    let server = Server::start(&STALL_SERVER);
    let mut driver = stall_load(&server.url);
    let (pid, url) = (server.pid, server.url.clone());
    let (traced, twin) = tokio::task::spawn_blocking(move || {
        let traced = Traced::start_until_begin(Tool::Bpftrace, "locks", pid, &[]);
        let mut twin = common::unprivileged(BIN);
        twin.args(["trace", "locks", "--target", &url, "--seconds", "600"]);
        (traced, Traced::spawn(twin).until_begin())
    })
    .await
    .unwrap();
    compactions_while_traced(&server.url, 3).await;
    let _ = driver.kill();
    let _ = driver.wait();
    settled_stats(&client(), &server.url).await;
    // Each has printed the second the last compaction ended in before it stops.
    let pair = tokio::task::spawn_blocking(move || {
        let (mut traced, mut twin) = (traced, twin);
        traced.next_line();
        twin.next_line();
        let (bpftrace, tap) = Traced::interrupt_together(traced, twin);
        Pair {
            script: "locks",
            bpftrace,
            tap,
        }
    })
    .await
    .unwrap();
    drop(server);
    assert_twins_agree(&pair);
    let waited_ms = |output: &str| -> u64 {
        output
            .lines()
            .filter(|l| l.len() > 8 && l.as_bytes()[2] == b':' && l.as_bytes()[5] == b':')
            .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
            .sum()
    };
    let (traced_ms, twin_ms) = (waited_ms(&pair.bpftrace), waited_ms(&pair.tap));
    eprintln!("locks: bpftrace's lines sum {traced_ms} ms waited, the tap's {twin_ms} ms");
    assert!(
        traced_ms >= 250 && traced_ms.abs_diff(twin_ms) as f64 <= 0.10 * traced_ms as f64,
        "waited ms: bpftrace {traced_ms}, tap {twin_ms}\n--- bpftrace\n{}\n--- tap\n{}",
        pair.bpftrace,
        pair.tap
    );
}

/// The milliseconds waited a second over a window's lines, its first and last
/// left out; NaN without three lines. Each tool prints at a phase of its own,
/// up to a second apart, so those two lines cover different parts of the
/// load's start and end (a CI run's twin had 1,793 ms in its first line where
/// bpftrace's first had 635, and 3,619 against 2,436 over the window); every
/// line between is a whole second under the load for both.
fn steady_waited_ms_a_line(lines: &[String]) -> f64 {
    let waited: Vec<u64> = lines
        .iter()
        .filter_map(|l| super::runqlat_row_waited_ms(l))
        .collect();
    match waited.len() {
        0..=2 => f64::NAN,
        n => waited[1..n - 1].iter().sum::<u64>() as f64 / (n - 2) as f64,
    }
}

/// One window of runqlat.bt and its twin run as nobody on the noisy
/// neighbour's server: a second of load first, so that the script knows every
/// thread, then 4 s; each one's lines a second from the first printed after
/// the warm-up to the first printed after the load. Returns both tools'
/// waited ms a line over it (`steady_waited_ms_a_line`) and what each printed.
async fn runqlat_window() -> (f64, f64, String) {
    let server = Server::start(&NEIGHBOURED);
    let (pid, url) = (server.pid, server.url.clone());
    let (traced, twin) = tokio::task::spawn_blocking(move || {
        let traced = Traced::start_until_begin(Tool::Bpftrace, "runqlat", pid, &[]);
        let mut twin = common::unprivileged(BIN);
        twin.args(["trace", "runqlat", "--target", &url, "--seconds", "600"]);
        (traced, Traced::spawn(twin).until_begin())
    })
    .await
    .unwrap();
    let warm_up = [&NEIGHBOURED_LOAD[..], &["--duration", "1s"]].concat();
    let server = run_load_aside(server, &warm_up).await;
    settled_stats(&client(), &server.url).await;
    let (traced, twin, marks) = tokio::task::spawn_blocking(move || {
        let (mut traced, mut twin) = (traced, twin);
        traced.next_line();
        twin.next_line();
        let marks = (traced.printed().len(), twin.printed().len());
        (traced, twin, marks)
    })
    .await
    .unwrap();
    let load = [&NEIGHBOURED_LOAD[..], &["--duration", "4s"]].concat();
    let server = run_load_aside(server, &load).await;
    settled_stats(&client(), &server.url).await;
    let (pair, windows, misses) = tokio::task::spawn_blocking(move || {
        let (mut traced, mut twin) = (traced, twin);
        traced.next_line();
        twin.next_line();
        let windows = (
            traced.printed()[marks.0..].to_vec(),
            twin.printed()[marks.1..].to_vec(),
        );
        let misses = traced.bpf_recursion_misses();
        let (bpftrace, tap) = Traced::interrupt_together(traced, twin);
        let pair = Pair {
            script: "runqlat",
            bpftrace,
            tap,
        };
        (pair, windows, misses)
    })
    .await
    .unwrap();
    drop(server);
    let (traced_ms, twin_ms) = (
        steady_waited_ms_a_line(&windows.0),
        steady_waited_ms_a_line(&windows.1),
    );
    assert!(
        pair.tap
            .lines()
            .filter(|l| l.ends_with(|c: char| c.is_ascii_digit()))
            .count()
            >= 4,
        "a line a second\n{}",
        pair.tap
    );
    let printed = format!(
        "--- bpftrace's window\n{}\n--- the twin's\n{}\n--- bpftrace (BPF programs skipped: {misses:?})\n{}\n--- twin\n{}",
        windows.0.join("\n"),
        windows.1.join("\n"),
        pair.bpftrace,
        pair.tap
    );
    (traced_ms, twin_ms, printed)
}

/// Whether the two tools' waited ms a second agree: within 10 % of the twin's,
/// which must be at least 100 ms a second under this load.
fn runqlat_agrees(traced_ms: f64, twin_ms: f64) -> bool {
    twin_ms >= 100.0 && (traced_ms - twin_ms).abs() <= 0.10 * twin_ms
}

/// The run-queue wait (exercise 14): `trace runqlat` as an unprivileged user,
/// beside runqlat.bt, on the noisy neighbour's server under its ticket's load:
/// the twin reads the kernel's schedstat sums through `/stats`, the script sums
/// the scheduler's tracepoints, and their milliseconds waited agree within
/// 10 % a second under the load, over the same window and the same threads as
/// `tracing::scripts_live::runqlat_agrees_with_schedstat` takes them ([`runqlat_window`]).
/// Alone: beside other tracers the kernel skips a BPF program that
/// would run while another runs on its CPU, and the script sums less (0.85 of
/// the twin in a CI run's shared phase, 2026-11-28, with the first waits).
/// A window that disagrees is measured once more and the second decides, as
/// the exercises' are (`judged_twice_if_wrong`): a fresh-clone CI run alone,
/// 2026-12-03, had bpftrace 704 ms a second against the twin's 847, two of
/// its seconds 722 and 728 against 828 and 1,021, while three runs by hand the
/// same day were 1-8 % apart. A twin that is wrong is wrong twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: bpftrace attached as root beside the tap twin run as nobody"]
async fn the_runqlat_twin_run_as_nobody_reports_what_bpftrace_reports_alone() {
    if !Tool::Bpftrace.available() {
        return;
    }
    let (mut traced_ms, mut twin_ms, mut printed) = runqlat_window().await;
    eprintln!(
        "runqlat: bpftrace's lines waited {traced_ms:.0} ms a second, the twin's {twin_ms:.0} ms"
    );
    if !runqlat_agrees(traced_ms, twin_ms) {
        eprintln!("runqlat: they disagree; measuring a second window, which decides:\n{printed}");
        (traced_ms, twin_ms, printed) = runqlat_window().await;
        eprintln!(
            "runqlat, the second window: bpftrace {traced_ms:.0} ms a second, the twin {twin_ms:.0} ms"
        );
    }
    // Margins: six runs alone by hand, 2-6 % apart (938 against 958, 1,073
    // against 1,136 ms a second), three more 1-8 % apart (2026-12-03): 1.25x
    // under the 10 % bound at worst; the twin's rate 7x over the 100 ms floor.
    assert!(
        runqlat_agrees(traced_ms, twin_ms),
        "waited ms a second under the load: bpftrace {traced_ms:.0}, twin {twin_ms:.0}\n{printed}"
    );
}
