//! Once a second, one [`LiveSecond`] from what the server already keeps: the
//! counts are the difference of two `/stats` snapshots, the parts' state is the
//! later snapshot's, and the request-lifetime heatmap is the difference of the
//! cumulative buckets of the process's `isim_request_lifetime_seconds`
//! (`observe/lifetime.rs`), read directly, not out of the `/metrics` text.
//!
//! The histogram is process-wide: where several servers share a process (tests,
//! the demo's second server), the heatmap shows all of their requests, as
//! `/metrics` does; the counts are this server's own.

use std::time::Duration;

use simulator_api::live::{
    ListenerSecond, LiveScenario, LiveSecond, LiveTick, PartsNow, QuotaSecond, SlowestRequest,
};
use simulator_api::{Settings, Stats, SETTINGS};
use tokio_util::sync::CancellationToken;

use super::now_ms;
use super::slowest::Slowest;
use crate::observe::lifetime::{self, Histogram};
use crate::serving::answers::{self, Answers};
use crate::serving::state::AppState;

/// Samples `state` every second until `stop`.
pub async fn run(state: AppState, stop: CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every.tick().await;
    let slowest = Slowest::default();
    #[cfg(feature = "probes")]
    tokio::spawn(super::slowest::watch(
        state.live.waits.clone(),
        slowest.clone(),
        stop.clone(),
    ));
    let mut last = Sample::take(&state, &slowest);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => {}
        }
        // A live change of the backlog reaches the kernel within a second, even
        // while nothing connects (the accept loop applies it at each accept too).
        state
            .connections
            .keep_backlog(state.processor.settings().listen_backlog);
        crate::observe::resident::note(state.live.elapsed_s());
        let next = Sample::take(&state, &slowest);
        let t = state.live.elapsed_s().round() as u64;
        let second = next.second_since(&last, t);
        for (kind, label) in marks_between(&last.stats, &next.stats, &second) {
            state.live.mark(kind, label);
        }
        state.live.push(tick(&state, Some(second), &next.stats));
        last = next;
    }
}

/// The markers a second puts on the charts by itself, from two readings of
/// `/stats` a second apart: an incident's edges and a change of the
/// neighbour. (A change of settings is marked by the route that made it.)
pub fn marks_between(was: &Stats, now: &Stats, second: &LiveSecond) -> Vec<(&'static str, String)> {
    let mut marks = Vec::new();
    if second.counts.incidents_started > 0 {
        let summary = now.incident.as_ref().map(|i| i.summary.clone());
        marks.push((
            "incident",
            format!("incident begins: {}", summary.unwrap_or_default()),
        ));
    }
    if second.counts.incidents_ended > 0 {
        marks.push(("incident", "incident ends".to_owned()));
    }
    if let Some(change) = neighbour_change(was, now) {
        marks.push(("neighbour", change));
    }
    marks
}

/// What changed of the world's neighbour in a second, in words: a fix outside
/// the service (`renice`, `chrt`) reaches no route of the server, so the live
/// view marks it from what the kernel says of the neighbour's threads.
fn neighbour_change(was: &Stats, now: &Stats) -> Option<String> {
    let (was, now) = (was.neighbour.as_ref()?, now.neighbour.as_ref()?);
    if was.running && !now.running {
        return Some("the neighbour ended".into());
    }
    match (&was.scheduling, &now.scheduling) {
        (Some(before), Some(after)) if before != after => {
            Some(format!("the neighbour's threads: {before} -> {after}"))
        }
        _ => None,
    }
}

/// The tick a viewer gets for `stats`: totals, the scenario and (from the
/// history) the markers and the check.
pub fn tick(state: &AppState, second: Option<LiveSecond>, stats: &Stats) -> LiveTick {
    LiveTick {
        second,
        totals: stats.counts,
        scenario: scenario_of(state, stats),
        markers: Vec::new(),
        check: None,
    }
}

fn scenario_of(state: &AppState, stats: &Stats) -> LiveScenario {
    let limited_by = match state.answers {
        Answers::Shown => stats.model.limited_by.clone(),
        Answers::Hidden => answers::HIDDEN.to_owned(),
    };
    scenario_against(
        &state.scenario().settings(),
        state.scenario_name(),
        stats,
        limited_by,
    )
}

/// The scenario as the page shows it: `stats`' settings against the scenario's
/// own (`own`), and what the model says limits it (`limited_by`, or the
/// notice that hides it).
pub fn scenario_against(
    own: &Settings,
    name: String,
    stats: &Stats,
    limited_by: String,
) -> LiveScenario {
    // Live settings only: a fix is a live change, and the addresses a server was
    // started on (listen, admin_listen) are no change to the scenario.
    let changed = stats
        .config
        .texts()
        .into_iter()
        .zip(own.texts())
        .zip(SETTINGS)
        .filter(|(((_, now), (_, was)), info)| info.live && now != was)
        .map(|(((key, now), _), _)| format!("{key}={now}"))
        .collect();
    LiveScenario {
        name,
        changed,
        capacity_per_s: stats.model.capacity_per_s.unwrap_or(0.0),
        limited_by,
    }
}

