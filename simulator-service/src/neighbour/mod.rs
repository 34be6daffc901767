//! The noisy neighbour (exercise 14): a process that is not the server, as a
//! batch job on the same host is, with more CPU-bound threads than the CPUs it
//! may use, so the server's threads are runnable and wait for a CPU while its
//! own CPU use looks lower than usual. `system-simulator neighbour` is the
//! process itself (the command's `src/neighbour.rs`); a world with
//! `neighbour_threads_per_cpu` starts one beside the server and reads its work
//! (`beside.rs`). This file holds what both sides agree on: its name, how often
//! it reports, and the report's line.
//!
//! Its work is counted, so that a fix which kills it or stops it is seen: each
//! thread runs a fixed unit of integer work over and over, and every 25 ms the
//! process prints the units done so far, `work N`, on stdout. A closed stdout
//! (the server that started it is gone) ends it within those 25 ms, whatever
//! killed the server. Every thread, the main one too, is named
//! [`PROCESS_NAME`], so `pgrep -x isim-neighbour` finds it and `pgrep -w -x
//! isim-neighbour` its threads, for `renice`, `chrt` and `taskset`.

pub mod beside;

use std::io::Write;
use std::time::Duration;

/// What the neighbour's process and threads are called (`comm`, 15 bytes at most).
pub const PROCESS_NAME: &str = "isim-neighbour";

/// How often it prints its work (a rate over a second is then within 2.5 %).
pub const REPORT_EVERY: Duration = Duration::from_millis(25);

/// The largest number of threads it runs.
pub const MAX_THREADS: usize = 1024;

/// One report of the units done so far: the line [`parse_report`] reads.
pub fn write_report(out: &mut impl Write, done: u64) -> std::io::Result<()> {
    writeln!(out, "work {done}")?;
    out.flush()
}

/// The units done so far, from one of its `work N` lines.
pub fn parse_report(line: &str) -> Option<u64> {
    line.strip_prefix("work ")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_line_is_read_and_anything_else_is_not() {
        assert_eq!(parse_report("work 42\n"), Some(42));
        assert_eq!(parse_report("work -1"), None);
        assert_eq!(parse_report("hello"), None);
    }
}
