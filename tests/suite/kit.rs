//! The kit (`tools/kit`), served by the room and installed on a laptop that
//! reaches nothing but the room (tier C): a network namespace with only its
//! loopback, an empty home, the room's printed install line, the installed
//! `doctor` with the room's line, and the room's board saying the laptop is
//! ready with a short count that agreed. The kit here is the test build's
//! own binaries (`tools/kit --from-build`): making the release kit takes
//! minutes of builds, which docs/workshop/README.md's "Before the day"
//! measures by hand; its installer, sums and room are the same ones.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use common::{skip_or_fail, Netns, BIN};
use serde_json::Value;

/// The programs the test needs beyond the build: the namespace's and the kit's.
const NEEDS: [&str; 6] = ["ip", "curl", "sha256sum", "tar", "gzip", "readelf"];

#[test]
#[ignore = "tier C: a kit made and installed from the room in a network namespace, its short count and the board"]
fn a_laptop_with_only_the_room_installs_the_kit_counts_and_shows_ready() {
    if !common::is_root() {
        return skip_or_fail("the laptop's network namespace needs root");
    }
    if let Some(missing) = NEEDS.iter().find(|p| !common::have(p)) {
        return skip_or_fail(&format!("{missing} is missing"));
    }
    let dir = tempfile::tempdir().unwrap();
    let kit = dir.path().join("kit");
    let built = Path::new(BIN).parent().unwrap();
    let made = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/kit"))
        .arg("--from-build")
        .arg(built)
        .arg("--out")
        .arg(&kit)
        .output()
        .unwrap();
    let made_text = common::stdout_of_success(&made);
    for file in ["install.sh", "SHA256SUMS", "kit.json"] {
        assert!(kit.join(file).exists(), "{file} in the kit: {made_text}");
    }

    // A copy of the kit on a stick whose archive lost a byte: refused, nothing installed.
    let stick = dir.path().join("stick");
    std::fs::create_dir(&stick).unwrap();
    for entry in std::fs::read_dir(&kit).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), stick.join(entry.file_name())).unwrap();
    }
    let archive = std::fs::read_dir(&stick)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .unwrap();
    let mut bytes = std::fs::read(&archive).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&archive, bytes).unwrap();
    let tampered_home = dir.path().join("tampered-home");
    std::fs::create_dir(&tampered_home).unwrap();
    let refused = laptop_shell(
        &tampered_home,
        &format!("sh {}/install.sh", stick.display()),
    )
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && said.contains("SHA-256"),
        "a damaged archive is refused by its sum: {said}"
    );
    assert!(
        !tampered_home.join(".local/bin/system-simulator").exists(),
        "nothing installed from a damaged archive"
    );

    let netns = Netns::new("kit");
    let mut room = netns.command(BIN);
    room.args(["room", "--listen", "127.0.0.1:0", "--password", "plum-42"])
        .arg("--kit")
        .arg(&kit)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut room = KillOnDrop(room.spawn().expect("the room starts"));
    let mut banner = BufReader::new(room.0.stdout.take().unwrap()).lines();
    let mut text = String::new();
    while !text.contains("doctor") {
        let line = banner.next().expect("the room's banner").unwrap();
        text.push_str(&line);
        text.push('\n');
    }
    let install_line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("curl -fsS ") && l.ends_with("| sh"))
        .unwrap_or_else(|| panic!("an install line in the room's banner:\n{text}"))
        .to_owned();
    let url = install_line
        .split_whitespace()
        .nth(2)
        .unwrap()
        .trim_end_matches("/kit/install.sh")
        .to_owned();
    let key = common::word_after(&text, "/room?key=");

    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let started = Instant::now();
    let installed = netns_shell(&netns, &home, &install_line).output().unwrap();
    let said = common::stdout_of_success(&installed);
    assert!(said.contains("its SHA-256 matches"), "{said}");
    let installed_bin = home.join(".local/bin/system-simulator");
    assert!(installed_bin.exists(), "{said}");
    let install_took = started.elapsed();

    let doctor = netns_shell(
        &netns,
        &home,
        &format!("ISIM_ROOM={url}/join/plum-42 ISIM_SEAT=laptop-1 system-simulator doctor 2>&1"),
    )
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.status.success(), "doctor says ready:\n{said}");
    assert!(said.contains("ready: a short count agreed"), "{said}");
    assert!(said.contains("the room's board shows it"), "{said}");
    let ready_took = started.elapsed();

    // The board, as the facilitator's page reads it (inside the namespace: the
    // room is on its loopback).
    let board = netns_shell(
        &netns,
        &home,
        &format!("curl -fsS '{url}/room/board?key={key}'"),
    )
    .output()
    .unwrap();
    let board: Value = serde_json::from_str(&common::stdout_of_success(&board)).unwrap();
    assert_eq!(board["ready"], 1, "{board}");
    let row = &board["seats"][0];
    assert_eq!(row["seat"], "laptop-1");
    let readiness = &row["ready"]["readiness"];
    assert_eq!(readiness["ready"], true, "{readiness}");
    assert_eq!(readiness["arch"], std::env::consts::ARCH);
    let count = &readiness["count"];
    assert!(count["started"].as_u64().unwrap() > 0, "{count}");
    assert_eq!(count["started"], count["server_started"], "{count}");
    assert!(
        readiness["tracers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "tap"),
        "{readiness}"
    );
    let bundled = simulator_service::scenario::bundled().unwrap();
    assert_eq!(
        readiness["exercises"].as_array().unwrap().len(),
        bundled.iter().filter(|s| !s.scripts.is_empty()).count(),
        "every exercise's way: {readiness}"
    );
    eprintln!(
        "kit: installed in {:.1} s, the board showed ready {:.1} s after the install line began",
        install_took.as_secs_f64(),
        ready_took.as_secs_f64()
    );
}

/// A laptop's shell: an empty environment but `PATH` with `~/.local/bin` first and `HOME`.
fn laptop_shell(home: &Path, line: &str) -> Command {
    let mut command = Command::new("env");
    command.args(laptop_env(home)).args(["sh", "-c", line]);
    command
}

fn netns_shell(netns: &Netns, home: &Path, line: &str) -> Command {
    let mut command = netns.command("env");
    command.args(laptop_env(home)).args(["sh", "-c", line]);
    command
}

fn laptop_env(home: &Path) -> Vec<String> {
    vec![
        "-i".into(),
        format!("HOME={}", home.display()),
        format!(
            "PATH={}/.local/bin:/usr/local/bin:/usr/bin:/bin",
            home.display()
        ),
    ]
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