/// One reading of the server.
struct Sample {
    stats: Stats,
    /// The process's request lifetimes so far.
    lifetime: Histogram,
    /// The longest request and compaction hold since the last reading.
    longest: Option<Duration>,
    hold: Option<Duration>,
    /// The slowest request cut since the last reading (while a page is open).
    slowest: Option<SlowestRequest>,
}

impl Sample {
    fn take(state: &AppState, slowest: &Slowest) -> Self {
        let stats = state.stats();
        let lifetime = lifetime::read().histograms.request_lifetime;
        let (longest, hold) = state.processor.take_longest();
        Self {
            stats,
            lifetime,
            longest,
            hold,
            slowest: slowest.take(),
        }
    }

    fn second_since(&self, earlier: &Sample, t: u64) -> LiveSecond {
        let ended = Ended {
            lifetime: self.lifetime.per_bucket_since(&earlier.lifetime),
            longest: self.longest,
            hold: self.hold,
            slowest: self.slowest.clone(),
        };
        second_between(&earlier.stats, &self.stats, ended, t, now_ms())
    }
}

/// What ended in a second: the requests by lifetime bucket (one more than
/// [`lifetime_bounds`]: +Inf), the longest of them, and the longest any
/// compaction that ended held the index's lock.
#[derive(Debug, Clone, Default)]
pub struct Ended {
    pub lifetime: Vec<u64>,
    pub longest: Option<Duration>,
    pub hold: Option<Duration>,
    /// The slowest request, cut into its waits, when someone cut them.
    pub slowest: Option<SlowestRequest>,
}

/// Second `t`, ending at `at_ms`: two readings of `/stats` a second apart and
/// what ended between them. The live sampler and a recording's replay both
/// make their seconds here.
pub fn second_between(
    earlier: &Stats,
    now: &Stats,
    ended: Ended,
    t: u64,
    at_ms: u64,
) -> LiveSecond {
    let s = now;
    let bounds = lifetime_bounds();
    let longest_s = ended.longest.map(|d| d.as_secs_f64());
    let q = |p| quantile_at_most(&bounds, &ended.lifetime, p, longest_s).map(|s| s * 1e3);
    LiveSecond {
        t,
        at_ms,
        counts: s.counts.since(&earlier.counts),
        now: parts_now(s),
        capacity_per_s: s.model.capacity_per_s,
        p50_ms: q(0.5),
        p99_ms: q(0.99),
        p999_ms: q(0.999),
        lifetime: ended.lifetime,
        cpu_quota: quota_second(s, earlier),
        listener: listener_second(s, earlier),
        delayed_acks: delayed_acks_second(s, earlier),
        descriptors: s.descriptors,
        memory: s.memory,
        runqueue_wait_ms: runqueue_wait_second(s, earlier),
        longest_ms: ended.longest.map(|d| d.as_secs_f64() * 1e3),
        compaction_hold_ms: ended.hold.map(|d| d.as_secs_f64() * 1e3),
        slowest: ended.slowest,
    }
}

/// The time the server's threads waited for a CPU this second, in ms.
fn runqueue_wait_second(now: &Stats, earlier: &Stats) -> Option<f64> {
    let now = now.runqueue_wait_ns?;
    let was = earlier.runqueue_wait_ns.unwrap_or(now);
    Some(now.saturating_sub(was) as f64 / 1e6)
}

/// The delayed ACKs the server's namespace sent this second.
fn delayed_acks_second(now: &Stats, earlier: &Stats) -> Option<u64> {
    let now = now.tcp.as_ref()?.delayed_acks;
    let was = earlier.tcp.as_ref().map_or(now, |t| t.delayed_acks);
    Some(now.saturating_sub(was))
}

/// The second's drops at the listener, its queue now and its longest.
fn listener_second(now: &Stats, earlier: &Stats) -> Option<ListenerSecond> {
    let c = &now.connections;
    let drops_total = c.listen_drops?;
    let queue = c.listen_queue.unwrap_or(0);
    Some(ListenerSecond {
        drops: drops_total.saturating_sub(earlier.connections.listen_drops.unwrap_or(drops_total)),
        drops_total,
        queue,
        queue_peak: c.listen_queue_peak.unwrap_or(0).max(queue),
        backlog: c.listen_backlog.unwrap_or(0),
    })
}

