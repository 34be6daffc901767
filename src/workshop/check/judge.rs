//! The verdict's figures: every condition of the scenario measured on the
//! window, from the clients' report and the server's figures around it, once
//! the server is known to have seen the check's requests and not many more.

use simulator_api::client;
use simulator_api::load::Load;
use simulator_api::Counts;
use simulator_clients::Report;

use super::super::{neighbour_share, unwritten_watch};
use super::recovery::{recovery_s, GoodputSecond};
use super::window::WindowRun;
use super::{Measured, Stop, LATE_HIT_RATIO_S, RECOVERED_SHARE};
use simulator_service::scenario::{Metric, Scenario};

/// Every condition measured on the window, once the server is known to have
/// seen the check's requests and not many more: another load beside the check's
/// would change what the window means.
pub(super) async fn judge(
    scenario: &Scenario,
    target: &str,
    load: &Load,
    ran: &WindowRun,
) -> Result<(Vec<Measured>, Vec<String>), Stop> {
    let after = client::stats(target).await?;
    let runtime = after.runtime;
    let throttled_ms = match (ran.throttled_us_before, &after.cpu_cgroup) {
        (Some(before), Some(now)) => Some(now.throttled_us.saturating_sub(before) as f64 / 1e3),
        _ => None,
    };
    let listen_drops = match (ran.listen_drops_before, after.connections.listen_drops) {
        (Some(before), Some(now)) => Some(now.saturating_sub(before) as f64),
        _ => None,
    };
    let runqueue_wait_per_cpu = match (
        (ran.runqueue_wait_before, after.runqueue_wait_ns),
        (ran.cpu_before, after.process_cpu_ns),
    ) {
        ((Some(waited), Some(waits)), (Some(ran_ns), Some(runs))) => {
            Some(waits.saturating_sub(waited) as f64 / runs.saturating_sub(ran_ns).max(1) as f64)
        }
        _ => None,
    };
    let neighbour_share = neighbour_share::share(
        ran.neighbour_alone_per_s,
        ran.neighbour_before,
        neighbour_share::Reading::of(after.neighbour.as_ref()),
    );
    let report = &ran.report;
    let Some(server) = &report.server else {
        return Err(Stop::Refused(
            "the server's /stats did not answer around the window".into(),
        ));
    };
    the_checks_requests_alone(report, server)?;
    let window = Window {
        report,
        server,
        seconds: report.window_ns as f64 / 1e9,
        runtime: &runtime,
        throttled_ms,
        listen_drops,
        runqueue_wait_per_cpu,
        neighbour_share,
        index_entries: after.index_entries as f64,
        // The watch's reads, and the one after the window for its last second.
        acked_unwritten_peak: ran.unwritten.peak.max(after.acked_unwritten_peak) as f64,
        unwritten_growth_per_s: unwritten_watch::growth_per_s(
            &ran.unwritten.reads,
            report.window_ns as f64 / 1e9,
        ),
        store_slots: scenario.settings().store_concurrency,
        late_hit_ratio: unwritten_watch::late_hit_ratio(
            &ran.unwritten.cache,
            report.window_ns as f64 / 1e9,
            LATE_HIT_RATIO_S,
            unwritten_watch::cache_reads(&after.counts),
        ),
        descriptor_growth_per_s: unwritten_watch::slope_from(
            &ran.unwritten.descriptors,
            unwritten_watch::DESCRIPTORS_FROM_S,
        ),
        journalled_share: journalled_share(ran.journalled_before, &after),
        resident_growth_mib_per_s: unwritten_watch::slope_from(
            &ran.unwritten.resident,
            simulator_service::scenario::RESIDENT_FROM_S,
        ) / (1024.0 * 1024.0),
        retries_answered_once: ran.retried.share(),
        incident_end_s: ran.incident_end_s,
        open_loop: matches!(load.pacing, simulator_api::load::Pacing::Open { .. }),
    };
    let measured = scenario.check.iter().map(|c| window.measured(c)).collect();
    let notes = descriptor_limit_note(scenario, &after)
        .into_iter()
        .chain(memory_limit_note(scenario, &after))
        .collect();
    Ok((measured, notes))
}

