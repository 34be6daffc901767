//! The kernel's TCP counters of the server's network namespace, read from
//! `/proc/self/net/netstat` (what `nstat` reads; any user may): the count of
//! what happens at the kernel's side of the server's sockets, listen overflows
//! and delayed ACKs, which no probe of the server sees. `/stats.tcp` carries
//! them, so that `trace listener` and `trace delayed-ack` report without a
//! tracer what the scripts count from kernel events.
//!
//! Read by hand: the file is pairs of lines, `TcpExt: NAME ...` and then
//! `TcpExt: VALUE ...`, a dozen lines of text; the `procfs` crate parses it too,
//! but would bring a hundred modules for three numbers.

use simulator_api::TcpCounters;

/// The namespace's counters now; `None` where the file is missing (not Linux)
/// or lacks one of them.
pub fn tcp_counters() -> Option<TcpCounters> {
    let text = std::fs::read_to_string("/proc/self/net/netstat").ok()?;
    from_netstat(&text)
}

fn from_netstat(text: &str) -> Option<TcpCounters> {
    let mut lines = text.lines();
    while let Some(names) = lines.next() {
        let values = lines.next()?;
        let (Some(names), Some(values)) = (
            names.strip_prefix("TcpExt:"),
            values.strip_prefix("TcpExt:"),
        ) else {
            continue;
        };
        let pairs: Vec<(&str, &str)> = names
            .split_whitespace()
            .zip(values.split_whitespace())
            .collect();
        let counter = |name: &str| -> Option<u64> {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, v)| v.parse().ok())
        };
        return Some(TcpCounters {
            listen_overflows: counter("ListenOverflows")?,
            listen_drops: counter("ListenDrops")?,
            delayed_acks: counter("DelayedACKs")?,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counters_are_read_by_name_from_their_pair_of_lines() {
        let text = "TcpExt: SyncookiesSent DelayedACKs ListenOverflows ListenDrops\n\
                    TcpExt: 0 464 157 158\n\
                    IpExt: InNoRoutes\n\
                    IpExt: 0\n";
        assert_eq!(
            from_netstat(text),
            Some(TcpCounters {
                listen_overflows: 157,
                listen_drops: 158,
                delayed_acks: 464,
            })
        );
        assert_eq!(from_netstat("IpExt: InNoRoutes\nIpExt: 0\n"), None);
        assert_eq!(from_netstat("TcpExt: DelayedACKs\nTcpExt: 3\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_machine_has_them() {
        assert!(tcp_counters().is_some());
    }
}
