//! What the server can tell about its own process: the CPU time it has used, so a
//! sweep can put the server's CPU beside each step as the seed's cpu-usage script
//! did.

/// User plus system CPU time of this process since it started, in nanoseconds
/// (`CLOCK_PROCESS_CPUTIME_ID` on Unix, `GetProcessTimes` on Windows), or `None`
/// where the platform refuses to say.
pub fn cpu_ns() -> Option<u64> {
    let used = cpu_time::ProcessTime::try_now().ok()?.as_duration();
    Some(super::events::nanos(used))
}

#[cfg(test)]
mod tests {
    use super::*;

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
