//! `sim-clients merge` and the sharding flags as a user meets them: the real
//! binary, refusing what would make a wrong total with a clear error and exit
//! status 1 (and no panic), reading shards from the job engines' variables.
//! The reports merged here are written by `sim-clients` itself against a port
//! nothing listens on, so every request fails fast and the figures are known.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_sim-clients");

/// A port on 127.0.0.1 that refuses connections: bound, then closed.
fn dead_target() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

fn sim_clients(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_PROCID")
        .env_remove("SLURM_NTASKS")
        .env_remove("NOMAD_ALLOC_INDEX")
        .envs(env.iter().copied())
        .output()
        .expect("run sim-clients")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs one shard for 300 ms against `target` (a dead port) and returns its
/// report's path.
fn shard_report(
    target: &str,
    dir: &Path,
    name: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> PathBuf {
    let path = dir.join(name);
    let mut args = vec![
        "--target",
        target,
        "--n",
        "4",
        "--think-time",
        "50ms",
        "--duration",
        "300ms",
        "--json",
        path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = sim_clients(&args, env);
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

fn report(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn merge_refuses_duplicates_other_runs_and_garbage_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let target = dead_target();
    let a = shard_report(
        &target,
        dir.path(),
        "a.json",
        &["--shard", "0/2", "--run-id", "r1"],
        &[],
    );
    let b = shard_report(
        &target,
        dir.path(),
        "b.json",
        &["--shard", "1/2", "--run-id", "r2"],
        &[],
    );
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{\"requests_sent\": 1}").unwrap();
    let cases: [(&[&Path], &str); 3] = [
        (&[&a, &a], "both shard 0"),
        (&[&a, &b], "run_id"),
        (&[&a, &garbage], "not a sim-clients report"),
    ];
    for (files, why) in cases {
        let mut args = vec!["merge"];
        args.extend(files.iter().map(|p| p.to_str().unwrap()));
        let out = sim_clients(&args, &[]);
        assert_eq!(out.status.code(), Some(1), "{why}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{why} not in {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
    // A merged report is not a shard.
    let merged = dir.path().join("merged.json");
    let ok = sim_clients(
        &[
            "merge",
            a.to_str().unwrap(),
            "--json",
            merged.to_str().unwrap(),
        ],
        &[],
    );
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(
        stderr(&ok).contains("merged 1 of 2 shards; missing shard 1"),
        "{}",
        stderr(&ok)
    );
    let again = sim_clients(&["merge", merged.to_str().unwrap()], &[]);
    assert!(stderr(&again).contains("merged report already"));
}

#[test]
fn the_engines_variables_name_the_shard_and_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let target = dead_target();
    let slurm = shard_report(
        &target,
        dir.path(),
        "slurm.json",
        &[],
        &[
            ("SLURM_PROCID", "2"),
            ("SLURM_NTASKS", "3"),
            ("SLURM_JOB_ID", "4711"),
        ],
    );
    let r = report(&slurm);
    assert_eq!(r["shard"]["index"], 2);
    assert_eq!(r["shard"]["count"], 3);
    assert_eq!(r["shard"]["source"], "slurm");
    assert_eq!(r["run_id"], "4711");
    assert_eq!(r["clients"], 4, "the global client count");
    // Shard 2 of 3 of 4 clients runs client 2 only: 300 ms of 50 ms think time.
    let sent = r["requests_sent"].as_u64().unwrap();
    assert!((1..=7).contains(&sent), "{sent}");

    let k8s = shard_report(
        &target,
        dir.path(),
        "k8s.json",
        &["--shards", "4"],
        &[("JOB_COMPLETION_INDEX", "3")],
    );
    assert_eq!(report(&k8s)["shard"]["source"], "kubernetes");

    let missing = sim_clients(
        &["--target", &target, "--duration", "100ms"],
        &[("JOB_COMPLETION_INDEX", "1")],
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("--shards N"),
        "{}",
        stderr(&missing)
    );
    let too_many = sim_clients(
        &[
            "--target",
            &target,
            "--n",
            "2",
            "--shard",
            "3/4",
            "--duration",
            "100ms",
        ],
        &[],
    );
    assert!(
        stderr(&too_many).contains("has none"),
        "{}",
        stderr(&too_many)
    );
    let unseeded = sim_clients(
        &[
            "--target",
            &target,
            "--rate",
            "10",
            "--arrivals",
            "poisson",
            "--shard",
            "0/2",
            "--duration",
            "100ms",
        ],
        &[],
    );
    assert!(
        stderr(&unseeded).contains("--seed"),
        "{}",
        stderr(&unseeded)
    );
}
