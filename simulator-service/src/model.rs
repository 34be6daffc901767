//! What queueing theory predicts from the settings in force: the capacity of the
//! request path by Little's law and the client count at which blocking becomes
//! total. `/stats.model` reports it, and the sweep and the demo print it beside
//! what they measure, so the prediction lives in one place.
//!
//! Little's law: a part that lets at most C elements be in progress, each for a
//! mean time W, passes at most C / W a second. Admission by semaphore holds each
//! permit for a whole persist (C = permits, W = mean persist time) unless the permit
//! is held only for the hand-off; a persistence pool keeps each worker busy for a
//! whole persist (C = workers); a store with `store_concurrency` serves that many
//! writes at once (C = store_concurrency); CPU work runs on at most as many threads
//! as its place allows and the machine has cores (C), each work for its CPU time
//! (W = `work_cpu`, or `work_bytes` at the throughput calibrated here). The path
//! passes at most the smallest of these; a task per element with nothing else
//! bounding it has no such limit.
//!
//! With a `timer_tick`, every simulated delay ends on the next tick after it and
//! then wakes on tokio's own next millisecond, uncalibrated, as the original's
//! did: on average about one tick later than its mean (measured with a 1 ms tick:
//! the plateau 7,761/min, a persist of 61.8 ms), and the model adds one tick.

use std::time::Duration;

use simulator_api::load::Pacing;
use simulator_api::settings::{
    AdmissionKind, PermitUntil, PersistenceKind, WhenFull, WorkKind, WorkOn,
};
use simulator_api::{Model, RetriedLoad, Settings};

use crate::observe::{machine, nanos};
use crate::request_path::work::calibration;
use crate::scenario::Scenario;

/// The model for `settings`, with the scenario's load and first fix.
pub fn predict(settings: &Settings, scenario: &Scenario) -> Model {
    let tick = settings.timer_tick;
    let persist = settings.persist_latency.mean() + tick;
    let persist_s = persist.as_secs_f64();
    let persist_ms = persist_s * 1e3;
    let bounds = concurrency_bounds(settings, persist_ms);
    // Each bound as a rate: C / W.
    let mut rates: Vec<(f64, String)> = match persist_s > 0.0 {
        true => bounds
            .into_iter()
            .map(|(c, why)| (c / persist_s, why))
            .collect(),
        false => Vec::new(),
    };
    let work = work_cost(settings);
    if let Some(cost) = work.filter(|w| !w.is_zero()) {
        let (threads, place) = work_threads(settings);
        rates.push((
            threads as f64 / cost.as_secs_f64(),
            format!(
                "CPU work: {threads} at a time ({place}), each {:.1} ms of CPU",
                cost.as_secs_f64() * 1e3
            ),
        ));
    }
    let tightest = rates.into_iter().min_by(|a, b| a.0.total_cmp(&b.0));
    let (capacity_per_s, limited_by) = match tightest {
        Some((rate, why)) => (Some(rate), why),
        None => (
            None,
            "nothing: no part bounds how many persist at once".to_owned(),
        ),
    };
    let mut model = Model {
        capacity_per_s,
        limited_by,
        persist_mean_ns: nanos(persist),
        lifetime_unblocked_ns: nanos(
            (settings.network_delay.mean() + tick) * 2 + work.unwrap_or_default(),
        ),
        think_time_ns: nanos(scenario.think_time()),
        saturation_clients: None,
        fix: scenario.fixes.first().cloned(),
        retried: None,
    };
    model.saturation_clients = model.saturation_at(scenario.think_time().as_secs_f64());
    model.retried = retried(&model, &scenario.load);
    model
}

