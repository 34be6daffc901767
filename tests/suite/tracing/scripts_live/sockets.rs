//! The socket scripts, accept-queue and delayed-ack, against the kernel's own
//! counters over the same seconds: `nstat`'s `TcpExtListenOverflows` and
//! `TcpExtDelayedACKs`. The server and its clients run in a network namespace
//! of their own, whose counters count only their sockets, and `scripts/trace`
//! hands the scripts the server's namespace, so a test beside them moves
//! neither side. Each script's twin (`system-simulator trace NAME`, from what the
//! server reports in `/stats`) runs beside it, through the same load, and is held
//! to the script's totals.

use std::process::Command;

use super::*;

/// One of the namespace's TCP counters, absolute (`nstat -asz`: no history file
/// read or written).
fn nstat(netns: &Netns, counter: &str) -> u64 {
    let out = netns
        .command("nstat")
        .args(["-asz", counter])
        .output()
        .expect("run nstat");
    let text = stdout_of_success(&out);
    text.lines()
        .find_map(|l| l.strip_prefix(counter))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {counter} in\n{text}"))
}

/// A total the script printed at its end: bpftrace's `@name: N`, or the D
/// script's `label N`.
fn total(tool: Tool, output: &str, bpftrace_map: &str, dtrace_label: &str) -> u64 {
    let lead = match tool {
        Tool::Bpftrace => format!("@{bpftrace_map}:"),
        Tool::DTrace => dtrace_label.to_owned(),
    };
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix(&lead))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{tool:?}: no `{lead}` in\n{output}"))
}

/// What one run printed and counted.
struct Run {
    /// The script's output, under the tool.
    script: String,
    /// Its twin's, beside it.
    twin: String,
    /// The namespace counter's change over the load.
    kernel: u64,
    /// The kernel's skips of the tracer's BPF programs, read just before it
    /// was stopped (`Traced::bpf_recursion_misses`).
    bpf_misses: Option<u64>,
    /// The load's own report: its connects, errors and drain, said with every
    /// failure (the script once counted 65 SYNs sent again where nstat's
    /// overflows needed 97, its last second's missing: the report says
    /// whether those connections waited for their SYN to be sent again).
    load: String,
}

impl Run {
    fn both(&self) -> String {
        format!(
            "--- script\n{}\n--- twin\n{}\n{}\n--- the load's report\n{}",
            self.script,
            self.twin,
            self.misses(),
            self.load
        )
    }

    /// Said with every failure: whether the kernel skipped the tracer's programs.
    fn misses(&self) -> String {
        match self.bpf_misses {
            Some(n) => format!("the tracer's BPF programs missed {n} firings (recursion_misses)"),
            None => "the tracer's BPF programs' recursion_misses could not be read".into(),
        }
    }
}

/// Runs `scenario`'s server in a namespace, `script` and its twin on it, `load`
/// from inside the namespace; returns what the two printed and `counter`'s
/// change over the load, read after the clients had every reply (so every SYN a
/// full queue dropped had been sent again and answered).
async fn traced_in_netns(
    tool: Tool,
    script: &'static str,
    scenario: &str,
    load: &'static [&'static str],
    counter: &'static str,
) -> Run {
    let netns = Netns::new(script);
    let server = Server::start_in(&netns, &["--scenario", scenario]);
    let (pid, url) = (server.pid, server.url.clone());
    let twin_in = netns.name.clone();
    let (traced, twin) = tokio::task::spawn_blocking(move || {
        let traced = Traced::start_until_begin(tool, script, pid, &[]);
        let mut twin = Command::new("ip");
        twin.args(["netns", "exec", &twin_in, BIN, "trace", script])
            .args(["--target", &url, "--seconds", "600"]);
        (traced, Traced::spawn(twin).until_begin())
    })
    .await
    .unwrap();
    let (netns, server, kernel, load) = tokio::task::spawn_blocking(move || {
        let before = nstat(&netns, counter);
        let out = netns
            .command(BIN)
            .args(["clients", "--target", &server.url])
            .args(load)
            .output()
            .expect("run the clients");
        let load = stdout_of_success(&out);
        let kernel = nstat(&netns, counter) - before;
        (netns, server, kernel, load)
    })
    .await
    .unwrap();
    let (script, twin, bpf_misses) = tokio::task::spawn_blocking(move || {
        let misses = traced.bpf_recursion_misses();
        let (script, twin) = Traced::interrupt_together(traced, twin);
        (script, twin, misses)
    })
    .await
    .unwrap();
    drop((server, netns));
    Run {
        script,
        twin,
        kernel,
        bpf_misses,
        load,
    }
}

