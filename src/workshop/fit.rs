//! Whether this machine can show an exercise as its page tells it, and what to
//! say plainly when it cannot, instead of a wrong lesson.
//!
//! Measured (tests/suite/workshop/exercises.rs): every exercise shows its symptom and
//! its cure with the server on one core and capped at half a core by a cgroup
//! quota with a 10 ms period, and the CPU work is calibrated in CPU time, so a
//! slower laptop costs the same (its closed-loop load slows with the server, so
//! even a core too few for the ticket's 26 works a second shows the cure). What
//! no fix cures is a quota with a long period: once the work has spent the quota,
//! the kernel stops every thread of the process until the next period, and with
//! the usual 100 ms period the runtime stalls for tens of milliseconds whatever
//! the fix (blocking-runtime at 0.5 cores: the canary's p99 stayed 47 ms after
//! spawn-blocking-limited). With a 10 ms period the stalls are 5-10 ms, now and
//! then two in a row, and the cure shows in the tail's size. So the suite holds
//! the half-core canary to its bound plus two periods (tests/suite/workshop/exercises.rs;
//! the figures, before and after, are the guide's tested range:
//! docs/workshop/reference.md).
//!
//! The cpu-quota exercise gives the server a quota of its own (the world's
//! `cpu_quota`), and two machines cannot show it at all: one whose CPUs the
//! server may use are no more than the quota (a server on one core cannot spend
//! more than a one-core quota, so nothing is ever throttled, fix or not), and one
//! that already holds the server under a tighter quota above its own group (the
//! throttling then happens up there, where the server's `cpu.stat` does not
//! count it). There the check refuses to judge and the figures are not measured
//! ([`cannot_judge`]).
//!
//! The noisy neighbour (exercise 14) cannot be shown under a CPU quota either:
//! the neighbour the server starts shares the server's cgroup, so the two are
//! one container, throttled together (measured at half a core: 5.7-6.4 ms
//! waited per ms run after the neighbour was demoted, against 0.6-0.7 on one
//! core and on two).
//!
//! An exercise whose world or check needs a figure of the kernel's that the
//! server's OS does not give (a cgroup, the listener's drops: `platform/os.rs`)
//! cannot be shown there either, and `list`, `start` and `check` say so before
//! any load rather than after a window.

use simulator_api::settings::WorkKind;
use simulator_api::{Machine, OsFeature};

use super::check::metrics;
use simulator_service::scenario::Scenario;

/// What this machine cannot show of `scenario`, in words; empty when it can.
pub fn warnings(scenario: &Scenario, machine: &Machine) -> Vec<String> {
    let mut said = Vec::new();
    if let Some(why) = cannot_judge(scenario, machine) {
        said.push(why);
        return said;
    }
    let settings = scenario.settings();
    if settings.work != WorkKind::None
        && settings.cpu_quota.is_zero()
        && machine.cpu_quota_cores.is_some()
    {
        said.push(
            "a cgroup CPU quota throttles every thread of the server together once the work has spent it. \
             With the kernel's usual 100 ms quota period the timer canary then stalls for tens of milliseconds, whatever the fix. \
             With a 10 ms period (`cpu.max = \"Q 10000\"`) it stalls 5-10 ms at a time, and the cure shows: a p99 of 10-20 ms against 140-280 before"
                .to_owned(),
        );
    }
    said
}

/// The kernel's figures `scenario` cannot be shown without: its world's CPU
/// quota and its conditions' readings.
pub fn needs(scenario: &Scenario) -> Vec<OsFeature> {
    let world = (!scenario.settings().cpu_quota.is_zero()).then_some(OsFeature::Cgroups);
    let mut needs: Vec<OsFeature> = Vec::new();
    for need in world
        .into_iter()
        .chain(metrics::named_in(scenario).filter_map(|m| m.needs()))
    {
        if !needs.contains(&need) {
            needs.push(need);
        }
    }
    needs
}