/// Each part that holds elements for a whole persist, as (how many at once, why):
/// the store's writes, the admission's permits, the persistence pool's workers.
fn concurrency_bounds(settings: &Settings, persist_ms: f64) -> Vec<(f64, String)> {
    let mut bounds: Vec<(f64, String)> = Vec::new();
    // The world's bound first: where the service's equals it (retry-storm's gate of
    // 8 in front of a store of 8), the capacity is the world's, since widening
    // the service's part would not raise it, and the tightest bound names the first.
    if settings.store_concurrency > 0 {
        bounds.push((
            settings.store_concurrency as f64,
            format!(
                "the store: {} writes at once, each for a whole persist ({persist_ms:.1} ms){}",
                settings.store_concurrency,
                match settings.persistence {
                    PersistenceKind::TaskPerElement => {
                        "; beyond it writes pile up inside the store without limit"
                    }
                    PersistenceKind::Pool => "",
                }
            ),
        ));
    }
    // The small elements' lane adds its permits (byte-weighting and multipart
    // depend on the sizes, which the model does not know: it counts elements).
    let permits = match settings.small_lane_bytes {
        0 => settings.permits,
        _ => settings.permits.saturating_add(settings.small_lane_permits),
    };
    match (settings.admission, settings.permit_until) {
        (AdmissionKind::Semaphore, PermitUntil::PersistDone) => bounds.push((
            permits as f64,
            format!(
                "admission: {permits} permits{}, each held for a whole persist ({persist_ms:.1} ms){}",
                match settings.small_lane_bytes {
                    0 => String::new(),
                    _ => format!(" ({} in the small elements' lane)", settings.small_lane_permits),
                },
                match settings.when_full {
                    WhenFull::Wait => "",
                    WhenFull::Shed => "; beyond it requests are shed with 503",
                }
            ),
        )),
        // A permit held only for the hand-off bounds hand-offs, which take no time
        // worth modelling: it does not limit persists.
        (AdmissionKind::Semaphore, PermitUntil::HandOff) => {}
    }
    match settings.persistence {
        PersistenceKind::TaskPerElement => {}
        PersistenceKind::Pool => bounds.push((
            settings.persist_workers as f64,
            format!(
                "persistence: {} worker{}, each busy for a whole persist ({persist_ms:.1} ms)",
                settings.persist_workers,
                if settings.persist_workers == 1 {
                    ""
                } else {
                    "s"
                }
            ),
        )),
    }
    bounds
}

/// What retries make of `load` ([`RetriedLoad`]); `None` when its clients do not
/// retry. A retry budget of P % caps the retries at P % of first attempts.
fn retried(model: &Model, load: &simulator_api::Load) -> Option<RetriedLoad> {
    let policy = &load.retry;
    if policy.retries == 0 {
        return None;
    }
    let offered = match load.pacing {
        Pacing::Open { rate, .. } => rate,
        Pacing::Closed { think_time, .. } => {
            model.offered_per_s(load.clients, think_time.as_secs_f64())
        }
    };
    let retries = f64::from(policy.retries);
    let retries = policy
        .budget_percent
        .map_or(retries, |p| retries.min(p / 100.0));
    let attempts = 1.0 + retries;
    let retried_per_s = offered * attempts;
    Some(RetriedLoad {
        offered_per_s: offered,
        timeout_ns: nanos(load.timeout),
        attempts_when_failing: attempts,
        retried_per_s,
        exceeds_capacity: model.capacity_per_s.map(|c| retried_per_s > c),
    })
}

/// The CPU one work costs, where it is known: `work_cpu`, or `work_bytes` at the
/// throughput measured here (unknown until the machine has been measured).
fn work_cost(settings: &Settings) -> Option<Duration> {
    match settings.work {
        WorkKind::None => None,
        WorkKind::Zstd if !settings.work_cpu.is_zero() => Some(settings.work_cpu),
        WorkKind::Zstd => calibration::measured()
            .map(|c| Duration::from_secs_f64(settings.work_bytes as f64 / c.bytes_per_cpu_s)),
    }
}

