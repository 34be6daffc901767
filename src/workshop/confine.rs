//! Confining a measured server to less CPU than the machine has: a few cores
//! (`taskset -c`) or a share of the CPU (a cgroup quota), to show that an
//! exercise's symptom and cure hold on a laptop with one core or with half the
//! speed of this one. Only the server is confined; the load that measures it is
//! not, so a slow driver cannot pass for a slow server.
//!
//! The quota is a cgroup of our own (`simulator_service::platform::cgroup`: v2 `cpu.max` where the
//! unified hierarchy has the cpu controller, else v1's `cpu.cfs_quota_us`), made
//! for one server, entered by the server's shell wrapper before it execs (so the
//! runtime sizes itself inside it), and removed when the server ends. It needs
//! root; without it the error says so.

use std::process::Command;

use anyhow::bail;

use simulator_service::os::{CpuGroup, CpuMax};

/// Where to confine a server; nothing by default.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct Confinement {
    /// Run the measured servers on these CPUs only (`taskset -c LIST`, e.g. `0`).
    #[arg(long, value_name = "LIST")]
    pub server_cpus: Option<String>,
    /// Cap the measured servers' CPU at this many cores through a cgroup quota
    /// (e.g. `0.5`: half a core; needs root).
    #[arg(long, value_name = "CORES", value_parser = parse_cores)]
    pub server_cpu_quota: Option<f64>,
}

fn parse_cores(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(c) if (0.01..=1024.0).contains(&c) => Ok(c),
        _ => Err(format!(
            "`{text}` is not a number of cores from 0.01 to 1024"
        )),
    }
}

/// A cgroup made for one server, removed on drop.
pub type Cgroup = simulator_service::os::OwnCpuGroup;

impl Confinement {
    pub fn is_none(&self) -> bool {
        self == &Self::default()
    }

    /// `machine` as a server confined so would see it: the CPUs of
    /// `--server-cpus`, and a quota no looser than `--server-cpu-quota`.
    pub fn applied_to(&self, machine: &simulator_api::Machine) -> simulator_api::Machine {
        let mut confined = machine.clone();
        if let Some(list) = &self.server_cpus {
            confined.affinity_cpus = simulator_service::os::count_cpu_list(list).max(1);
        }
        if let Some(quota) = self.server_cpu_quota {
            confined.cpu_quota_cores =
                Some(machine.cpu_quota_cores.map_or(quota, |q| q.min(quota)));
        }
        confined
    }

    /// How the pages and reports name it: `2 cores`, `CPU 0 only`, `0.5 cores`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(cpus) = &self.server_cpus {
            parts.push(format!("server on CPU {cpus} only"));
        }
        if let Some(quota) = self.server_cpu_quota {
            parts.push(format!("server capped at {quota} cores (cgroup quota)"));
        }
        if parts.is_empty() {
            parts.push("server on the whole machine".into());
        }
        parts.join(", ")
    }

    /// The command that runs `program` with `args` confined, and the cgroup it
    /// enters (kept alive as long as the server runs).
    pub fn command(
        &self,
        program: &std::path::Path,
        args: &[&str],
    ) -> anyhow::Result<(Command, Option<Cgroup>)> {
        let mut words: Vec<String> = Vec::new();
        if let Some(cpus) = &self.server_cpus {
            words.extend(["taskset".into(), "-c".into(), cpus.clone()]);
        }
        words.push(program.display().to_string());
        words.extend(args.iter().map(|a| (*a).to_owned()));
        let cgroup = self.server_cpu_quota.map(make_cgroup).transpose()?;
        let command = match &cgroup {
            None => {
                let mut c = Command::new(&words[0]);
                c.args(&words[1..]);
                c
            }
            Some(group) => {
                // The shell enters the group, then becomes the server.
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg("echo $$ > \"$0\" && exec \"$@\"")
                    .arg(group.procs_file())
                    .args(&words);
                c
            }
        };
        Ok((command, cgroup))
    }
}

/// The period of the quota `--server-cpu-quota` gives: 10 ms, where the kernel's
/// usual 100 ms would stop the server for tens of milliseconds at a time
/// (`fit.rs` says what that does to an exercise).
pub const QUOTA_PERIOD_US: u64 = 10_000;

/// A new cgroup with a CPU quota of `cores` per [`QUOTA_PERIOD_US`], at the top of the
/// hierarchy that has the cpu controller (v2 where the root hands it down, else v1).
fn make_cgroup(cores: f64) -> anyhow::Result<Cgroup> {
    let quota_us = (cores * QUOTA_PERIOD_US as f64).round().max(1_000.0) as u64;
    let name = format!("isim-confine-{}-{}", std::process::id(), next_id());
    let Some(root) = CpuGroup::root() else {
        bail!("no cgroup cpu controller here (neither v2's cpu.max nor v1's cpu.cfs_quota_us): cannot cap the server's CPU");
    };
    let max = CpuMax {
        quota_us: Some(quota_us),
        period_us: QUOTA_PERIOD_US,
    };
    Cgroup::under(&root, &name, max).map_err(|e| anyhow::anyhow!("{e} (a CPU quota needs root)"))
}

fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