/// Why `machine` cannot show `scenario` at all, where it cannot: its OS lacks a
/// figure the exercise needs, or its CPUs or an outer quota hide the
/// exercise's own quota.
pub fn cannot_judge(scenario: &Scenario, machine: &Machine) -> Option<String> {
    let lacking: Vec<&str> = needs(scenario)
        .into_iter()
        .filter(|need| machine.os_lacks.contains(need))
        .map(OsFeature::describe)
        .collect();
    if !lacking.is_empty() {
        return Some(format!(
            "it needs {}, which the kernel gives on Linux and not on {}. docs/workshop/reference.md's table says what runs where",
            lacking.join(" and "),
            if machine.os.is_empty() { "this server's OS" } else { machine.os.as_str() }
        ));
    }
    let settings = scenario.settings();
    if settings.neighbour_threads_per_cpu > 0 {
        if let Some(quota) = machine.cpu_quota_cores {
            return Some(format!(
                "a CPU quota ({quota:.2} cores) holds the server, and so the neighbour it starts, in one cgroup. \
                 They are one container then, throttled together. \
                 No demotion of the neighbour gives the server back the quota they share (that is exercise 8's lesson). \
                 Run it outside that limit"
            ));
        }
    }
    if settings.cpu_quota.is_zero() {
        return None;
    }
    let quota = settings.cpu_quota.as_secs_f64() / settings.cpu_period.as_secs_f64();
    let cpus = machine.affinity_cpus.max(1);
    if cpus as f64 <= quota {
        return Some(format!(
            "the server may run on {cpus} CPU{} and its quota is {quota:.2} cores. \
             It can never spend more than the quota, so nothing is throttled, with or without a fix. \
             The exercise needs more CPUs than the quota. \
             (Pinning a container to as many CPUs as its quota, a cpuset instead of a quota, is the platform's own cure for this.)",
            if cpus == 1 { "" } else { "s" }
        ));
    }
    match machine.cpu_quota_cores {
        Some(outer) if outer < quota - 1e-6 => Some(format!(
            "a tighter CPU quota ({outer:.2} cores) than the exercise's ({quota:.2}) holds the server in a cgroup above its own. \
             The kernel throttles it there, where the server's cpu.stat does not count it. \
             Run it outside that limit"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use simulator_service::scenario;

    fn machine(cores: usize, quota: Option<f64>) -> Machine {
        Machine {
            cores,
            affinity_cpus: cores,
            cpu_quota_cores: quota,
            ..Machine::default()
        }
    }

    #[test]
    fn one_core_and_more_show_every_exercise_but_a_quota_of_its_own() {
        for s in scenario::bundled().unwrap() {
            let own_quota = !s.settings().cpu_quota.is_zero();
            for cores in [1, 2, 64] {
                if own_quota && cores == 1 {
                    continue;
                }
                assert_eq!(
                    warnings(&s, &machine(cores, None)),
                    Vec::<String>::new(),
                    "{}",
                    s.name
                );
            }
        }
    }

    #[test]
    fn a_quota_under_cpu_work_is_named() {
        let s = scenario::Scenario::load("blocking-runtime").unwrap();
        let said = warnings(&s, &machine(1, Some(0.5)));
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("100 ms quota period"), "{said:?}");
        // Without CPU work, a quota changes nothing worth saying.
        let original = scenario::Scenario::original();
        assert!(warnings(&original, &machine(1, Some(0.5))).is_empty());
    }

    #[test]
    fn a_quota_exercise_needs_more_cpus_than_its_quota_and_no_tighter_one_above() {
        let s = scenario::Scenario::load("cpu-quota").unwrap();
        assert_eq!(cannot_judge(&s, &machine(2, None)), None);
        // Its own group's quota is the tightest: that is the exercise.
        assert_eq!(cannot_judge(&s, &machine(2, Some(1.0))), None);
        let one_core = cannot_judge(&s, &machine(1, None)).unwrap();
        assert!(
            one_core.contains("1 CPU and its quota is 1.00 cores"),
            "{one_core}"
        );
        assert_eq!(warnings(&s, &machine(1, None)), vec![one_core]);
        let outer = cannot_judge(&s, &machine(2, Some(0.5))).unwrap();
        assert!(outer.contains("tighter CPU quota (0.50 cores)"), "{outer}");
        let other = scenario::Scenario::load("blocking-runtime").unwrap();
        assert_eq!(cannot_judge(&other, &machine(1, Some(0.5))), None);
    }

    #[test]
    fn a_neighbour_under_a_quota_is_one_container_and_is_not_judged() {
        let s = scenario::Scenario::load("noisy-neighbour").unwrap();
        assert_eq!(cannot_judge(&s, &machine(1, None)), None);
        assert_eq!(cannot_judge(&s, &machine(2, None)), None);
        let quota = cannot_judge(&s, &machine(1, Some(0.5))).unwrap();
        assert!(quota.contains("one container"), "{quota}");
    }

    #[test]
    fn an_os_without_the_kernels_figures_is_told_which_exercises_it_cannot_show() {
        let elsewhere = Machine {
            os: "macos".into(),
            os_lacks: vec![
                OsFeature::Cgroups,
                OsFeature::ListenerDrops,
                OsFeature::TcpCounters,
                OsFeature::RunQueueWait,
            ],
            ..machine(8, None)
        };
        let mut refused = Vec::new();
        for s in scenario::bundled().unwrap() {
            if let Some(why) = cannot_judge(&s, &elsewhere) {
                assert!(why.contains("not on macos"), "{why}");
                assert_eq!(warnings(&s, &elsewhere), vec![why]);
                refused.push(s.name.clone());
            }
            // Linux gives them all.
            assert_eq!(cannot_judge(&s, &machine(8, None)), None, "{}", s.name);
        }
        assert_eq!(refused, ["cpu-quota", "accept-queue", "noisy-neighbour"]);
        let quota = cannot_judge(&scenario::Scenario::load("cpu-quota").unwrap(), &elsewhere);
        assert!(quota.unwrap().contains("CPU cgroups"));
    }
}
