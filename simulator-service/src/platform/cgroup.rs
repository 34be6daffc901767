//! CPU cgroups: the one a scenario's world puts the server in (`cpu_quota` per
//! `cpu_period`, a container's CPU limit), made at start and entered by the whole
//! process; the ones `workshop` makes to confine a measured server; and reading
//! any of them back: the limit (`cpu.max` in cgroup v2, `cpu.cfs_quota_us` and
//! `cpu.cfs_period_us` in v1) and what the kernel did with it (`cpu.stat`:
//! periods, throttled periods, throttled time), for `/stats`, `/metrics`, the
//! work's pacing and `workshop check`.
//!
//! Linux's alone: elsewhere [`CpuGroup::of_this_process`] and
//! [`CpuGroup::root`] find no group, and [`ServerGroup::enter`] says the OS has
//! none, so a world with a CPU limit refuses to start there with that reason.
//!
//! Written by hand: no crate in the project's set manages cgroups, and this is a
//! handful of file reads and writes. The standard library folds a quota into
//! `available_parallelism` but rounds it to whole cores, and half a core is the
//! case an exercise must name.
//!
//! Where a group is made: under the cgroup the process is in, so an outer limit
//! (a container, a `workshop --server-cpu-quota` confinement) still holds. In v1
//! any cgroup may have children with limits. In v2 a cgroup other than the root
//! may give its children the cpu controller only while it holds no process
//! itself (the "no internal processes" rule): the server first moves into its new
//! child, then enables `+cpu` for its parent; that works at the root (root) and
//! in a delegated scope the server has to itself (`systemd-run --user --scope -p
//! Delegate=yes`), and fails, with the commands that would work, elsewhere.

use std::path::{Path, PathBuf};

/// Where the cgroup file systems are mounted.
pub const ROOT: &str = "/sys/fs/cgroup";

/// A CPU limit: `quota_us` of CPU time per `period_us` (`None`: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuMax {
    pub quota_us: Option<u64>,
    pub period_us: u64,
}

impl CpuMax {
    /// The limit in cores (`None`: none).
    pub fn cores(&self) -> Option<f64> {
        self.quota_us
            .filter(|_| self.period_us > 0)
            .map(|q| q as f64 / self.period_us as f64)
    }

    /// As the kernel's v2 file takes it: `50000 100000`, `max 100000`.
    fn v2_text(&self) -> String {
        match self.quota_us {
            Some(q) => format!("{q} {}", self.period_us),
            None => format!("max {}", self.period_us),
        }
    }

    /// As people say it: `50ms per 100ms (0.50 cores)`, `no limit`.
    pub fn describe(&self) -> String {
        match (self.quota_us, self.cores()) {
            (Some(q), Some(cores)) => format!(
                "{} per {} ({cores:.2} cores)",
                us_text(q),
                us_text(self.period_us)
            ),
            _ => "no limit".into(),
        }
    }
}

fn us_text(us: u64) -> String {
    humantime::format_duration(std::time::Duration::from_micros(us)).to_string()
}

/// What the kernel's bandwidth control did to a group since it was made
/// (`cpu.stat`): periods that had runnable threads, periods in which the group
/// ran out of quota, and the time its threads waited for the next period, summed
/// over the CPUs they waited on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuStat {
    pub periods: u64,
    pub throttled_periods: u64,
    pub throttled_us: u64,
}

impl CpuStat {
    /// `cpu.stat`'s text, v2 (`throttled_usec`) or v1 (`throttled_time`, ns).
    fn parse(text: &str) -> Option<Self> {
        let mut stat = CpuStat::default();
        let mut seen = false;
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some(key), Some(value)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(value) = value.parse::<u64>() else {
                continue;
            };
            match key {
                "nr_periods" => {
                    stat.periods = value;
                    seen = true;
                }
                "nr_throttled" => stat.throttled_periods = value,
                "throttled_usec" => stat.throttled_us = value,
                "throttled_time" => stat.throttled_us = value / 1_000,
                _ => {}
            }
        }
        seen.then_some(stat)
    }

    /// What happened between `earlier` and this reading.
    pub fn since(&self, earlier: &CpuStat) -> CpuStat {
        CpuStat {
            periods: self.periods.saturating_sub(earlier.periods),
            throttled_periods: self
                .throttled_periods
                .saturating_sub(earlier.throttled_periods),
            throttled_us: self.throttled_us.saturating_sub(earlier.throttled_us),
        }
    }
}

/// A cgroup directory with the cpu controller's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuGroup {
    dir: PathBuf,
    v2: bool,
}

