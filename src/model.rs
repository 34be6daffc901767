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
//! writes at once (C = store_concurrency). The path passes
//! at most the smallest of these; a task per element with nothing else bounding it
//! has no such limit.

use simulator_api::settings::{AdmissionKind, PermitUntil, PersistenceKind, WhenFull};
use simulator_api::{Model, Settings};

use crate::observe::nanos;
use crate::scenario::Scenario;

/// The model for `settings`, with the scenario's load and first fix.
pub fn predict(settings: &Settings, scenario: &Scenario) -> Model {
    let persist = settings.persist_latency.mean();
    let persist_s = persist.as_secs_f64();
    let persist_ms = persist_s * 1e3;
    let mut bounds: Vec<(f64, String)> = Vec::new();
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
    let tightest = bounds
        .into_iter()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .filter(|_| persist_s > 0.0);
    let (capacity_per_s, limited_by) = match tightest {
        Some((concurrency, why)) => (Some(concurrency / persist_s), why),
        None => (
            None,
            "nothing: no part bounds how many persist at once".to_owned(),
        ),
    };
    let mut model = Model {
        capacity_per_s,
        limited_by,
        persist_mean_ns: nanos(persist),
        lifetime_unblocked_ns: nanos(settings.network_delay.mean() * 2),
        think_time_ns: nanos(scenario.think_time()),
        saturation_clients: None,
        fix: scenario.fixes.first().cloned(),
    };
    model.saturation_clients = model.saturation_at(scenario.think_time().as_secs_f64());
    model
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_original_plateaus_at_8_over_60ms_and_saturates_near_134_clients() {
        let scenario = Scenario::original();
        let model = predict(&scenario.settings(), &scenario);
        assert!((model.capacity_per_s.unwrap() - 133.33).abs() < 0.01);
        assert_eq!(model.lifetime_unblocked_ns, 3_000_000);
        assert!((model.saturation_clients.unwrap() - 133.73).abs() < 0.01);
        assert!(model.limited_by.contains("8 permits"));
        assert_eq!(model.fix.unwrap().name, "permits-per-client");
    }

    #[test]
    fn a_permit_held_only_for_the_hand_off_no_longer_bounds_persists() {
        let scenario = Scenario::original();
        let settings = Settings {
            permit_until: PermitUntil::HandOff,
            persistence: PersistenceKind::Pool,
            persist_workers: 16,
            persist_latency: simulator_api::Delay::fixed(Duration::from_millis(60)),
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