/// How many works can run at once, and where: never more than the cores.
fn work_threads(settings: &Settings) -> (usize, &'static str) {
    let cores = machine::cores();
    let (threads, place) = match settings.work_on {
        WorkOn::AsyncWorker => (cores, "the async workers, one per core"),
        WorkOn::BlockingPool => (
            machine::pool_size(settings.work_limit),
            "the blocking pool's limit",
        ),
        WorkOn::Rayon => (
            machine::pool_size(settings.work_limit),
            "the rayon pool's threads",
        ),
    };
    let threads = if threads == 0 { cores } else { threads };
    (threads.min(cores).max(1), place)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_original_plateaus_at_8_over_60ms_and_saturates_near_134_clients() {
        let scenario = Scenario::original();
        let model = predict(&scenario.settings(), &scenario);
        // 8 permits / (60 ms + the original's 1 ms tick); 2 x (1.5 ms + 1 ms).
        assert!((model.capacity_per_s.unwrap() - 131.15).abs() < 0.01);
        assert_eq!(model.lifetime_unblocked_ns, 5_000_000);
        assert!((model.saturation_clients.unwrap() - 131.80).abs() < 0.01);
        assert!(model.limited_by.contains("8 permits"));
        assert_eq!(model.fix.unwrap().name, "permits-per-client");
    }

    #[test]
    fn the_retry_storm_is_metastable_by_the_numbers_and_a_budget_is_not() {
        let scenario = Scenario::load("retry-storm").unwrap();
        let model = predict(&scenario.settings(), &scenario);
        // The store's 8 writes / 50 ms, which the gate's 8 permits match: the
        // capacity is named as the world's, and a wider gate leaves it where it is.
        assert!((model.capacity_per_s.unwrap() - 160.0).abs() < 0.01);
        assert!(
            model.limited_by.starts_with("the store: 8 writes"),
            "{}",
            model.limited_by
        );
        let wider_gate = Settings {
            permits: 64,
            ..scenario.settings()
        };
        let wider = predict(&wider_gate, &scenario);
        assert_eq!(wider.capacity_per_s, model.capacity_per_s);
        let storm = model.retried.clone().unwrap();
        assert_eq!(storm.offered_per_s, 112.0, "70 % of the capacity");
        assert_eq!(storm.attempts_when_failing, 4.0);
        assert_eq!(storm.retried_per_s, 448.0);
        assert_eq!(storm.exceeds_capacity, Some(true));
        let budget = scenario
            .load_with(&["--retry-budget".into(), "10%".into()])
            .unwrap();
        let capped = retried(&model, &budget).unwrap();
        assert!((capped.retried_per_s - 123.2).abs() < 0.01);
        assert_eq!(capped.exceeds_capacity, Some(false));
        assert!(retried(&model, &Scenario::original().load).is_none());
    }

    #[test]
    fn a_permit_held_only_for_the_hand_off_no_longer_bounds_persists() {
        let scenario = Scenario::original();
        let settings = Settings {
            permit_until: PermitUntil::HandOff,
            persistence: PersistenceKind::Pool,
            persist_workers: 16,
            persist_latency: simulator_api::Delay::fixed(Duration::from_millis(60)),
            timer_tick: Duration::ZERO,
            ..scenario.settings()
        };
        let model = predict(&settings, &scenario);
        assert!((model.capacity_per_s.unwrap() - 266.67).abs() < 0.01);
        let unbounded = Settings {
            persistence: PersistenceKind::TaskPerElement,
            ..settings
        };
        assert_eq!(predict(&unbounded, &scenario).capacity_per_s, None);
    }

    #[test]
    fn a_pool_of_fewer_workers_than_permits_sets_the_capacity() {
        let scenario = Scenario::original();
        let settings = Settings {
            persistence: PersistenceKind::Pool,
            persist_workers: 1,
            persist_latency: simulator_api::Delay::fixed(Duration::from_millis(60)),
            timer_tick: Duration::ZERO,
            ..scenario.settings()
        };
        let model = predict(&settings, &scenario);
        assert!((model.capacity_per_s.unwrap() - 16.67).abs() < 0.01);
        assert!(
            model.limited_by.contains("1 worker,"),
            "{}",
            model.limited_by
        );
    }
}
