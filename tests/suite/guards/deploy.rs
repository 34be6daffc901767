//! The deployment examples in deploy/ checked offline, since no cluster is at
//! hand: the Kubernetes manifests validated against the Kubernetes schema
//! (kubernetes-validate, from PyPI, which ships the schemas), their pieces
//! checked against each other (completions, parallelism and --shards; the metrics
//! port everywhere it is named; the reports volume), and every sim-clients
//! command line in them, the Slurm batch script's included, run through
//! sim-clients' own flag parser with the engine's variables as the engine sets
//! them. A flag renamed in sim-clients fails here before it fails in a cluster.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use common::{have, skip_or_fail};
use simulator_clients::cli::Args;
use simulator_clients::ShardSource;
use yaml_rust2::{Yaml, YamlLoader};

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(path)
}

fn documents(path: &str) -> Vec<Yaml> {
    let text = std::fs::read_to_string(deploy(path)).unwrap();
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn of_kind<'a>(docs: &'a [Yaml], kind: &str) -> &'a Yaml {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind))
        .unwrap_or_else(|| panic!("no {kind} in the manifest"))
}

fn int(y: &Yaml) -> i64 {
    y.as_i64()
        .unwrap_or_else(|| panic!("not an integer: {y:?}"))
}

fn parse(words: &[String]) -> Args {
    let mut argv = vec!["sim-clients".to_owned()];
    argv.extend_from_slice(words);
    Args::try_parse_from(&argv).unwrap_or_else(|e| panic!("sim-clients {words:?}:\n{e}"))
}

/// `$(NAME)` in a container argument, expanded as Kubernetes does from `vars`.
fn expand(arg: &str, vars: &[(&str, &str)]) -> String {
    vars.iter()
        .fold(arg.to_owned(), |a, (k, v)| a.replace(&format!("$({k})"), v))
}

