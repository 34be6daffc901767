//! `system-simulator doctor` tells each user its own way: run as root on a
//! machine with a tracer, it sends every exercise's scripts to the tracer; run
//! as an unprivileged user (nobody, through setpriv) against the same server,
//! it sends the probe scripts to the tap and the kernel-side ones to their
//! counters, and says that no tracer attaches. Needs root (to be both); skips
//! without, fails under CI.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::*;

/// The binary where nobody may run it (a test's target directory need not be
/// readable by every user).
fn binary_for_everyone(dir: &std::path::Path) -> std::path::PathBuf {
    let copy = dir.join("system-simulator");
    std::fs::copy(BIN, &copy).unwrap();
    for path in [dir, copy.as_path()] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    copy
}

fn doctor(program: &[&str], url: &str) -> String {
    let out = Command::new(program[0])
        .args(&program[1..])
        .args(["doctor", "--target", url])
        .output()
        .unwrap();
    stdout_of_success(&out)
}

/// The line of an exercise's script in doctor's list.
fn route_of<'a>(report: &'a str, script: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{script} ")))
        .unwrap_or_else(|| panic!("no line for {script}:\n{report}"))
}

#[test]
fn doctor_gives_root_the_tracer_and_a_user_the_tap_or_the_counters() {
    if !is_root() {
        skip_or_fail("doctor's two verdicts need root (and setpriv to drop it)");
        return;
    }
    if !have("bpftrace") {
        skip_or_fail("bpftrace not installed (apt-get install bpftrace)");
        return;
    }
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let bin = binary_for_everyone(dir.path());
    let bin = bin.to_str().unwrap();

    let as_root = doctor(&[bin], &server.url);
    assert!(as_root.contains("as this user (root)"), "{as_root}");
    assert!(
        as_root.contains("1. bpftrace, as root        yes"),
        "{as_root}"
    );
    assert!(
        as_root.contains("4. the probe tap (no root)  yes"),
        "{as_root}"
    );
    for script in [
        "count",
        "in-flight",
        "retry",
        "cgroup-cpu",
        "listener",
        "delayed-ack",
    ] {
        let line = route_of(&as_root, script);
        assert!(
            line.contains(&format!("sudo scripts/trace {script}")),
            "{line}"
        );
    }

    let as_user = doctor(
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            bin,
        ],
        &server.url,
    );
    assert!(as_user.contains("as this user (not root)"), "{as_user}");
    assert!(
        as_user.contains("1. bpftrace, as root        no"),
        "{as_user}"
    );
    assert!(
        as_user.contains("better: sudo scripts/trace NAME"),
        "{as_user}"
    );
    assert!(
        as_user.contains("4. the probe tap (no root)  yes"),
        "{as_user}"
    );
    for script in [
        "count",
        "request-lifetime",
        "runtime",
        "retry",
        "queue",
        "size",
    ] {
        let line = route_of(&as_user, script);
        assert!(
            line.contains(&format!("the tap: cargo run --release -- trace {script}")),
            "{line}"
        );
    }
    assert!(
        route_of(&as_user, "delayed-ack").contains(
            "the server's writes and nstat's counters in /stats: cargo run --release -- trace delayed-ack"
        ),
        "{as_user}"
    );
    assert!(
        route_of(&as_user, "cgroup-cpu").contains(
            "the tap and the cgroup's cpu.stat in /stats: cargo run --release -- trace cgroup-cpu"
        ),
        "{as_user}"
    );
    assert!(
        route_of(&as_user, "listener").contains(
            "the listener's queue and drops and nstat's counters in /stats: cargo run --release -- trace listener"
        ),
        "{as_user}"
    );
}

#[test]
fn doctor_without_a_server_says_how_to_start_one() {
    // A port nothing listens on: one just bound and let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let report = doctor(&[BIN], &format!("http://127.0.0.1:{port}"));
    assert!(
        report.contains("4. the probe tap (no root)  no"),
        "{report}"
    );
    assert!(report.contains("workshop start NAME"), "{report}");
    // The exercises' routes do not depend on a server being up, and each is
    // named as an attendee knows it, never by its cause.
    assert!(report.contains("throughput-plateau:"), "{report}");
    for cause in simulator_service::scenario::names() {
        assert!(
            !report.contains(&format!("{cause}:")),
            "names {cause}: {report}"
        );
    }
}