impl CpuGroup {
    /// The cgroup this process's CPU is accounted in now, where one is mounted.
    pub fn of_this_process() -> Option<Self> {
        if !super::os::HAS_CGROUPS {
            return None;
        }
        let table = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        Self::from_table(&table, Path::new(ROOT))
    }

    /// The group named for the cpu controller in a `/proc/PID/cgroup` `table`,
    /// below `root`: v1's `cpu` hierarchy where one is mounted, else v2's.
    fn from_table(table: &str, root: &Path) -> Option<Self> {
        let mut v2 = None;
        for line in table.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(controllers), Some(path)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let path = path.trim_start_matches('/');
            if controllers.is_empty() {
                v2 = Some(root.join(path));
            } else if controllers.split(',').any(|c| c == "cpu") {
                for mount in [root.join(controllers), root.join("cpu")] {
                    if mount.join("cpu.cfs_period_us").exists() {
                        return Some(Self {
                            dir: mount.join(path),
                            v2: false,
                        });
                    }
                }
            }
        }
        v2.map(|dir| Self { dir, v2: true })
    }

    /// The top of the hierarchy that has the cpu controller, where groups are
    /// made for a confined server: v2's root if its children can have the cpu
    /// controller, else v1's cpu mount.
    pub fn root() -> Option<Self> {
        if !super::os::HAS_CGROUPS {
            return None;
        }
        let root = Path::new(ROOT);
        let v2_has_cpu = std::fs::read_to_string(root.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|w| w == "cpu"));
        if v2_has_cpu {
            return Some(Self {
                dir: root.to_path_buf(),
                v2: true,
            });
        }
        ["cpu", "cpu,cpuacct"]
            .iter()
            .map(|m| root.join(m))
            .find(|m| m.join("cpu.cfs_quota_us").exists())
            .map(|dir| Self { dir, v2: false })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// This group's own limit (not its parents').
    pub fn cpu_max(&self) -> Option<CpuMax> {
        if self.v2 {
            let text = std::fs::read_to_string(self.dir.join("cpu.max")).ok()?;
            let mut words = text.split_whitespace();
            let quota = words.next()?;
            let period_us = words.next()?.parse().ok()?;
            let quota_us = match quota {
                "max" => None,
                q => Some(q.parse().ok()?),
            };
            Some(CpuMax {
                quota_us,
                period_us,
            })
        } else {
            let read = |name: &str| -> Option<i64> {
                std::fs::read_to_string(self.dir.join(name))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            };
            let period_us = u64::try_from(read("cpu.cfs_period_us")?).ok()?;
            let quota_us = u64::try_from(read("cpu.cfs_quota_us")?).ok();
            Some(CpuMax {
                quota_us,
                period_us,
            })
        }
    }

    /// What the kernel's bandwidth control did to this group.
    pub fn cpu_stat(&self) -> Option<CpuStat> {
        CpuStat::parse(&std::fs::read_to_string(self.dir.join("cpu.stat")).ok()?)
    }

    fn set_cpu_max(&self, max: CpuMax) -> Result<(), String> {
        let writes: Vec<(&str, String)> = if self.v2 {
            vec![("cpu.max", max.v2_text())]
        } else {
            // The period first: a quota is checked against the period in force.
            let quota = max.quota_us.map_or("-1".into(), |q| q.to_string());
            vec![
                ("cpu.cfs_period_us", max.period_us.to_string()),
                ("cpu.cfs_quota_us", quota),
            ]
        };
        for (file, value) in writes {
            write(&self.dir.join(file), &value)?;
        }
        Ok(())
    }

    /// Moves process `pid`, every thread of it, into this group.
    fn take(&self, pid: u32) -> Result<(), String> {
        write(&self.dir.join("cgroup.procs"), &pid.to_string())
    }

    fn child(&self, name: &str) -> Self {
        Self {
            dir: self.dir.join(name),
            v2: self.v2,
        }
    }

    fn parent(&self) -> Option<Self> {
        self.dir.parent().map(|p| Self {
            dir: p.to_path_buf(),
            v2: self.v2,
        })
    }
}

fn write(file: &Path, value: &str) -> Result<(), String> {
    std::fs::write(file, value)
        .map_err(|e| format!("cannot write {value} to {}: {e}", file.display()))
}

/// The tightest CPU quota over this process's group and its parents, in cores.
pub fn tightest_quota_cores() -> Option<f64> {
    let group = CpuGroup::of_this_process()?;
    tightest_from(&group, Path::new(ROOT))
}