#[test]
fn the_indexed_job_runs_one_shard_a_pod_with_flags_sim_clients_accepts() {
    let docs = documents("kubernetes/sim-clients-job.yaml");
    let job = of_kind(&docs, "Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let completions = int(&spec["completions"]);
    assert_eq!(int(&spec["parallelism"]), completions, "all shards at once");
    let pod = &spec["template"];
    let container = &pod["spec"]["containers"][0];
    assert_eq!(container["command"][0].as_str(), Some("sim-clients"));

    let env: Vec<(&str, &str)> = container["env"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(|e| Some((e["name"].as_str()?, e["value"].as_str()?)))
        .collect();
    let start_at = "2026-11-22T20:00:00Z";
    let args: Vec<String> = container["args"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|a| {
            let with_env = expand(a.as_str().unwrap(), &env);
            with_env.replace("START_AT_PLACEHOLDER", start_at)
        })
        .collect();
    let parsed = parse(&args);
    assert_eq!(
        i64::from(parsed.sharding.shards.unwrap()),
        completions,
        "--shards"
    );
    for k in [0, completions - 1] {
        let index = k.to_string();
        let plan = parsed
            .plan_in(|var| (var == "JOB_COMPLETION_INDEX").then(|| index.clone()))
            .unwrap();
        let shard = plan.shard.unwrap();
        assert_eq!(
            (i64::from(shard.index), i64::from(shard.count), shard.source),
            (k, completions, ShardSource::Kubernetes)
        );
        assert_eq!(plan.run_id.as_deref(), Some(start_at));
    }
    // The index is named where $(JOB_COMPLETION_INDEX) could use it.
    assert!(container["env"]
        .as_vec()
        .unwrap()
        .iter()
        .any(|e| e["name"].as_str() == Some("JOB_COMPLETION_INDEX")));

    // One metrics port, wherever it is named.
    let port = parsed.metrics_listen.expect("--metrics-listen").port();
    assert_eq!(
        int(&container["ports"][0]["containerPort"]),
        i64::from(port)
    );
    let service = of_kind(&docs, "Service");
    assert_eq!(int(&service["spec"]["ports"][0]["port"]), i64::from(port));
    assert_eq!(service["spec"]["clusterIP"].as_str(), Some("None"));
    assert_eq!(
        pod["metadata"]["annotations"]["prometheus.io/port"].as_str(),
        Some(port.to_string().as_str())
    );
    let scrape = std::fs::read_to_string(deploy("prometheus/scrape-shards.yml")).unwrap();
    assert!(
        scrape.contains(&format!("port: {port}")),
        "scrape-shards.yml"
    );
    assert!(
        scrape.contains("sim-clients-shards."),
        "scrape-shards.yml names the Service"
    );

    // The reports go to the volume the merge Job reads.
    let mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
    let json = parsed.json.expect("--json");
    assert!(json.starts_with(mount), "{} under {mount}", json.display());
    assert!(
        json.to_string_lossy().contains("{shard}"),
        "a file per shard"
    );
    let merge_docs = documents("kubernetes/merge-job.yaml");
    let merge = &of_kind(&merge_docs, "Job")["spec"]["template"]["spec"];
    assert_eq!(
        merge["containers"][0]["volumeMounts"][0]["mountPath"].as_str(),
        Some(mount)
    );
    assert_eq!(
        merge["volumes"][0]["persistentVolumeClaim"]["claimName"],
        pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
    );
    let line = merge["containers"][0]["args"][0].as_str().unwrap();
    parse(&shlex::split(line).unwrap()[1..]);
}

#[test]
fn the_manifests_pass_the_kubernetes_schema() {
    if !have("kubernetes-validate") {
        skip_or_fail("kubernetes-validate not installed (pip install kubernetes-validate)");
        return;
    }
    let validate = |files: &[PathBuf]| {
        Command::new("kubernetes-validate")
            .arg("--strict")
            .args(files)
            .output()
            .expect("run kubernetes-validate")
    };
    let ours = [
        deploy("kubernetes/sim-clients-job.yaml"),
        deploy("kubernetes/merge-job.yaml"),
    ];
    let out = validate(&ours);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The validator does refuse a broken Job: completions must be an integer.
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.yaml");
    let text = std::fs::read_to_string(&ours[0]).unwrap();
    std::fs::write(&broken, text.replace("completions: 4", "completions: four")).unwrap();
    assert!(!validate(&[broken]).status.success());
}

/// The `srun sim-clients ...` and `sim-clients merge ...` command lines of the
/// batch script, continuation lines joined, variables set as Slurm would.
fn batch_commands(script: &str, vars: &[(&str, &str)]) -> Vec<Vec<String>> {
    let joined = script.replace("\\\n", " ");
    joined
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("srun sim-clients") || l.starts_with("sim-clients"))
        .map(|l| {
            let expanded = vars
                .iter()
                .fold(l.to_owned(), |l, (k, v)| l.replace(&format!("${k}"), v));
            let words = shlex::split(&expanded).expect("shell words");
            let from = words.iter().position(|w| w == "sim-clients").unwrap() + 1;
            words[from..].to_vec()
        })
        .collect()
}

#[test]
fn the_slurm_script_runs_a_shard_a_task_with_flags_sim_clients_accepts() {
    let path = deploy("slurm/sim-clients.sbatch");
    let status = Command::new("bash").arg("-n").arg(&path).status().unwrap();
    assert!(status.success(), "bash -n {}", path.display());
    let script = std::fs::read_to_string(&path).unwrap();
    let ntasks: String = script
        .lines()
        .find_map(|l| l.strip_prefix("#SBATCH --ntasks="))
        .expect("#SBATCH --ntasks=N")
        .to_owned();
    let vars = [
        ("TARGET", "http://127.0.0.1:7878"),
        ("REPORTS", "/shared/reports/77"),
        ("START_AT", "2026-11-22T20:00:00Z"),
    ];
    let commands = batch_commands(&script, &vars);
    assert_eq!(
        commands.len(),
        2,
        "srun sim-clients, then sim-clients merge"
    );
    let run = parse(&commands[0]);
    let plan = run
        .plan_in(|var| match var {
            "SLURM_PROCID" => Some("1".into()),
            "SLURM_NTASKS" => Some(ntasks.clone()),
            "SLURM_JOB_ID" => Some("77".into()),
            _ => None,
        })
        .unwrap();
    let shard = plan.shard.unwrap();
    assert_eq!(
        (shard.index, shard.count.to_string(), shard.source),
        (1, ntasks.clone(), ShardSource::Slurm)
    );
    assert_eq!(
        plan.run_id.as_deref(),
        Some("77"),
        "SLURM_JOB_ID names the run"
    );
    assert!(plan.start_at.is_some());
    let merge = parse(&commands[1]);
    assert!(
        matches!(
            merge.command,
            Some(simulator_clients::cli::Command::Merge(_))
        ),
        "the last command merges"
    );
}

/// Every `sim-clients` command line in docs/scale-out.md's shell blocks, joined
/// and with its shell variables set to sample values.
fn doc_commands() -> Vec<Vec<String>> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scale-out.md"))
            .unwrap();
    let vars = [
        ("$((k + 2))", "2"),
        ("$k", "0"),
        ("$AT", "2026-11-22T20:00:00Z"),
    ];
    let mut commands = Vec::new();
    let mut in_shell = false;
    for line in text.replace("\\\n", " ").lines() {
        if line.starts_with("```") {
            in_shell = line == "```sh";
            continue;
        }
        if !in_shell {
            continue;
        }
        let line = vars
            .iter()
            .fold(line.to_owned(), |l, (k, v)| l.replace(k, v));
        let line = line.split(['>', '&', ';', '|']).next().unwrap();
        let words = shlex::split(line).expect("shell words");
        let program = |w: &String| w == "sim-clients" || w.ends_with("release/sim-clients");
        if let Some(at) = words.iter().position(program) {
            commands.push(words[at + 1..].to_vec());
        }
    }
    commands
}

#[test]
fn the_command_lines_in_the_scale_out_guide_parse() {
    let commands = doc_commands();
    assert!(commands.len() >= 3, "found {commands:?}");
    for words in &commands {
        let args = parse(words);
        if args.command.is_none() {
            args.plan_in(|_| None)
                .unwrap_or_else(|e| panic!("sim-clients {words:?}: {e}"));
        }
    }
}