/// The second's throttling: the cgroup's counters now minus a second ago (the
/// same group both times; a server that moved groups starts over).
fn quota_second(now: &Stats, earlier: &Stats) -> Option<QuotaSecond> {
    let (now, was) = (now.cpu_cgroup.as_ref()?, earlier.cpu_cgroup.as_ref());
    let was = was.filter(|w| w.path == now.path);
    let (periods, throttled_periods, throttled_us) = was.map_or((0, 0, 0), |w| {
        (
            now.periods.saturating_sub(w.periods),
            now.throttled_periods.saturating_sub(w.throttled_periods),
            now.throttled_us.saturating_sub(w.throttled_us),
        )
    });
    Some(QuotaSecond {
        periods,
        throttled_periods,
        throttled_ms: throttled_us as f64 / 1e3,
        quota_cores: now.quota_cores,
    })
}

fn parts_now(s: &Stats) -> PartsNow {
    PartsNow {
        requests_in_flight: s.requests_in_flight,
        permits_in_use: s.permits_total.saturating_sub(s.permits_available) as u64,
        permits_total: s.permits_total as u64,
        permits_waiting: s.permits_waiting,
        work_in_flight: s.runtime.work_in_flight,
        persists_queued: s.persists_queued,
        persists_in_flight: s.persists_in_flight,
        acked_unwritten: s.acked_unwritten,
        acked_unwritten_peak: s.acked_unwritten_peak,
        store_slots_busy: s.store_slots_busy,
        store_slots_total: s.config.store_concurrency as u64,
        canary_late_p99_us: s.runtime.late_p99_us,
        busy_share: s.runtime.busy_share,
        connections_open: s.connections.open,
        incident_active: s.incident.is_some(),
    }
}

/// The heatmap's bucket bounds in seconds (the histogram's, without +Inf).
pub fn lifetime_bounds() -> Vec<f64> {
    lifetime::bounds_seconds()
}

/// The `p` quantile of counts per bucket, linear within its bucket as PromQL's
/// `histogram_quantile`; in the +Inf bucket, the highest bound.
pub fn quantile(bounds: &[f64], counts: &[u64], p: f64) -> Option<f64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = p * total as f64;
    let mut below = 0u64;
    for (i, &n) in counts.iter().enumerate() {
        if n > 0 && (below + n) as f64 >= rank {
            let Some(&upper) = bounds.get(i) else {
                return bounds.last().copied();
            };
            let lower = if i == 0 { 0.0 } else { bounds[i - 1] };
            let within = (rank - below as f64) / n as f64;
            return Some(lower + (upper - lower) * within.clamp(0.0, 1.0));
        }
        below += n;
    }
    bounds.last().copied()
}

/// [`quantile`], no higher than the longest sample when that is known. A
/// bucket's quantile is placed within it by proportion; in a wide bucket (1 to
/// 5 s) that put the p50 of a second whose requests all took about 1.04 s at
/// 2.66 s, above the second's longest request, which is exact.
pub fn quantile_at_most(
    bounds: &[f64],
    counts: &[u64],
    p: f64,
    longest: Option<f64>,
) -> Option<f64> {
    let q = quantile(bounds, counts, p)?;
    Some(longest.map_or(q, |longest| q.min(longest)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_within_their_bucket() {
        let bounds = [0.001, 0.01];
        // 2 below 1 ms, 5 in 1-10 ms, 3 above.
        let counts = [2, 5, 3];
        assert_eq!(quantile(&bounds, &counts, 0.1), Some(0.0005));
        let median = quantile(&bounds, &counts, 0.5).unwrap();
        assert!((median - 0.0064).abs() < 1e-9, "{median}");
        // In the +Inf bucket: the highest bound, as histogram_quantile says.
        assert_eq!(quantile(&bounds, &counts, 0.99), Some(0.01));
        assert_eq!(quantile(&bounds, &[0, 0, 0], 0.5), None);
    }

    #[test]
    fn no_quantile_is_above_the_longest_request() {
        // Cold-cache's seconds after the incident: every request about 1.04 s,
        // all in the 1-5 s bucket.
        let bounds = [0.5, 1.0, 5.0];
        let counts = [0, 0, 800, 0];
        assert_eq!(quantile(&bounds, &counts, 0.5), Some(3.0));
        assert_eq!(
            quantile_at_most(&bounds, &counts, 0.5, Some(1.04)),
            Some(1.04)
        );
        // A longer longest leaves the bucket's estimate as it is.
        assert_eq!(
            quantile_at_most(&bounds, &counts, 0.5, Some(4.0)),
            Some(3.0)
        );
        assert_eq!(quantile_at_most(&bounds, &counts, 0.5, None), Some(3.0));
    }
}
