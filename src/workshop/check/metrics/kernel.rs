//! The kernel's figures of the server: its cgroup's throttled time, its
//! listener's drops, its threads' wait for a CPU. Each needs an OS that gives
//! it (`needs`: `fit.rs` says so before any load); where the server's OS does
//! not, the figure is NaN, which fails every bound.

use simulator_api::{OsFeature, Stats};

use super::{Metric, SoFar, Window};

/// Milliseconds a second the server's threads waited for their CPU quota's
/// next period (its cgroup's `cpu.stat` throttled time, summed over CPUs).
pub struct ThrottledMsPerS;

/// The cgroup's throttled time from `start` to `now`, ms.
fn throttled_ms(start: &Stats, now: &Stats) -> Option<f64> {
    let (start, now) = (start.cpu_cgroup.as_ref()?, now.cpu_cgroup.as_ref()?);
    Some(now.throttled_us.saturating_sub(start.throttled_us) as f64 / 1e3)
}

impl Metric for ThrottledMsPerS {
    fn name(&self) -> &'static str {
        "throttled_ms_per_s"
    }
    fn label(&self) -> &'static str {
        "CPU quota: throttled ms a second"
    }
    fn needs(&self) -> Option<OsFeature> {
        Some(OsFeature::Cgroups)
    }
    fn measure(&self, w: &Window) -> f64 {
        throttled_ms(w.before, w.after).map_or(f64::NAN, |ms| ms / w.seconds.max(1e-9))
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        throttled_ms(s.start, s.now).map(|ms| s.per_s(ms))
    }
}

/// Packets the data port's listener dropped in the window (its own socket's
/// `SO_MEMINFO` count, so a load beside it on the machine does not move it):
/// SYNs at a full accept queue and the handshakes it could not take.
pub struct ListenDrops;

fn listen_drops(start: &Stats, now: &Stats) -> Option<f64> {
    let (start, now) = (
        start.connections.listen_drops?,
        now.connections.listen_drops?,
    );
    Some(now.saturating_sub(start) as f64)
}

impl Metric for ListenDrops {
    fn name(&self) -> &'static str {
        "listen_drops"
    }
    fn label(&self) -> &'static str {
        "packets the listener dropped"
    }
    fn needs(&self) -> Option<OsFeature> {
        Some(OsFeature::ListenerDrops)
    }
    fn measure(&self, w: &Window) -> f64 {
        listen_drops(w.before, w.after).unwrap_or(f64::NAN)
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        listen_drops(s.start, s.now)
    }
}

/// The time the server's threads were runnable and waited for a CPU over the
/// window (`/stats.runqueue_wait_ns`, Linux's schedstat, summed over threads)
/// per unit of CPU time they got (`process_cpu_ns`): how long its work waits
/// for each millisecond it runs. A ratio, so a laptop 3x slower (which spends
/// 3x the CPU on the same requests, and waits in proportion) reads the same.
pub struct RunqueueWaitPerCpu;

fn runqueue_wait_per_cpu(start: &Stats, now: &Stats) -> Option<f64> {
    let (waited, ran) = (start.runqueue_wait_ns?, start.process_cpu_ns?);
    let (waits, runs) = (now.runqueue_wait_ns?, now.process_cpu_ns?);
    Some(waits.saturating_sub(waited) as f64 / runs.saturating_sub(ran).max(1) as f64)
}

impl Metric for RunqueueWaitPerCpu {
    fn name(&self) -> &'static str {
        "runqueue_wait_per_cpu"
    }
    fn label(&self) -> &'static str {
        "ms waiting for a CPU per ms on one"
    }
    fn needs(&self) -> Option<OsFeature> {
        Some(OsFeature::RunQueueWait)
    }
    fn measure(&self, w: &Window) -> f64 {
        runqueue_wait_per_cpu(w.before, w.after).unwrap_or(f64::NAN)
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        runqueue_wait_per_cpu(s.start, s.now)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Parts;
    use super::*;
    use simulator_api::CpuCgroup;

    #[test]
    fn throttled_ms_per_s_is_the_cgroups_and_nan_without_one() {
        let mut parts = Parts::new();
        assert!(ThrottledMsPerS.measure(&parts.window()).is_nan());
        let cgroup = |throttled_us| CpuCgroup {
            throttled_us,
            ..CpuCgroup::default()
        };
        parts.before.cpu_cgroup = Some(cgroup(1_000_000));
        parts.after.cpu_cgroup = Some(cgroup(1_500_000));
        assert_eq!(ThrottledMsPerS.measure(&parts.window()), 50.0);
        assert_eq!(
            ThrottledMsPerS.so_far(&parts.so_far()),
            Some(100.0),
            "5 s in"
        );
    }

    #[test]
    fn listen_drops_counts_the_windows_and_nan_where_the_kernel_will_not_say() {
        let mut parts = Parts::new();
        assert!(ListenDrops.measure(&parts.window()).is_nan());
        parts.before.connections.listen_drops = Some(40);
        parts.after.connections.listen_drops = Some(43);
        assert_eq!(ListenDrops.measure(&parts.window()), 3.0);
        assert_eq!(ListenDrops.needs(), Some(OsFeature::ListenerDrops));
    }

    #[test]
    fn runqueue_wait_per_cpu_is_the_wait_per_cpu_time_got() {
        let mut parts = Parts::new();
        assert!(RunqueueWaitPerCpu.measure(&parts.window()).is_nan());
        (parts.before.runqueue_wait_ns, parts.before.process_cpu_ns) = (Some(0), Some(0));
        (parts.after.runqueue_wait_ns, parts.after.process_cpu_ns) = (Some(600), Some(1_000));
        assert_eq!(RunqueueWaitPerCpu.measure(&parts.window()), 0.6);
    }
}
