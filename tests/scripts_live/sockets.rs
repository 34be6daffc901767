//! The socket scripts, accept-queue and delayed-ack, against the kernel's own
//! counters over the same seconds: `nstat`'s `TcpExtListenOverflows` and
//! `TcpExtDelayedACKs`. The server and its clients run in a network namespace
//! of their own, whose counters count only their sockets, and `scripts/trace`
//! hands the scripts the server's namespace, so a test beside them moves
//! neither side.

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

/// Runs `scenario`'s server in a namespace, `script` on it, `load` from inside
/// the namespace; returns what the script printed and `counter`'s change over
/// the load, read after the clients had every reply (so every SYN a full queue
/// dropped had been sent again and answered).
async fn traced_in_netns(
    tool: Tool,
    script: &'static str,
    scenario: &str,
    load: &'static [&'static str],
    counter: &'static str,
) -> (String, u64) {
    let netns = Netns::new(script);
    let server = Server::start_in(&netns, &["--scenario", scenario]);
    let pid = server.pid;
    let traced =
        tokio::task::spawn_blocking(move || Traced::start_until_begin(tool, script, pid, &[]))
            .await
            .unwrap();
    let (netns, server, kernel) = tokio::task::spawn_blocking(move || {
        let before = nstat(&netns, counter);
        let out = netns
            .command(BIN)
            .args(["clients", "--target", &server.url])
            .args(load)
            .output()
            .expect("run the clients");
        stdout_of_success(&out);
        let kernel = nstat(&netns, counter) - before;
        (netns, server, kernel)
    })
    .await
    .unwrap();
    let output = tokio::task::spawn_blocking(move || traced.interrupt())
        .await
        .unwrap();
    drop((server, netns));
    (output, kernel)
}

/// accept-queue's drops at a full queue and SYNs sent again, together, against
/// the namespace's listen overflows: herds of 100 new connections a second into
/// a queue of 64 for 3 s.
async fn accept_queue_agrees_with_nstat(tool: Tool) {
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
    let (output, kernel) = traced_in_netns(
        tool,
        "accept-queue",
        "accept-queue",
        LOAD,
        "TcpExtListenOverflows",
    )
    .await;
    let dropped = total(
        tool,
        &output,
        "dropped_at_a_full_queue",
        "dropped at a full queue",
    );
    let syns = total(tool, &output, "syns_sent_again", "SYNs sent again");
    assert!(
        kernel >= 20,
        "{tool:?}: 3 s of herds overflowed {kernel} times\n{output}"
    );
    assert!(
        syns > 0 && dropped > 0,
        "{tool:?}: both kinds of drop\n{output}"
    );
    // By hand both tools matched nstat exactly (157 = 56 + 101; 158 = 61 + 97)
    // over 140-200 overflows; the room is for a retransmit at the window's edge.
    let room = 3.max(kernel / 10);
    assert!(
        (dropped + syns).abs_diff(kernel) <= room,
        "{tool:?}: the script counted {dropped} + {syns}, nstat {kernel} (room {room})\n{output}"
    );
}

/// delayed-ack's delayed ACKs against the namespace's: replies in two writes
/// with Nagle on, 8 clients for 3 s, about one a request.
async fn delayed_ack_agrees_with_nstat(tool: Tool) {
    if !tool.available() {
        return;
    }
    const LOAD: &[&str] = &["--n", "8", "--think-time", "10ms", "--duration", "3s"];
    let (output, kernel) = traced_in_netns(
        tool,
        "delayed-ack",
        "nagle-delayed-ack",
        LOAD,
        "TcpExtDelayedACKs",
    )
    .await;
    let script = total(tool, &output, "delayed_acks", "delayed ACKs");
    assert!(
        kernel >= 100,
        "{tool:?}: 3 s of split replies: {kernel} delayed ACKs\n{output}"
    );
    // By hand: 464 = 464 and 307 = 307 (bpftrace), 450 against 451 (DTrace, one
    // ACK after its window closed).
    let room = 3.max(kernel / 20);
    assert!(
        script.abs_diff(kernel) <= room,
        "{tool:?}: the script counted {script} delayed ACKs, nstat {kernel} (room {room})\n{output}"
    );
}

both_tools! {
    accept_queue_counts_what_nstat_counts: accept_queue_agrees_with_nstat;
    delayed_ack_counts_what_nstat_counts: delayed_ack_agrees_with_nstat;
}
