//! Whether this machine can show an exercise as its page tells it, and what to
//! say plainly when it cannot, instead of a wrong lesson.
//!
//! Measured (tests/exercises_anywhere.rs): every exercise shows its symptom and
//! its cure with the server on one core and capped at half a core by a cgroup
//! quota with a 10 ms period, and the CPU work is calibrated in CPU time, so a
//! slower laptop costs the same (its closed-loop load slows with the server, so
//! even a core too few for the ticket's 26 works a second shows the cure). What
//! no fix cures is a quota with a long period: once the work has spent the quota,
//! the kernel stops every thread of the process until the next period, and with
//! the usual 100 ms period the runtime stalls for tens of milliseconds whatever
//! the fix (blocking-runtime at 0.5 cores: the canary's p99 stayed 47 ms after
//! spawn-blocking-limited; with a 10 ms period, 2-3 ms).

use simulator_api::settings::WorkKind;
use simulator_api::Machine;

use crate::scenario::Scenario;

/// What this machine cannot show of `scenario`, in words; empty when it can.
pub fn warnings(scenario: &Scenario, machine: &Machine) -> Vec<String> {
    let mut said = Vec::new();
    if scenario.settings().work != WorkKind::None && machine.cpu_quota_cores.is_some() {
        said.push(
            "a cgroup CPU quota throttles every thread of the server together once the work has spent it; \
             with the kernel's usual 100 ms quota period the timer canary then stalls for tens of milliseconds whatever the fix \
             (a 10 ms period, `cpu.max = \"Q 10000\"`, behaves like a slower core and the cure shows)"
                .to_owned(),
        );
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario;

    fn machine(cores: usize, quota: Option<f64>) -> Machine {
        Machine {
            cores,
            cpu_quota_cores: quota,
            ..Machine::default()
        }
    }

    #[test]
    fn one_core_and_more_show_every_exercise() {
        for s in scenario::bundled().unwrap() {
            for cores in [1, 2, 64] {
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
}
