//! Every file a run writes is refused before the run when it cannot be
//! written: a typo in `--json` costs a second, not the minutes of load whose
//! figures it would have held. The error is one line, whatever
//! `RUST_BACKTRACE` says.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_sim-clients");

/// `sim-clients ARGS` with backtraces asked for, as many shells have them.
fn sim_clients(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run sim-clients")
}

/// Refused before any load: no report on stdout, the path named, no backtrace.
fn refused_before_the_run(out: &Output, path: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("cannot write") && stderr.contains(path),
        "{stderr}"
    );
    assert!(!stderr.contains("backtrace"), "one line: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "no run, so no report: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_run_and_a_sweep_refuse_an_output_they_cannot_write_before_any_load() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir");
    // Nothing is ever sent: 127.0.0.1:9, and the run would last a minute.
    let target = [
        "--target",
        "http://127.0.0.1:9",
        "--n",
        "1",
        "--duration",
        "60s",
    ];
    for flag in ["--json", "--series"] {
        let path = missing.join("run.out");
        let path = path.to_str().unwrap();
        refused_before_the_run(&sim_clients(&[&target[..], &[flag, path]].concat()), path);
    }
    for flag in ["--json", "--markdown"] {
        let path = missing.join("sweep.out");
        let path = path.to_str().unwrap();
        let args = [&["sweep"][..], &target[..], &[flag, path]].concat();
        refused_before_the_run(&sim_clients(&args), path);
    }
}