/// A column of the lines a second, a value a line: `column` counts from 0 over
/// the words of a line, the `|` separators left out.
fn column(output: &str, column: usize) -> Vec<u64> {
    output
        .lines()
        .filter(|l| l.contains('|'))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().filter(|w| *w != "|").collect();
            words.first()?.parse::<u64>().ok()?;
            words.get(column)?.parse::<u64>().ok()
        })
        .collect()
}

/// accept-queue's drops at a full queue and SYNs sent again, together, against
/// the namespace's listen overflows: herds of 100 new connections a second into
/// a queue of 64 for 3 s.
///
/// Alone: beside other tests, bpftrace's run of it failed twice (in a CI run,
/// 2026-11-29, the script counted 113 of nstat's 166; once before in a run
/// filtered to the queue tests), while alone it matched nstat exactly
/// in every run (and beside the DTrace twin, a delayed-ack trace and a
/// size trace, 3 runs of 3). Not reproduced on demand, so the cause is not
/// known; the kernel skips a BPF program that fires while another BPF program
/// or map operation holds the same CPU (each program's `recursion_misses`),
/// which other tracers beside it would make likely. Every failure now says
/// how many firings the tracer's programs missed, so the next miss names its
/// cause or rules this one out.
async fn accept_queue_agrees_with_nstat(tool: Tool) {
    common::runs_alone();
    if !tool.available() {
        return;
    }
    const LOAD: &[&str] = &[
        "--rate",
        "100",
        "--arrivals",
        "bursts",
        "--connections",
        "per-request",
        "--n",
        "300",
        "--duration",
        "3s",
    ];
    let run = traced_in_netns(
        tool,
        "listener",
        "accept-queue",
        LOAD,
        "TcpExtListenOverflows",
    )
    .await;
    let (output, kernel) = (&run.script, run.kernel);
    let dropped = total(
        tool,
        output,
        "dropped_at_a_full_queue",
        "dropped at a full queue",
    );
    let syns = total(tool, output, "syns_sent_again", "SYNs sent again");
    assert!(
        kernel >= 20,
        "{tool:?}: 3 s of herds overflowed {kernel} times\n{output}"
    );
    // The first herd meets an empty queue of 64 and a third of it is dropped
    // at the SYN, every run. A drop at the last ACK (or at a request behind it)
    // needs a SYN let in while the queue had room and its ACK arriving after
    // the queue filled: 33-117 a run by hand (40 runs of 40), but none in two
    // CI runs (2026-11-29 and 30, DTrace, then bpftrace, alike to the line: 86,
    // 108 and 78 accepted, 111 SYNs sent again and nothing else), so that kind
    // is held to the twin's count of it below, not required. (The second
    // failed only because the twin printed no line for a total of 0.)
    assert!(
        syns > 0,
        "{tool:?}: no SYN sent again: the script counted {dropped} + {syns}, nstat {kernel}\n{}",
        run.both()
    );
    // By hand both tools matched nstat exactly (157 = 56 + 101; 158 = 61 + 97)
    // over 140-200 overflows; the room is for a retransmit at the window's edge.
    let room = 3.max(kernel / 10);
    assert!(
        (dropped + syns).abs_diff(kernel) <= room,
        "{tool:?}: the script counted {dropped} + {syns}, nstat {kernel} (room {room})\n{}",
        run.both()
    );
    // The twin splits the same overflows from the listener's own drops: its
    // ACKs dropped and SYNs dropped against the script's drops and SYNs sent
    // again, and their sum against nstat, all within the script's room.
    let twin_dropped = total(Tool::Bpftrace, &run.twin, "dropped_at_a_full_queue", "");
    let twin_syns = total(Tool::Bpftrace, &run.twin, "syns_sent_again", "");
    eprintln!(
        "{tool:?}: overflows {kernel}; script {dropped} + {syns}; twin {twin_dropped} + {twin_syns}; {}",
        run.misses()
    );
    for (what, script, twin) in [
        ("dropped", dropped, twin_dropped),
        ("SYNs", syns, twin_syns),
    ] {
        assert!(
            script.abs_diff(twin) <= room,
            "{tool:?}: {what}: script {script}, twin {twin} (room {room})\n{}",
            run.both()
        );
    }
    assert!(
        (twin_dropped + twin_syns).abs_diff(kernel) <= room,
        "{tool:?}: the twin counted {twin_dropped} + {twin_syns}, nstat {kernel}\n{}",
        run.both()
    );
    // Connections, a line a second: each observer prints whole seconds of its
    // own clock, so the herd that straddles the stop lands in one's last line
    // and in the other's lost part-second (by hand: 299 against 342 when
    // DTrace was stopped a second before the twin). Both saw most of the herds.
    let accepted = |output: &str| column(output, 2).iter().sum::<u64>();
    let (script_accepted, twin_accepted) = (accepted(output), accepted(&run.twin));
    assert!(
        script_accepted >= 200 && twin_accepted >= 200,
        "{tool:?}: accepted: script {script_accepted}, twin {twin_accepted}\n{}",
        run.both()
    );
    // The queue reached its limit in the twin's readings, as the script saw it
    // (under four spinning processes on two CPUs, three runs each: 66 with
    // readings that cover the last second; 14-59 when they covered 100-200 ms).
    let twin_queue_max = column(&run.twin, 4).into_iter().max().unwrap_or(0);
    eprintln!("{tool:?}: the twin's longest queue {twin_queue_max}");
    assert!(
        twin_queue_max >= 60,
        "{tool:?}: the twin's longest queue {twin_queue_max}\n{}",
        run.both()
    );
}

