//! What the check's reads of `/stats` twice a second through the window saw
//! (`unwritten_watch.rs`, [`Reads::TwiceASecond`]): the elements answered and
//! not yet written (their peak per store slot, their growth), the cache's
//! late hit ratio, and the growth of the server's open descriptors and of its
//! resident memory. A slope is the least-squares slope of the reads from a
//! point into the window on.

use std::time::Duration;

use super::super::super::unwritten_watch::{self as watch, DESCRIPTORS_FROM_S};
use super::{Metric, Reads, SoFar, Window};

/// The end of the window [`LateHitRatio`] judges: its last 10 s, all after
/// the 15 s an incident's end leaves to recover
/// ([`simulator_service::scenario::AFTER_INCIDENT`]).
pub const LATE_HIT_RATIO_S: f64 = 10.0;

/// Where the resident memory's growth is judged from, into the window: what
/// a service keeps for a few seconds has filled by then, and the allocator's
/// own pages have settled (a server that keeps 5 s of elements still grew by
/// 0.3 MiB a second in its sixth and seventh seconds, and then not at all).
pub const RESIDENT_FROM_S: f64 = 8.0;

/// The shortest window that judges the resident memory's growth: six seconds
/// of reads after [`RESIDENT_FROM_S`].
pub const RESIDENT_WINDOW: Duration = Duration::from_secs(14);

/// The most elements answered and not yet written at once over the window
/// (`/stats.acked_unwritten_peak`, read twice a second, and the read after
/// the window for its last second), per slot of the world's store
/// (`store_concurrency`): up to 1 is what a gate sized to the store holds;
/// more is a write-behind buffer, whatever setting made it. NaN (fails) in a
/// world whose store has no limit, which holds any pile.
pub struct AckedUnwrittenPerSlot;

impl Metric for AckedUnwrittenPerSlot {
    fn name(&self) -> &'static str {
        "acked_unwritten_per_slot"
    }
    fn label(&self) -> &'static str {
        "answered unwritten, peak per store slot"
    }
    fn reads(&self) -> Reads {
        Reads::TwiceASecond
    }
    fn measure(&self, w: &Window) -> f64 {
        let peak = w.watched.peak.max(w.after.acked_unwritten_peak) as f64;
        match w.scenario.settings().store_concurrency {
            0 => f64::NAN,
            slots => peak / slots as f64,
        }
    }
}

/// How fast the elements answered and not yet written grew over the window's
/// second half, a second (`/stats.acked_unwritten`). Whatever holds them
/// (tasks, a queue), a bounded pile stops growing once full and an unbounded
/// one grows to the end.
pub struct UnwrittenGrowthPerS;

impl Metric for UnwrittenGrowthPerS {
    fn name(&self) -> &'static str {
        "unwritten_growth_per_s"
    }
    fn label(&self) -> &'static str {
        "answered unwritten, growth a second"
    }
    fn reads(&self) -> Reads {
        Reads::TwiceASecond
    }
    fn measure(&self, w: &Window) -> f64 {
        watch::growth_per_s(&w.watched.reads, w.seconds)
    }
}

/// The share of reads answered from the cache (cache-hit over cache-hit and
/// cache-miss) over the window's last [`LATE_HIT_RATIO_S`], from the reads
/// through the window and the one after it: a cache that warmed again after
/// its incident, not one left cold. NaN (fails) when no read was made then.
pub struct LateHitRatio;

impl Metric for LateHitRatio {
    fn name(&self) -> &'static str {
        "late_hit_ratio"
    }
    fn label(&self) -> &'static str {
        "cache hit ratio, the last 10 s"
    }
    fn reads(&self) -> Reads {
        Reads::TwiceASecond
    }
    fn measure(&self, w: &Window) -> f64 {
        let end = watch::cache_reads(&w.after.counts);
        watch::late_hit_ratio(&w.watched.cache, w.seconds, LATE_HIT_RATIO_S, end)
    }
}

/// How fast the server's open file descriptors grew over the window, a second
/// (`/stats.descriptors.open`, from [`DESCRIPTORS_FROM_S`] on). What the
/// service opens and closes again comes and goes; a leak grows at its rate to
/// the end, and a higher limit leaves the slope as it was. NaN (fails) where
/// the OS gives no count.
pub struct DescriptorGrowthPerS;

impl Metric for DescriptorGrowthPerS {
    fn name(&self) -> &'static str {
        "descriptor_growth_per_s"
    }
    fn label(&self) -> &'static str {
        "open descriptors, growth a second"
    }
    fn reads(&self) -> Reads {
        Reads::TwiceASecond
    }
    fn measure(&self, w: &Window) -> f64 {
        watch::slope_from(&w.watched.descriptors, DESCRIPTORS_FROM_S)
    }
}

