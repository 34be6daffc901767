//! What must hold before a check sends anything: the server in the
//! exercise's scenario and its world (its settings and its CPU limit), on a
//! machine that can show the exercise, with nothing pending from an earlier
//! load and no other load beside it.

use std::time::Duration;

use anyhow::Context;
use simulator_api::client;
use simulator_api::load::Load;

use super::metrics;
use super::Stop;
use simulator_api::OsFeature;
use simulator_service::scenario::Scenario;

/// What must hold before the check sends anything: the server answers in the
/// exercise's scenario, with no incident in force (one begun by hand is waited
/// out), in the scenario's world, with nothing pending and no other load; and a
/// client change the ticket's load takes. The load to run, or why not.
pub(super) async fn preflight(
    scenario: &Scenario,
    target: &str,
    client_change: &[String],
) -> Result<Load, Stop> {
    let refuse = |reason: String| Err(Stop::Refused(reason));
    if scenario.check.is_empty() {
        return refuse(format!(
            "scenario {} has no [[check]] conditions",
            scenario.visible_name()
        ));
    }
    let mut stats = client::stats(target).await.with_context(|| {
        format!(
            "no server answers at {target} (is it running? `workshop start {}`)",
            scenario.visible_name()
        )
    })?;
    // A server that hides its answers names its exercise, one that shows them the cause.
    if stats.scenario != scenario.name && stats.scenario != scenario.visible_name() {
        return refuse(format!(
            "the server at {target} runs scenario {}, not {}: the exercise is judged on its own scenario (`workshop start {}`)",
            stats.scenario,
            scenario.visible_name(),
            scenario.visible_name()
        ));
    }
    // An incident begun by hand (the page's replay) ends by itself: wait it out,
    // so the check's window begins in the scenario's world and with its own.
    if let Some(incident) = &stats.incident {
        let left = Duration::from_millis(incident.lasts_ms.saturating_sub(incident.elapsed_ms));
        eprintln!(
            "waiting {} s for the incident in force to end (the check begins its own)",
            left.as_secs_f64().ceil()
        );
        tokio::time::sleep(left + Duration::from_millis(200)).await;
        stats = client::stats(target).await?;
        if stats.incident.is_some() {
            return refuse(
                "an incident is still in force; the check begins its own: check again when it has ended".into(),
            );
        }
    }
    if let Some(reason) = world_moved(&stats.config, scenario) {
        return refuse(reason);
    }
    if let Some(reason) = cpu_limit_moved(stats.cpu_cgroup.as_ref(), scenario) {
        return refuse(reason);
    }
    if let Some(why) = super::super::fit::cannot_judge(scenario, &stats.machine) {
        return refuse(format!(
            "this machine cannot show exercise {}: {why}",
            scenario.visible_name()
        ));
    }
    if let Some(why) = figure_missing(scenario, stats.connections.listen_drops) {
        return refuse(format!(
            "this server cannot show exercise {}: {why}",
            scenario.visible_name()
        ));
    }
    let load = match scenario.load_with(client_change) {
        Ok(load) => load,
        Err(e) => return refuse(format!("--client-change: {e}")),
    };
    match drained(target, stats).await? {
        Drain::Empty => Ok(load),
        Drain::Pending(left) => refuse(format!(
            "{left} persists left by an earlier load are still pending after {} s: the check counts only what happens to its own requests, so it starts on a server with nothing pending; wait for them, or restart the server (`workshop start {}`)",
            MAX_DRAIN_WAIT.as_secs(),
            scenario.visible_name()
        )),
        Drain::LoadRunning(new) => refuse(format!(
            "the server started {new} requests before the check sent any: stop any other load (the check brings its own) and check again"
        )),
    }
}

/// Why the server does not give a figure one of the scenario's conditions
/// reads, on an OS that should (`fit::cannot_judge` has told the other OSes
/// already): the listener's drops need `SO_MEMINFO`'s drop count
/// (`platform/listener.rs`), so without it the condition could never
/// hold, and the attendee hears so before any load rather than after a window.
fn figure_missing(scenario: &Scenario, listen_drops: Option<u64>) -> Option<String> {
    let reads_drops =
        metrics::named_in(scenario).any(|m| m.needs() == Some(OsFeature::ListenerDrops));
    (reads_drops && listen_drops.is_none()).then(|| {
        "its condition on the packets the listener dropped needs the kernel's count for one socket (`SO_MEMINFO`), which this server's kernel did not give (/stats.connections.listen_drops is null)".to_owned()
    })
}

/// The longest the check waits for persists an earlier load left pending.
pub const MAX_DRAIN_WAIT: Duration = Duration::from_secs(30);