/// delayed-ack's delayed ACKs against the namespace's: replies in two writes
/// with Nagle on, 8 clients for 3 s, about one a request.
async fn delayed_ack_agrees_with_nstat(tool: Tool) {
    if !tool.available() {
        return;
    }
    const LOAD: &[&str] = &["--n", "8", "--think-time", "10ms", "--duration", "3s"];
    let run = traced_in_netns(
        tool,
        "delayed-ack",
        "nagle-delayed-ack",
        LOAD,
        "TcpExtDelayedACKs",
    )
    .await;
    let (output, kernel) = (&run.script, run.kernel);
    let script = total(tool, output, "delayed_acks", "delayed ACKs");
    assert!(
        kernel >= 100,
        "{tool:?}: 3 s of split replies: {kernel} delayed ACKs\n{output}"
    );
    // By hand: 464 = 464 and 307 = 307 (bpftrace), 450 against 451 (DTrace, one
    // ACK after its window closed).
    let room = 3.max(kernel / 20);
    assert!(
        script.abs_diff(kernel) <= room,
        "{tool:?}: the script counted {script} delayed ACKs, nstat {kernel} (room {room}); {}\n{output}",
        run.misses()
    );
    // The twin: nstat's count over its window, and the pairs of writes the
    // server counted of its own replies against the script's count of its
    // writev calls.
    let twin_acks = total(Tool::Bpftrace, &run.twin, "delayed_acks", "");
    let script_pairs = total(tool, output, "write_pairs", "write pairs");
    let twin_pairs = total(Tool::Bpftrace, &run.twin, "write_pairs", "");
    eprintln!(
        "{tool:?}: delayed ACKs nstat {kernel}, script {script}, twin {twin_acks}; pairs script {script_pairs}, twin {twin_pairs}"
    );
    assert!(
        twin_acks.abs_diff(kernel) <= room,
        "{tool:?}: the twin counted {twin_acks} delayed ACKs, nstat {kernel}\n{}",
        run.both()
    );
    let pairs_room = 3.max(script_pairs / 20);
    assert!(
        script_pairs >= 100 && twin_pairs.abs_diff(script_pairs) <= pairs_room,
        "{tool:?}: pairs of writes: script {script_pairs}, twin {twin_pairs} (room {pairs_room})\n{}",
        run.both()
    );
}

both_tools! {
    accept_queue_counts_what_nstat_counts_alone: accept_queue_agrees_with_nstat;
    delayed_ack_counts_what_nstat_counts: delayed_ack_agrees_with_nstat;
}
