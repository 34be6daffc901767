//! The kit (`tools/kit`), served by the room and installed on a laptop that
//! reaches nothing but the room (tier C, `tools/kit-try`): a fresh Debian root
//! filesystem in a network namespace with only its loopback, a user of its
//! own, the room's printed install line, the installed `doctor` with the
//! room's line, and the room's board saying the laptop is ready with a short
//! count that agreed; and a copy on a stick whose archive lost a byte,
//! refused. The kit here is the test build's own binaries (`tools/kit
//! --from-build`): making the release kit takes minutes of builds, which
//! docs/workshop/reference.md's "The kit in full" measures by hand; its installer,
//! sums and room are the same ones.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{skip_or_fail, BIN};

/// The programs the test needs beyond the build: the namespace's and the kit's.
const NEEDS: [&str; 7] = [
    "ip",
    "curl",
    "sha256sum",
    "tar",
    "gzip",
    "readelf",
    "mmdebstrap",
];

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

    // The laptop: a fresh Debian root filesystem in a network namespace with
    // only its loopback, where a room serves the kit (tools/kit-try). Debian 12,
    // since the kit holds this machine's own build.
    let tried = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/kit-try"))
        .arg(&kit)
        .env("KIT_TRY_SUITE", "bookworm")
        .output()
        .unwrap();
    let said = common::stdout_of_success(&tried);
    for line in [
        "kit-try: the room says: curl -fsS http://127.0.0.1:7900/kit/install.sh | sh",
        "install: its SHA-256 matches the kit's",
        "ready: a short count agreed",
        "the room's board shows it",
        "kit-try: the board shows laptop-1 ready",
    ] {
        assert!(said.contains(line), "{line:?} in:\n{said}");
    }
    let times = said
        .lines()
        .find(|l| l.starts_with("kit-try: installed in"))
        .unwrap_or_else(|| panic!("the times in:\n{said}"));
    eprintln!("{times}");
}

/// A laptop's shell: an empty environment but `PATH` with `~/.local/bin` first and `HOME`.
fn laptop_shell(home: &Path, line: &str) -> Command {
    let mut command = Command::new("env");
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
