//! The machine the server runs on, as far as an exercise depends on it: the cores
//! it may use, a CPU quota a cgroup puts on it, the timer's tick and how late it
//! wakes, and the calibrated cost of the CPU work. `/stats.machine` and the start
//! banner show it, so a figure that differs from a page's can be read against the
//! machine that made it.
//!
//! The quota is read from the cgroup files (`crate::platform::cgroup`): the standard
//! library folds it into `available_parallelism` but rounds it to whole cores.

use std::time::Duration;

use simulator_api::{Machine, Settings};

/// tokio's timer tick: every sleep ends on a whole millisecond.
pub const TOKIO_TICK: Duration = Duration::from_millis(1);

/// The cores this process may run on: its CPU affinity and any cgroup quota,
/// rounded up to a whole core (at least 1), as the runtime sizes its workers.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The CPUs the kernel has online, blind to this process's affinity and quota:
/// what a service that counts `/proc/cpuinfo`'s processors sizes its pools to
/// (the cores the process may use where the file is missing).
pub fn host_cpus() -> usize {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|text| {
            text.lines()
                .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
                .count()
        })
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or_else(cores)
}

/// The CPUs this process's affinity allows (`Cpus_allowed_list` in
/// `/proc/self/status`, e.g. `0-3,6`), whatever its quota; the cores it may use
/// where the file is missing.
pub fn affinity_cpus() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let list = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
            Some(count_cpu_list(list.trim()))
        })
        .filter(|&n| n > 0)
        .unwrap_or_else(cores)
}

/// CPUs in a kernel CPU list (as `taskset -c` takes it): `0-3,6` is 5.
pub fn count_cpu_list(list: &str) -> usize {
    list.split(',')
        .filter_map(|part| match part.split_once('-') {
            Some((a, b)) => {
                Some(b.trim().parse::<usize>().ok()? + 1 - a.trim().parse::<usize>().ok()?)
            }
            None => part.trim().parse::<usize>().ok().map(|_| 1),
        })
        .sum()
}

/// The threads (or works at once) `size` comes to on this machine.
pub fn pool_size(size: simulator_api::settings::PoolSize) -> usize {
    size.resolve(host_cpus(), cpu_quota_cores(), cores())
}

/// The CPU a cgroup quota allows this process, in cores, where one is set (the
/// tightest of its group and the groups above it).
pub fn cpu_quota_cores() -> Option<f64> {
    crate::platform::cgroup::tightest_quota_cores()
}

/// `/stats.cpu_cgroup`: the group this process's CPU is accounted in now, its
/// limit and its `cpu.stat`; `None` where no cgroup cpu controller is mounted.
pub fn cpu_cgroup() -> Option<simulator_api::CpuCgroup> {
    let group = crate::platform::cgroup::CpuGroup::of_this_process()?;
    let max = group.cpu_max();
    let stat = group.cpu_stat().unwrap_or_default();
    let own = format!("isim-serve-{}", std::process::id());
    Some(simulator_api::CpuCgroup {
        path: group.dir().display().to_string(),
        made_by_server: group.dir().file_name().is_some_and(|n| n == own.as_str()),
        quota_us: max.and_then(|m| m.quota_us),
        period_us: max.map_or(0, |m| m.period_us),
        quota_cores: cpu_quota_cores(),
        periods: stat.periods,
        throttled_periods: stat.throttled_periods,
        throttled_us: stat.throttled_us,
    })
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
        affinity_cpus: affinity_cpus(),
        cpu_quota_cores: cpu_quota_cores(),
        timer_tick_us: TOKIO_TICK.as_micros() as u64,
        timer_overshoot_us: timer_overshoot.as_micros() as u64,
        zstd_bytes_per_cpu_s: work.zstd_bytes_per_cpu_s,
        work_bytes: work.work_bytes,
        os: crate::platform::os::NAME.to_owned(),
        os_lacks: crate::platform::os::lacks(),
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
    fn a_cpu_list_counts_its_ranges_and_singles() {
        assert_eq!(count_cpu_list("0-1"), 2);
        assert_eq!(count_cpu_list("0"), 1);
        assert_eq!(count_cpu_list("0-3,6,8-9"), 7);
        assert_eq!(count_cpu_list("garbage"), 0);
        assert!(affinity_cpus() >= 1);
    }
}