/// In a world that sets the descriptor limit, the limit the server has now,
/// as the check read it: raised from outside (`prlimit`) it is no longer the
/// world's, and the growth, not the limit, is what the check judges.
fn descriptor_limit_note(scenario: &Scenario, after: &simulator_api::Stats) -> Option<String> {
    let world = scenario.settings().descriptor_limit as u64;
    let limit = after.descriptors?.limit;
    (world > 0).then(|| match limit == world {
        true => format!("the server's descriptor limit: {limit}, the world's"),
        false => format!(
            "the server's descriptor limit: {limit}, not the world's {world}: a higher limit moves the cliff, and the growth is what is judged"
        ),
    })
}

/// In a world that sets the memory limit, the limit the server has now, as the
/// check read it: raised from outside (`prlimit --data`) it only moves the
/// kill, and the growth, not the limit, is what the check judges.
fn memory_limit_note(scenario: &Scenario, after: &simulator_api::Stats) -> Option<String> {
    let world = scenario.settings().memory_limit;
    let mib = |bytes: u64| format!("{} MiB", bytes >> 20);
    let limit = after.memory?.limit_bytes;
    (world > 0).then(|| match limit {
        Some(limit) if limit == world => {
            format!("the server's memory limit: {}, the world's", mib(limit))
        }
        limit => format!(
            "the server's memory limit: {}, not the world's {}: a higher limit moves the kill, and the growth is what is judged",
            limit.map_or("none".to_owned(), mib),
            mib(world)
        ),
    })
}

/// Persists journalled over the window per persist started in it, from the
/// counts as it began (`before`) and `after` it; NaN without a persist.
fn journalled_share(before: (u64, u64), after: &simulator_api::Stats) -> f64 {
    let (entries, started) = before;
    let journalled = after.journal_entries.saturating_sub(entries) as f64;
    match after.counts.persists_started.saturating_sub(started) {
        0 => f64::NAN,
        persists => journalled / persists as f64,
    }
}

/// Refused unless the server saw about the requests the check sent: many more
/// is another load beside it; many fewer, requests that went elsewhere. An
/// attempt that failed short of a reply (never connected, timed out, its
/// connection broken) may never have reached the server's count: a starved
/// server (cold-cache's, beside thirteen other exercises' on two CPUs) counted
/// 13,273 of 18,554 while its clients gave up on thousands.
fn the_checks_requests_alone(report: &Report, server: &Counts) -> Result<(), Stop> {
    let sent = report.requests_sent as f64;
    let seen = server.requests_started as f64;
    let errors = &report.errors_by_kind;
    let maybe_unseen =
        (errors.connect + errors.connect_timeout + errors.timeout + errors.io) as f64;
    if seen < (sent - maybe_unseen) * 0.95 || seen > sent * 1.1 + 20.0 {
        return Err(Stop::Refused(format!(
            "the server counted {seen:.0} requests while the check sent {sent:.0}: stop any other load (the check brings its own) and check again"
        )));
    }
    Ok(())
}

/// What a window measured, from both sides.
struct Window<'a> {
    report: &'a Report,
    server: &'a Counts,
    seconds: f64,
    runtime: &'a simulator_api::RuntimeStats,
    /// The server's cgroup's throttled time over the window, ms.
    throttled_ms: Option<f64>,
    /// The data port's listener's drops over the window.
    listen_drops: Option<f64>,
    /// The server's threads' run-queue wait over the window per CPU time it got.
    runqueue_wait_per_cpu: Option<f64>,
    /// The neighbour's work a second in the window over its work alone.
    neighbour_share: f64,
    /// Entries in the server's index at the window's end.
    index_entries: f64,
    /// The most elements answered and not yet written at once in the window.
    acked_unwritten_peak: f64,
    /// How fast they grew over the window's second half, a second.
    unwritten_growth_per_s: f64,
    /// The world's store slots (`store_concurrency`; 0: no limit).
    store_slots: usize,
    /// The share of reads that hit over the window's last seconds.
    late_hit_ratio: f64,
    /// How fast the server's open descriptors grew over the window's second half, a second.
    descriptor_growth_per_s: f64,
    /// Persists journalled per persist started over the window.
    journalled_share: f64,
    /// How fast the server's resident memory grew at the window's end, MiB a second.
    resident_growth_mib_per_s: f64,
    /// The share of the check's own retries answered with their first reply.
    retries_answered_once: f64,
    /// When the incident the check began ended, in the run's seconds.
    incident_end_s: Option<f64>,
    /// Whether the load is an open loop (only one has a rate to recover to).
    open_loop: bool,
}

