//! What the server can tell about its own process: the CPU time it has used, so a
//! sweep can put the server's CPU beside each step as the seed's cpu-usage script
//! did, and the standard Prometheus process metrics for `/metrics`.
//!
//! The process metrics are read by the platform (`platform/process_figures.rs`:
//! the `metrics-process` crate, or libc's calls on macOS), but written out here rather than
//! through its `Collector`: that one records through the `metrics` facade, whose
//! counters are whole numbers, so `process_cpu_seconds_total` would only ever move
//! by whole seconds. The CPU figure is [`cpu_ns`] (nanoseconds, the same figure
//! `/stats` shows), not the crate's clock ticks (10 ms on Linux), written with
//! its fraction under the names and types Prometheus' client libraries use.

/// User plus system CPU time of this process since it started, in nanoseconds
/// (`CLOCK_PROCESS_CPUTIME_ID` on Unix, `GetProcessTimes` on Windows), or `None`
/// where the platform refuses to say.
pub fn cpu_ns() -> Option<u64> {
    let used = cpu_time::ProcessTime::try_now().ok()?.as_duration();
    Some(super::nanos(used))
}

/// The standard process metrics in Prometheus' text format, those the platform
/// reports (Linux: all of them).
pub fn exposition() -> String {
    let m = crate::platform::process_figures::read();
    let whole = |v: Option<u64>| v.map(|v| v as f64);
    let families: [(&str, &str, &str, Option<f64>); 8] = [
        (
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
            // Nanoseconds, not the crate's clock ticks.
            cpu_ns().map(|ns| ns as f64 / 1e9),
        ),
        (
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            whole(m.resident_memory_bytes),
        ),
        (
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size in bytes.",
            whole(m.virtual_memory_bytes),
        ),
        (
            "process_virtual_memory_max_bytes",
            "gauge",
            "Maximum amount of virtual memory available in bytes (0: unlimited).",
            whole(m.virtual_memory_max_bytes),
        ),
        (
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            whole(m.open_fds),
        ),
        (
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors (0: unlimited).",
            whole(m.max_fds),
        ),
        (
            "process_start_time_seconds",
            "gauge",
            "Start time of the process since unix epoch in seconds.",
            whole(m.start_time_seconds),
        ),
        (
            "process_threads",
            "gauge",
            "Number of OS threads in the process.",
            whole(m.threads),
        ),
    ];
    let mut out = String::new();
    for (name, kind, help, value) in families {
        if let Some(value) = value {
            write_family(&mut out, name, kind, help, value);
        }
    }
    out
}

/// One metric family of one sample in Prometheus' text format, for the figures
/// the `metrics` facade cannot carry (fractional counters).
pub fn write_family(out: &mut String, name: &str, kind: &str, help: &str, value: f64) {
    out.push_str(&format!(
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n\n"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_process_metrics_are_there_with_a_fractional_cpu() {
        let text = exposition();
        for name in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_open_fds",
            "process_start_time_seconds",
        ] {
            assert!(
                text.contains(&format!("\n{name} ")),
                "{name} missing:\n{text}"
            );
        }
        let cpu: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("process_cpu_seconds_total "))
            .unwrap()
            .parse()
            .unwrap();
        assert!(cpu > 0.0 && cpu.fract() != 0.0, "cpu {cpu}");
    }

    #[test]
    fn cpu_time_grows_with_work() {
        let before = cpu_ns().expect("this platform reports process CPU time");
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let after = cpu_ns().unwrap();
        assert!(after > before, "{before} -> {after} after work ({x})");
    }
}
