//! The machine the server runs on, as far as an exercise depends on it: the cores
//! it may use, a CPU quota a cgroup puts on it, the timer's tick and how late it
//! wakes, and the calibrated cost of the CPU work. `/stats.machine` and the start
//! banner show it, so a figure that differs from a page's can be read against the
//! machine that made it.
//!
//! The quota is read by hand from the cgroup files (v2 `cpu.max`, v1
//! `cpu.cfs_quota_us` / `cpu.cfs_period_us`): the standard library folds it into
//! `available_parallelism` but rounds it to whole cores, and half a core is the
//! case an exercise must name. No crate in the project's set reads it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use simulator_api::{Machine, Settings};

/// tokio's timer tick: every sleep ends on a whole millisecond.
pub const TOKIO_TICK: Duration = Duration::from_millis(1);

/// The cores this process may run on: its CPU affinity and any cgroup quota,
/// rounded up to a whole core (at least 1), as the runtime sizes its workers.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The CPU a cgroup quota allows this process, in cores, where one is set.
pub fn cpu_quota_cores() -> Option<f64> {
    let table = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    quota_from(&table, Path::new("/sys/fs/cgroup"))
}

/// The quota for the cgroups named in `/proc/self/cgroup`'s `table`, read below
/// `root`: v2's `cpu.max` (`max 100000` or `50000 100000`), else v1's cpu
/// controller. The tightest of the process's group and its parents counts.
fn quota_from(table: &str, root: &Path) -> Option<f64> {
    let mut found: Option<f64> = None;
    let mut keep = |q: Option<f64>| {
        if let Some(q) = q {
            found = Some(found.map_or(q, |f: f64| f.min(q)));
        }
    };
    for line in table.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.is_empty() {
            for dir in ancestors(&root.join(path), root) {
                keep(read_v2(&dir.join("cpu.max")));
            }
        } else if controllers.split(',').any(|c| c == "cpu") {
            for mount in [root.join(controllers), root.join("cpu")] {
                for dir in ancestors(&mount.join(path), &mount) {
                    keep(read_v1(&dir));
                }
            }
        }
    }
    found
}

/// `dir` and its parents up to `top`, inclusive.
fn ancestors(dir: &Path, top: &Path) -> Vec<PathBuf> {
    dir.ancestors()
        .take_while(|d| d.starts_with(top))
        .map(Path::to_path_buf)
        .collect()
}

fn read_v2(file: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut words = text.split_whitespace();
    let quota: f64 = words.next()?.parse().ok()?;
    let period: f64 = words.next()?.parse().ok()?;
    (period > 0.0).then(|| quota / period)
}

fn read_v1(dir: &Path) -> Option<f64> {
    let read = |name: &str| -> Option<f64> {
        std::fs::read_to_string(dir.join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let quota = read("cpu.cfs_quota_us")?;
    let period = read("cpu.cfs_period_us")?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// The CPU work's cost on this machine, as the request path calibrated it
/// (`request_path::work::figures`); handed in, so that `observe` reads nothing of
/// the request path.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WorkFigures {
    pub zstd_bytes_per_cpu_s: Option<f64>,
    pub work_bytes: Option<u64>,
}

/// `/stats.machine`: this machine, its timer's lateness and the work's cost.
pub fn snapshot(timer_overshoot: Duration, work: WorkFigures) -> Machine {
    Machine {
        cores: cores(),
        cpu_quota_cores: cpu_quota_cores(),
        timer_tick_us: TOKIO_TICK.as_micros() as u64,
        timer_overshoot_us: timer_overshoot.as_micros() as u64,
        zstd_bytes_per_cpu_s: work.zstd_bytes_per_cpu_s,
        work_bytes: work.work_bytes,
    }
}

/// The banner's line about the machine: cores, quota, timer, and the work's
/// calibration where the scenario has CPU work.
pub fn banner(settings: &Settings, machine: &Machine) -> String {
    let mut line = format!(
        "machine: {} core{}",
        machine.cores,
        if machine.cores == 1 { "" } else { "s" }
    );
    if let Some(quota) = machine.cpu_quota_cores {
        line.push_str(&format!(" (cgroup CPU quota {quota:.2} cores)"));
    }
    line.push_str(&format!(
        ", timer tick {} ms",
        machine.timer_tick_us as f64 / 1e3
    ));
    if let (Some(rate), Some(bytes)) = (machine.zstd_bytes_per_cpu_s, machine.work_bytes) {
        let cost = match settings.work_cpu.is_zero() {
            true => format!(
                "work_bytes pinned: {:.1} ms of CPU",
                bytes as f64 / rate * 1e3
            ),
            false => format!("work_cpu {}", humantime::format_duration(settings.work_cpu)),
        };
        line.push_str(&format!(
            "; zstd {:.0} MB per CPU second here, so one work = {:.2} MiB ({cost})",
            rate / 1e6,
            bytes as f64 / f64::from(1 << 20)
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_is_read_from_cgroup_v2_and_v1_and_the_tightest_counts() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("box/inner")).unwrap();
        std::fs::write(r.join("box/cpu.max"), "150000 100000\n").unwrap();
        std::fs::write(r.join("box/inner/cpu.max"), "max 100000\n").unwrap();
        assert_eq!(quota_from("0::/box/inner\n", r), Some(1.5));
        std::fs::write(r.join("box/inner/cpu.max"), "50000 100000\n").unwrap();
        assert_eq!(quota_from("0::/box/inner\n", r), Some(0.5));
        assert_eq!(quota_from("0::/elsewhere\n", r), None);

        std::fs::create_dir_all(r.join("cpu/job")).unwrap();
        std::fs::write(r.join("cpu/job/cpu.cfs_quota_us"), "25000\n").unwrap();
        std::fs::write(r.join("cpu/job/cpu.cfs_period_us"), "100000\n").unwrap();
        std::fs::write(r.join("cpu/cpu.cfs_quota_us"), "-1\n").unwrap();
        std::fs::write(r.join("cpu/cpu.cfs_period_us"), "100000\n").unwrap();
        assert_eq!(quota_from("4:memory:/x\n1:cpu:/job\n", r), Some(0.25));
        assert_eq!(quota_from("1:cpu:/\n", r), None, "-1 is no quota");
        assert_eq!(quota_from("garbage\n\n", r), None);
    }
}