/// How fast the server's resident memory grew over the window's end, MiB a
/// second (`/stats.memory.resident_bytes`, from [`RESIDENT_FROM_S`] into the
/// window on, which every window that judges it lasts past by
/// [`RESIDENT_WINDOW`]). What the service needs for a while fills in the first
/// seconds and then stays; what it never forgets grows at its rate to the
/// end, whatever memory the machine has. NaN (fails) where the OS will not
/// say. So far: the server's own 10 s trend.
pub struct ResidentGrowthMibPerS;

const MIB: f64 = 1024.0 * 1024.0;

impl Metric for ResidentGrowthMibPerS {
    fn name(&self) -> &'static str {
        "resident_growth_mib_per_s"
    }
    fn label(&self) -> &'static str {
        "resident memory, growth MiB a second"
    }
    fn reads(&self) -> Reads {
        Reads::TwiceASecond
    }
    fn shortest_window(&self) -> Duration {
        RESIDENT_WINDOW
    }
    fn measure(&self, w: &Window) -> f64 {
        watch::slope_from(&w.watched.resident, RESIDENT_FROM_S) / MIB
    }
    fn so_far(&self, s: &SoFar) -> Option<f64> {
        s.now.memory?.resident_growth_bytes_per_s.map(|b| b / MIB)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Parts;
    use super::*;

    /// Reads twice a second for `seconds`, of `value(t)`.
    fn reads(seconds: f64, value: impl Fn(f64) -> u64) -> Vec<(f64, u64)> {
        (0..(seconds * 2.0) as usize)
            .map(|i| i as f64 / 2.0)
            .map(|t| (t, value(t)))
            .collect()
    }

    #[test]
    fn acked_unwritten_per_slot_is_the_peak_per_slot_and_nan_without_a_limit() {
        let mut parts = Parts::new();
        parts.watched.peak = 12;
        parts.after.acked_unwritten_peak = 16;
        let slots = parts.scenario.settings().store_concurrency;
        let measured = AckedUnwrittenPerSlot.measure(&parts.window());
        match slots {
            0 => assert!(measured.is_nan()),
            slots => assert_eq!(measured, 16.0 / slots as f64, "the read after the window"),
        }
    }

    #[test]
    fn unwritten_growth_per_s_is_the_second_halfs_slope() {
        let mut parts = Parts::new();
        // Full and flat after 3 s: no growth in the second half.
        parts.watched.reads = reads(10.0, |t| (t.min(3.0) * 100.0) as u64);
        assert_eq!(UnwrittenGrowthPerS.measure(&parts.window()), 0.0);
        parts.watched.reads = reads(10.0, |t| (t * 40.0) as u64);
        let grew = UnwrittenGrowthPerS.measure(&parts.window());
        assert!((grew - 40.0).abs() < 1e-9, "{grew}");
    }

    #[test]
    fn late_hit_ratio_counts_the_last_10_s_to_the_read_after_the_window() {
        let mut parts = Parts::new();
        parts.seconds = 30.0;
        assert!(LateHitRatio.measure(&parts.window()).is_nan(), "no read");
        parts.watched.cache = vec![(5.0, 0, 100), (20.0, 10, 200)];
        (
            parts.after.counts.cache_hits,
            parts.after.counts.cache_misses,
        ) = (100, 210);
        assert_eq!(LateHitRatio.measure(&parts.window()), 0.9);
    }

    #[test]
    fn descriptor_growth_per_s_is_the_slope_from_the_first_second() {
        let mut parts = Parts::new();
        parts.watched.descriptors =
            reads(6.0, |t| if t < 1.0 { 500 } else { 20 + (t * 3.0) as u64 });
        let grew = DescriptorGrowthPerS.measure(&parts.window());
        assert!((grew - 3.0).abs() < 0.2, "{grew}");
    }

    #[test]
    fn resident_growth_mib_per_s_is_the_slope_from_the_eighth_second_and_so_far_the_servers() {
        let mut parts = Parts::new();
        let mib = 1 << 20;
        // Filling fast for 8 s, then 1 MiB a second.
        parts.watched.resident = reads(14.0, |t| match t < 8.0 {
            true => (t * 10.0) as u64 * mib,
            false => 80 * mib + ((t - 8.0) * mib as f64) as u64,
        });
        let grew = ResidentGrowthMibPerS.measure(&parts.window());
        assert!((grew - 1.0).abs() < 1e-6, "{grew}");
        assert_eq!(ResidentGrowthMibPerS.shortest_window(), RESIDENT_WINDOW);
        assert_eq!(
            ResidentGrowthMibPerS.so_far(&parts.so_far()),
            None,
            "no memory figure"
        );
        parts.after.memory = Some(simulator_api::MemoryCounts {
            resident_bytes: 0,
            resident_growth_bytes_per_s: Some(mib as f64 / 2.0),
            limit_bytes: None,
        });
        assert_eq!(ResidentGrowthMibPerS.so_far(&parts.so_far()), Some(0.5));
    }
}