impl Window<'_> {
    /// One condition, measured on the window.
    fn measured(&self, condition: &simulator_service::scenario::Condition) -> Measured {
        let value = self.figure(condition.metric);
        Measured {
            condition: *condition,
            value,
            holds: condition.holds(value),
        }
    }

    /// One metric of the window.
    fn figure(&self, metric: Metric) -> f64 {
        let Window {
            report,
            server,
            seconds,
            runtime,
            ..
        } = *self;
        let per_s = |n: u64| n as f64 / seconds.max(1e-9);
        match metric {
            Metric::BlockedShare => server.blocked_share(),
            Metric::OkShare => {
                let sent = report.requests_sent.max(1) as f64;
                (report.requests_sent.saturating_sub(report.errors)) as f64 / sent
            }
            Metric::P99Ms => report.summary.latency.p99_ns as f64 / 1e6,
            Metric::P50Ms => report.summary.latency.p50_ns as f64 / 1e6,
            Metric::ConnectP99Ms => report.summary.connect.p99_ns as f64 / 1e6,
            Metric::RightDigestShare => report.digests.right_share(),
            // Without the kernel's figure, NaN fails every bound.
            Metric::ListenDrops => self.listen_drops.unwrap_or(f64::NAN),
            Metric::PersistsPerS => per_s(server.persists_done),
            Metric::CompactionsPerS => per_s(server.compactions_done),
            Metric::IndexEntries => self.index_entries,
            // A store without a limit holds any pile: NaN fails every bound.
            Metric::AckedUnwrittenPerSlot => match self.store_slots {
                0 => f64::NAN,
                slots => self.acked_unwritten_peak / slots as f64,
            },
            Metric::UnwrittenGrowthPerS => self.unwritten_growth_per_s,
            // Without the kernel's figure, NaN fails every bound.
            Metric::RunqueueWaitPerCpu => self.runqueue_wait_per_cpu.unwrap_or(f64::NAN),
            Metric::NeighbourShare => self.neighbour_share,
            Metric::LateHitRatio => self.late_hit_ratio,
            Metric::DescriptorGrowthPerS => self.descriptor_growth_per_s,
            Metric::JournalledShare => self.journalled_share,
            Metric::ResidentGrowthMibPerS => self.resident_growth_mib_per_s,
            Metric::RetriesAnsweredOnce => self.retries_answered_once,
            Metric::CanaryP99Ms => runtime.late_p99_us as f64 / 1e3,
            Metric::BusyShare => runtime.busy_share,
            // Without a cgroup to read, NaN fails every bound.
            Metric::ThrottledMsPerS => self
                .throttled_ms
                .map_or(f64::NAN, |ms| ms / seconds.max(1e-9)),
            // Without an incident or an open loop there is nothing to recover from:
            // NaN fails every bound, so a scenario that asks for it without either fails.
            Metric::RecoveryS => match (self.incident_end_s, self.open_loop) {
                (Some(ended), true) => {
                    let goodput: Vec<GoodputSecond> = report
                        .seconds
                        .iter()
                        .map(|s| GoodputSecond::of(&s.line))
                        .collect();
                    recovery_s(&goodput, ended, RECOVERED_SHARE)
                }
                _ => f64::NAN,
            },
        }
    }
}