fn tightest_from(group: &CpuGroup, top: &Path) -> Option<f64> {
    group
        .dir
        .ancestors()
        .take_while(|d| d.starts_with(top))
        .filter_map(|d| {
            CpuGroup {
                dir: d.to_path_buf(),
                v2: group.v2,
            }
            .cpu_max()?
            .cores()
        })
        .reduce(f64::min)
}

/// A cgroup this process made, with a CPU limit; removed on drop once empty
/// (whoever put a process in it moves it out or lets it end first).
#[derive(Debug)]
pub struct OwnCpuGroup {
    group: CpuGroup,
}

impl OwnCpuGroup {
    /// A new group `name` under `parent` limited to `max`.
    pub fn under(parent: &CpuGroup, name: &str, max: CpuMax) -> Result<Self, String> {
        let group = parent.child(name);
        std::fs::create_dir(&group.dir)
            .map_err(|e| format!("cannot make the cgroup {}: {e}", group.dir.display()))?;
        let made = OwnCpuGroup { group };
        made.group.set_cpu_max(max)?;
        Ok(made)
    }

    pub fn group(&self) -> &CpuGroup {
        &self.group
    }

    /// Where to write a pid to put its process in this group.
    pub fn procs_file(&self) -> PathBuf {
        self.group.dir.join("cgroup.procs")
    }
}

impl Drop for OwnCpuGroup {
    fn drop(&mut self) {
        // An empty cgroup is removed with rmdir; one still holding a process stays
        // until the next start sweeps it (`sweep_stale`).
        let _ = std::fs::remove_dir(&self.group.dir);
    }
}

/// The group the server runs in for a world with a CPU limit, kept for its life.
#[derive(Debug)]
pub struct ServerGroup {
    group: CpuGroup,
    /// The group this process made (`None`: it was already in one with the limit).
    made: Option<OwnCpuGroup>,
}

impl ServerGroup {
    /// Puts this whole process in a cgroup limited to `max`: its own, made under
    /// the one it is in, or the one it is in when that already has exactly `max`
    /// (`systemd-run --scope -p CPUQuota=...`, a container). Call before the
    /// process starts the work that should count against the limit.
    pub fn enter(max: CpuMax) -> Result<Self, String> {
        if !super::os::HAS_CGROUPS {
            return Err(format!(
                "a CPU limit is a Linux cgroup's, and this server runs on {}: not on this OS",
                super::os::NAME
            ));
        }
        let current = CpuGroup::of_this_process().ok_or_else(|| {
            "this machine has no cgroup cpu controller mounted (neither v2's cpu.max nor v1's cpu.cfs_quota_us under /sys/fs/cgroup)".to_owned()
        })?;
        if current.cpu_max() == Some(max) {
            return Ok(Self {
                group: current,
                made: None,
            });
        }
        sweep_stale(&current);
        let pid = std::process::id();
        let name = format!("isim-serve-{pid}");
        let group = current.child(&name);
        std::fs::create_dir(&group.dir)
            .map_err(|e| format!("cannot make the cgroup {}: {e}", group.dir.display()))?;
        let made = OwnCpuGroup {
            group: group.clone(),
        };
        let entered = group.take(pid).and_then(|()| {
            if current.v2 {
                // Now that this process has left `current`, it may hand the cpu
                // controller down (it holds no process of ours; others block it).
                enable_cpu_for_children(&current)?;
            }
            group.set_cpu_max(max)
        });
        if let Err(why) = entered {
            let _ = current.take(pid);
            let tighter = tightest_from(&current, Path::new(ROOT))
                .filter(|&above| max.cores().is_some_and(|want| above < want));
            return Err(match tighter {
                // cgroup v1 refuses a child more CPU than a group above it allows.
                Some(above) => format!(
                    "{why} (a group above this one allows only {above:.2} cores, less than {})",
                    max.describe()
                ),
                None => why,
            });
        }
        Ok(Self {
            group,
            made: Some(made),
        })
    }

    pub fn group(&self) -> &CpuGroup {
        &self.group
    }

    /// Whether the server made this group (else it found itself in one with the limit).
    pub fn made_here(&self) -> bool {
        self.made.is_some()
    }
}

impl Drop for ServerGroup {
    fn drop(&mut self) {
        // Back to the parent, so the group can go: possible in v1 and at v2's
        // root; elsewhere in v2 the parent may hold no process, and the group
        // stays for the next start to sweep.
        if self.made.is_some() {
            if let Some(parent) = self.group.parent() {
                let _ = parent.take(std::process::id());
            }
        }
    }
}

