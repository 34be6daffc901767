//! What the server can tell about its own process: the CPU time it has used, so a
//! sweep can put the server's CPU beside each step as the seed's cpu-usage script
//! did.

/// User plus system CPU time of this process since it started, in nanoseconds, or
/// `None` where the platform does not say (everywhere but Linux for now).
pub fn cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    cpu_ns_from_stat(&stat)
}

/// Reads utime and stime (fields 14 and 15, after the parenthesised command name,
/// which may itself hold spaces) from a `/proc/PID/stat` line. They count clock
/// ticks, which Linux reports at 100 a second (USER_HZ) on every architecture it
/// ships for.
fn cpu_ns_from_stat(stat: &str) -> Option<u64> {
    const NS_PER_TICK: u64 = 10_000_000;
    let after_name = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) * NS_PER_TICK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_user_and_system_ticks_past_a_name_with_spaces() {
        let stat = "4242 (tokio (runtime) w) S 1 4242 4242 0 -1 4194560 1061 0 0 0 \
                    250 31 0 0 20 0 3 0 2049 1234 567";
        assert_eq!(cpu_ns_from_stat(stat), Some(281 * 10_000_000));
        assert_eq!(cpu_ns_from_stat("garbage"), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn reads_this_process_on_linux() {
        assert!(cpu_ns().is_some());
    }
}
