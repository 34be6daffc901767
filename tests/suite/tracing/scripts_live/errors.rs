//! errors.bt and errors.d, and their twin, against a server at its descriptor
//! limit: started under `ulimit -n 64` and sent more idle connections than
//! that for 3 s. The script's failed accepts by errno, the twin's (off the
//! tap) and the server's own count in `/stats` are the same number; the
//! kernel's count of the process's accept4() failures too; and the net
//! descriptors the script adds up from the calls follow the count the twin
//! reads in `/stats.descriptors`. On the descriptors exercise's server, the
//! stacks its summary prints are the journal's.

use std::process::Command;

use tokio::net::TcpStream;

use super::*;

/// Idle connections held against a limit of 64.
const HELD: usize = 80;

/// The failed accepts with errno 24 (EMFILE) in a summary: bpftrace's and the
/// twin's `@accept_errors[24]: N`, DTrace's `  24       N`.
fn emfile_accepts(tool: Tool, output: &str) -> u64 {
    let after = output
        .split("failed accepts, by errno")
        .nth(1)
        .unwrap_or_else(|| panic!("{tool:?}: no failed accepts in\n{output}"));
    let section = after.split("the kernel's failed calls").next().unwrap();
    section
        .lines()
        .find_map(|l| match tool {
            Tool::Bpftrace => l.strip_prefix("@accept_errors[24]: "),
            Tool::DTrace => l.trim().strip_prefix("24 ").map(str::trim),
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// The kernel's count of failed accept4() calls with EMFILE in the script's
/// summary: `@failed[accept4, 24]: N`, or DTrace's `  accept4  24  N`.
fn kernel_emfile_accepts(tool: Tool, output: &str) -> u64 {
    output
        .lines()
        .find_map(|l| match tool {
            Tool::Bpftrace => l.strip_prefix("@failed[accept4, 24]: "),
            Tool::DTrace => {
                let words: Vec<&str> = l.split_whitespace().collect();
                (words.len() == 3 && words[0] == "accept4" && words[1] == "24").then(|| words[2])
            }
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// The largest NET-FDS of the lines a second (the last of three columns).
/// Only the lines above the summary: its table of the kernel's failed calls
/// ends in two numbers too ("openat 24 53"), and once outnumbered the peak.
fn most_net_fds(output: &str) -> i64 {
    let per_second = output
        .split_once("Summary of")
        .map_or(output, |(above, _)| above);
    per_second
        .lines()
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let [.., errors, net] = words[..] else {
                return None;
            };
            errors.parse::<u64>().ok()?;
            net.parse::<i64>().ok()
        })
        .max()
        .unwrap_or(i64::MIN)
}

async fn errors_agree_with_the_server(tool: Tool) {
    if !tool.available() {
        return;
    }
    let server = Server::start_under_ulimit("-n 64", &["--header-read-timeout", "60s"]);
    let operator = server.operator_url.clone().expect("an operator listener");
    let pid = server.pid;
    let twin_target = operator.clone();
    let (traced, twin) = tokio::task::spawn_blocking(move || {
        let traced = Traced::start_until_begin(tool, "errors", pid, &[]);
        let mut twin = Command::new(BIN);
        twin.args([
            "trace",
            "errors",
            "--target",
            &twin_target,
            "--seconds",
            "600",
        ]);
        (traced, Traced::spawn(twin).until_begin())
    })
    .await
    .unwrap();
    let http = client();
    let before = stats(&http, &operator).await["accept_errors"]
        .as_u64()
        .unwrap();

    let mut held = Vec::new();
    for _ in 0..HELD {
        held.push(TcpStream::connect(server.addr()).await.unwrap());
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    drop(held);
    // Answered on the data port: its accepts work again, and nothing fails
    // from here on.
    stats(&http, &server.url).await;
    let after = stats(&http, &operator).await["accept_errors"]
        .as_u64()
        .unwrap();
    // A line a second after the last failure, so both have printed it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (script, twin, misses) = tokio::task::spawn_blocking(move || {
        let misses = traced.bpf_recursion_misses();
        let (script, twin) = Traced::interrupt_together(traced, twin);
        (script, twin, misses)
    })
    .await
    .unwrap();
    drop(server);
    let server_count = after - before;
    let (script_count, twin_count) = (
        emfile_accepts(tool, &script),
        emfile_accepts(Tool::Bpftrace, &twin),
    );
    let kernel = kernel_emfile_accepts(tool, &script);
    let (script_net, twin_net) = (most_net_fds(&script), most_net_fds(&twin));
    eprintln!(
        "{tool:?}: failed accepts: server {server_count}, script {script_count}, twin {twin_count}, kernel {kernel}; \
         most net descriptors: script {script_net}, twin {twin_net}; BPF programs skipped: {misses:?}"
    );
    let both = format!("--- script\n{script}\n--- twin\n{twin}\nBPF programs skipped: {misses:?}");
    assert!(
        server_count >= 15,
        "3 s at the limit: {server_count} failures\n{both}"
    );
    assert_eq!(
        script_count, server_count,
        "{tool:?}: the script's count\n{both}"
    );
    assert_eq!(twin_count, server_count, "the twin's count\n{both}");
    assert_eq!(
        kernel, server_count,
        "{tool:?}: the kernel's accept4 failures\n{both}"
    );
    // The twin reads the count once a second, the script adds up every call:
    // their peaks are the same table, full, give or take the twin's own
    // connection (opened before its first reading) and a file the server had
    // open for a moment (2 apart in each tool's run, 2026-12-03).
    assert!(
        script_net >= 20,
        "{tool:?}: the flood's descriptors\n{both}"
    );
    // Each firing the kernel skipped (another BPF program or a map read held
    // the CPU) moves the script's count by one at most.
    let room = 4 + misses.unwrap_or(0);
    assert!(
        script_net.abs_diff(twin_net) <= room,
        "{tool:?}: net descriptors, script {script_net}, twin {twin_net}\n{both}"
    );
}

/// The stack section of a summary: what follows its heading, "files opened".
fn stack_section(output: &str) -> &str {
    output
        .split_once("files opened")
        .map_or("", |(_, after)| after)
}

/// The stacks of a stack section with their counts, in the order printed:
/// bpftrace's `@held[` frames `]: N`, DTrace's frames then a line of `N`.
fn stacks(tool: Tool, section: &str) -> Vec<(String, i64)> {
    let mut found = Vec::new();
    let mut frames = String::new();
    for line in section.lines().skip(1).map(str::trim) {
        let count = match tool {
            Tool::Bpftrace => line.strip_prefix("]: ").and_then(|n| n.parse().ok()),
            Tool::DTrace => line.parse().ok(),
        };
        match count {
            Some(n) => found.push((std::mem::take(&mut frames), n)),
            None => {
                frames.push_str(line);
                frames.push('\n');
            }
        }
    }
    found
}

/// On the descriptors exercise's server, whose journal keeps the entry of
/// every failed write open, for 3 s of its ticket's load: the stacks the
/// summary prints are the journal's. DTrace names a debug build's frames, and
/// the stacks that opened most are `Journal::begin`'s, their opens the
/// server's journal entries meanwhile. bpftrace 0.17 names no frame of a
/// debug build, so its stacks are held to their sum: what they hold open is
/// what the server kept meanwhile (its open descriptors' growth).
async fn the_stacks_are_the_journals(tool: Tool) {
    if !tool.available() {
        return;
    }
    let server = Server::start(&["--scenario", "descriptor-leak", "--admin-listen", "off"]);
    let pid = server.pid;
    let http = client();
    let traced =
        tokio::task::spawn_blocking(move || Traced::start_until_begin(tool, "errors", pid, &[]))
            .await
            .unwrap();
    let figures = |s: serde_json::Value| {
        (
            s["journal_entries"].as_i64().unwrap(),
            s["descriptors"]["open"].as_i64().unwrap(),
        )
    };
    let (entries_before, open_before) = figures(stats(&http, &server.url).await);
    let server = run_load_aside(
        server,
        &[
            "--rate",
            "200",
            "--arrivals",
            "poisson",
            "--connections",
            "per-request",
            "--n",
            "100",
            "--timeout",
            "2s",
            "--duration",
            "3s",
        ],
    )
    .await;
    let (entries_after, open_after) = figures(settled_stats(&http, &server.url).await);
    let output = tokio::task::spawn_blocking(move || traced.interrupt())
        .await
        .unwrap();
    drop(server);
    let (journalled, kept) = (entries_after - entries_before, open_after - open_before);
    let found = stacks(tool, stack_section(&output));
    eprintln!("{tool:?}: journalled {journalled}, kept {kept}, stacks {found:?}");
    assert!(kept >= 30, "3 s of a leak of 20 a second: {kept}\n{output}");
    match tool {
        Tool::DTrace => {
            // printa prints the largest last.
            let journal: i64 = found
                .iter()
                .filter(|(frames, _)| frames.contains("Journal5begin"))
                .map(|(_, n)| n)
                .sum();
            assert!(
                found
                    .last()
                    .is_some_and(|(frames, _)| frames.contains("Journal5begin")),
                "the stack that opened most is not the journal's\n{output}"
            );
            assert!(
                journal.abs_diff(journalled) as f64 <= 0.1 * journalled as f64 + 5.0,
                "the journal's stacks opened {journal}, the server journalled {journalled}\n{output}"
            );
        }
        Tool::Bpftrace => {
            let held: i64 = found.iter().map(|(_, n)| n).sum();
            assert!(
                held.abs_diff(kept) as f64 <= 0.25 * kept as f64 + 5.0,
                "the stacks hold {held}, the server kept {kept}\n{output}"
            );
        }
    }
}

both_tools! {
    errors_counts_what_the_server_counts_at_its_descriptor_limit: errors_agree_with_the_server;
    errors_names_the_stacks_that_hold_the_files: the_stacks_are_the_journals;
}