fn enable_cpu_for_children(group: &CpuGroup) -> Result<(), String> {
    let enabled = std::fs::read_to_string(group.dir.join("cgroup.subtree_control"))
        .is_ok_and(|c| c.split_whitespace().any(|w| w == "cpu"));
    if enabled {
        return Ok(());
    }
    write(&group.dir.join("cgroup.subtree_control"), "+cpu").map_err(|e| {
        format!(
            "{e} (cgroup v2 lets a group hand the cpu controller to its children only while no process sits in it besides them, and only where the controller was delegated to you)"
        )
    })
}

/// Removes the groups earlier servers left under `parent` when they were killed
/// before they could remove their own: `isim-serve-PID` whose process is gone
/// (rmdir refuses one that still holds a process anyway). Confinement groups are
/// left alone: one is empty for a moment between being made and entered.
fn sweep_stale(parent: &CpuGroup) {
    let Ok(entries) = std::fs::read_dir(&parent.dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("isim-serve-")) else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_stat_reads_v2_and_v1() {
        let v2 = "usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\nnr_periods 120\nnr_throttled 31\nthrottled_usec 1500000\nnr_bursts 0\n";
        assert_eq!(
            CpuStat::parse(v2),
            Some(CpuStat {
                periods: 120,
                throttled_periods: 31,
                throttled_us: 1_500_000
            })
        );
        let v1 = "nr_periods 112\nnr_throttled 27\nthrottled_time 1478097252\nnr_bursts 0\nburst_time 0\n";
        let stat = CpuStat::parse(v1).unwrap();
        assert_eq!((stat.throttled_periods, stat.throttled_us), (27, 1_478_097));
        assert_eq!(CpuStat::parse("garbage\n"), None);
        let later = CpuStat {
            periods: 130,
            throttled_periods: 35,
            throttled_us: 1_600_000,
        };
        assert_eq!(
            later.since(&CpuStat::parse(v2).unwrap()),
            CpuStat {
                periods: 10,
                throttled_periods: 4,
                throttled_us: 100_000
            }
        );
    }

    #[test]
    fn the_group_is_found_in_v1_then_v2_and_the_tightest_quota_counts() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("box/inner")).unwrap();
        std::fs::write(r.join("box/cpu.max"), "150000 100000\n").unwrap();
        std::fs::write(r.join("box/inner/cpu.max"), "max 100000\n").unwrap();
        let group = CpuGroup::from_table("0::/box/inner\n", r).unwrap();
        assert!(group.v2);
        assert_eq!(
            group.cpu_max(),
            Some(CpuMax {
                quota_us: None,
                period_us: 100_000
            })
        );
        assert_eq!(tightest_from(&group, r), Some(1.5));
        std::fs::write(r.join("box/inner/cpu.max"), "50000 100000\n").unwrap();
        assert_eq!(tightest_from(&group, r), Some(0.5));

        std::fs::create_dir_all(r.join("cpu/job")).unwrap();
        std::fs::write(r.join("cpu/job/cpu.cfs_quota_us"), "25000\n").unwrap();
        std::fs::write(r.join("cpu/job/cpu.cfs_period_us"), "100000\n").unwrap();
        std::fs::write(r.join("cpu/cpu.cfs_quota_us"), "-1\n").unwrap();
        std::fs::write(r.join("cpu/cpu.cfs_period_us"), "100000\n").unwrap();
        let v1 = CpuGroup::from_table("4:memory:/x\n1:cpu:/job\n0::/\n", r).unwrap();
        assert!(!v1.v2, "v1's cpu hierarchy wins where it is mounted");
        assert_eq!(tightest_from(&v1, r), Some(0.25));
        let top = CpuGroup::from_table("1:cpu:/\n", r).unwrap();
        assert_eq!(tightest_from(&top, r), None, "-1 is no quota");
        assert_eq!(CpuGroup::from_table("garbage\n\n", r), None);
    }

    #[test]
    fn a_limit_is_written_as_each_version_takes_it() {
        let root = tempfile::tempdir().unwrap();
        let half = CpuMax {
            quota_us: Some(50_000),
            period_us: 100_000,
        };
        let v2 = CpuGroup {
            dir: root.path().to_path_buf(),
            v2: true,
        };
        v2.set_cpu_max(half).unwrap();
        assert_eq!(v2.cpu_max(), Some(half));
        let v1 = CpuGroup {
            dir: root.path().to_path_buf(),
            v2: false,
        };
        v1.set_cpu_max(half).unwrap();
        assert_eq!(v1.cpu_max(), Some(half));
        assert_eq!(half.describe(), "50ms per 100ms (0.50 cores)");
        assert_eq!(half.cores(), Some(0.5));
    }
}