/// Waits (at most [`MAX_DRAIN_WAIT`]) until the server has no persist pending
/// (in flight or queued) from before the check, so that every persist counted in
/// the window is one of the check's own elements: a backlog left by an
/// observation load drains at the fixed rate and would pass for throughput (a
/// "fix" that refused every request passed so). A load still running keeps
/// persists pending for ever, and waiting it out would hide it from the check's
/// own test for a load beside it: new requests while waiting end the wait.
async fn drained(target: &str, mut stats: simulator_api::Stats) -> anyhow::Result<Drain> {
    let pending = |s: &simulator_api::Stats| s.persists_in_flight + s.persists_queued;
    let started = stats.counts.requests_started;
    let deadline = tokio::time::Instant::now() + MAX_DRAIN_WAIT;
    if pending(&stats) > 0 {
        eprintln!(
            "waiting for {} persists left by an earlier load (at most {} s)",
            pending(&stats),
            MAX_DRAIN_WAIT.as_secs()
        );
    }
    while pending(&stats) > 0 {
        if tokio::time::Instant::now() >= deadline {
            return Ok(Drain::Pending(pending(&stats)));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        stats = client::stats(target).await?;
        let new = stats.counts.requests_started.saturating_sub(started);
        if new > 0 {
            return Ok(Drain::LoadRunning(new));
        }
    }
    Ok(Drain::Empty)
}

/// What [`drained`] found.
enum Drain {
    /// Nothing pending: the window may start.
    Empty,
    /// Still pending after [`MAX_DRAIN_WAIT`].
    Pending(u64),
    /// Requests arrived while waiting: another load is running.
    LoadRunning(u64),
}

/// Why the server's world is not the scenario's, if it is not: every world
/// setting (the store, the network, the work's cost, the timer) that differs, from
/// what to what. However it moved (`PUT /admin/config`, a flag, a `--config` file,
/// an edited scenario file), a fix changes the service only.
pub fn world_moved(config: &simulator_api::Settings, scenario: &Scenario) -> Option<String> {
    let moved = config.world_changes(&scenario.settings());
    if moved.is_empty() {
        return None;
    }
    let list: Vec<String> = moved
        .iter()
        .map(|(key, from, to)| format!("{key} moved from `{from}` to `{to}`"))
        .collect();
    Some(format!(
        "the world differs from scenario {}'s: {}. These settings are the world the ticket takes as given (the store, the network, the cost of the work); a fix changes the service only. Put them back (`PUT /admin/config {{\"scenario\": \"{}\"}}` restores the scenario) and check again",
        scenario.visible_name(),
        list.join("; "),
        scenario.visible_name()
    ))
}

/// Why the CPU limit the server runs under is not the world's, where a scenario
/// gives it one: the settings may be the scenario's while the cgroup's file was
/// written by hand (a raised quota, a shorter period, no limit), or the server
/// runs in a group it did not make with another limit.
pub fn cpu_limit_moved(
    group: Option<&simulator_api::CpuCgroup>,
    scenario: &Scenario,
) -> Option<String> {
    let world = scenario.settings();
    if world.cpu_quota.is_zero() {
        return None;
    }
    let want = (
        world.cpu_quota.as_micros() as u64,
        world.cpu_period.as_micros() as u64,
    );
    let has = group.map(|g| (g.quota_us, g.period_us));
    if has == Some((Some(want.0), want.1)) {
        return None;
    }
    let limit = |quota: Option<u64>, period: u64| match quota {
        Some(q) => format!("{} us per {} us", q, period),
        None => "no limit".to_owned(),
    };
    let found = match group {
        Some(g) => format!(
            "its cgroup {} allows {}",
            g.path,
            limit(g.quota_us, g.period_us)
        ),
        None => "no cgroup cpu controller could be read".to_owned(),
    };
    Some(format!(
        "the server's CPU limit is not scenario {}'s world: {found}, the world is {}. A raised quota, a shorter period or no limit is a world change (the container's limit is given; the service must live within it): restart the server (`workshop start {}`) and check again",
        scenario.visible_name(),
        limit(Some(want.0), want.1),
        scenario.visible_name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use simulator_service::scenario;

    #[test]
    fn a_moved_world_is_named_and_a_fix_to_the_service_is_not() {
        for s in scenario::bundled().unwrap() {
            let settings = s.settings();
            assert_eq!(world_moved(&settings, &s), None, "{}", s.name);
            for fix in &s.fixes {
                let fixed = settings.clone().with(&fix.config);
                assert_eq!(
                    world_moved(&fixed, &s),
                    None,
                    "{}: fix {} must change the service only",
                    s.name,
                    fix.name
                );
            }
            let faster_store = simulator_api::SettingsUpdate {
                persist_latency: Some(simulator_api::Delay::fixed(Duration::from_micros(250))),
                ..Default::default()
            };
            let reason = world_moved(&settings.clone().with(&faster_store), &s).unwrap();
            assert!(
                reason.contains("persist_latency moved from `") && reason.contains("` to `250us`"),
                "{reason}"
            );
        }
    }

    #[test]
    fn an_exercise_whose_figure_this_os_lacks_is_refused_before_any_load() {
        let accept_queue = Scenario::load("accept-queue").unwrap();
        let why = figure_missing(&accept_queue, None).unwrap();
        assert!(why.contains("SO_MEMINFO"), "{why}");
        assert_eq!(figure_missing(&accept_queue, Some(0)), None);
        let other = Scenario::load("retry-storm").unwrap();
        assert_eq!(figure_missing(&other, None), None);
    }

    #[test]
    fn a_cpu_limit_other_than_the_worlds_is_refused() {
        let mut s = Scenario::original();
        assert_eq!(cpu_limit_moved(None, &s), None, "no limit in the world");
        s.config.cpu_quota = Some(Duration::from_millis(100));
        let group = |quota_us: Option<u64>, period_us: u64| simulator_api::CpuCgroup {
            path: "/sys/fs/cgroup/cpu/isim-serve-1".into(),
            quota_us,
            period_us,
            ..Default::default()
        };
        assert_eq!(
            cpu_limit_moved(Some(&group(Some(100_000), 100_000)), &s),
            None
        );
        for (moved, said) in [
            (
                group(Some(200_000), 100_000),
                "allows 200000 us per 100000 us",
            ),
            (group(Some(10_000), 10_000), "allows 10000 us per 10000 us"),
            (group(None, 100_000), "allows no limit"),
        ] {
            let reason = cpu_limit_moved(Some(&moved), &s).unwrap();
            assert!(
                reason.contains(said) && reason.contains("world change"),
                "{reason}"
            );
        }
        assert!(cpu_limit_moved(None, &s).unwrap().contains("no cgroup"));
    }
}
