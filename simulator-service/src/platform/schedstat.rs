//! How long the server's threads have waited for a CPU while runnable: the
//! second field of Linux's `/proc/self/task/TID/schedstat` (nanoseconds on a
//! run queue since the thread began; any user may read it, with the kernel's
//! `CONFIG_SCHED_INFO`, which Debian's, Ubuntu's and Fedora's kernels have),
//! summed over the threads. It is the symptom of a CPU shared with someone
//! else: the threads are ready and someone else's run; the process's own CPU
//! time then looks *lower* than usual. `runqlat.bt` measures the same from the
//! scheduler's tracepoints, as root.
//!
//! Kept as one total that only grows: threads come and go (tokio's blocking
//! pool lets an idle thread exit after 10 s), and a thread's wait would leave
//! the sum with it. Each read adds every thread's growth since the last read
//! (a new thread's whole wait), so a thread that ended keeps what was seen of
//! it; what it waited between the last read and its end is lost, which a read
//! a second (`/stats` under the live view) keeps small.
//!
//! Also here: how the kernel schedules another process's threads (their
//! class and nice value, from `/proc/PID/task/TID/stat`), which the server
//! reads of its neighbour, so the live view marks the moment someone demotes
//! it.
//!
//! Read by hand: three numbers a file; the `procfs` crate reads them too, with
//! a hundred modules this needs none of.

use std::collections::HashMap;
use std::sync::Mutex;

/// The server's threads' run-queue wait since the first read, in nanoseconds;
/// `None` where the kernel does not give it (not Linux, or no schedstat).
pub fn runqueue_wait_ns() -> Option<u64> {
    static SEEN: Mutex<Option<Seen>> = Mutex::new(None);
    let now = threads_now()?;
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    Some(seen.get_or_insert_with(Seen::default).add(&now))
}

/// Each thread's wait at the last read, and the sum of what every read added.
#[derive(Debug, Default)]
struct Seen {
    by_thread: HashMap<u32, u64>,
    total_ns: u64,
    /// Whether a read has happened: the first one only takes the start.
    started: bool,
}

impl Seen {
    /// Adds the growth of each thread in `now` (thread id, wait so far) and
    /// returns the total. The first read is the start: what the threads
    /// waited before it is not counted.
    fn add(&mut self, now: &[(u32, u64)]) -> u64 {
        let first = !self.started;
        self.started = true;
        let mut by_thread = HashMap::with_capacity(now.len());
        for &(tid, wait) in now {
            let before = self.by_thread.get(&tid).copied();
            let grew = match before {
                Some(before) => wait.saturating_sub(before),
                None if first => 0,
                None => wait,
            };
            self.total_ns += grew;
            by_thread.insert(tid, wait);
        }
        self.by_thread = by_thread;
        self.total_ns
    }
}

/// Every thread of this process and its run-queue wait so far.
#[cfg(target_os = "linux")]
fn threads_now() -> Option<Vec<(u32, u64)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        // A thread that ended between the listing and the read: skip it.
        let Ok(text) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            continue;
        };
        let wait = text
            .split_whitespace()
            .nth(1)
            .and_then(|w| w.parse().ok())?;
        found.push((tid, wait));
    }
    (!found.is_empty()).then_some(found)
}

#[cfg(not(target_os = "linux"))]
fn threads_now() -> Option<Vec<(u32, u64)>> {
    None
}

/// How the kernel schedules process `pid`'s threads, in words: `nice 0`,
/// `nice 19`, `idle` (`SCHED_IDLE`), `batch, nice 5`, or `mixed` where they
/// differ; `None` where it cannot be read (gone, or not Linux).
pub fn scheduling_of(pid: u32) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for stat in task_stats(pid)? {
        let Some(words) = scheduling_in(&stat) else {
            continue;
        };
        if !seen.contains(&words) {
            seen.push(words);
        }
    }
    match seen.len() {
        0 => None,
        1 => seen.pop(),
        _ => Some("mixed".into()),
    }
}

/// The class and nice value in one thread's `stat` line: the fields after the
/// `(comm)`, which may hold spaces and parentheses itself, so counted from
/// the last `)`: nice is the 19th field of the line, the policy the 41st.
fn scheduling_in(stat: &str) -> Option<String> {
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `after` starts at field 3 (state).
    let nice: i32 = fields.get(19 - 3)?.parse().ok()?;
    let policy: u32 = fields.get(41 - 3)?.parse().ok()?;
    Some(match policy {
        0 => format!("nice {nice}"),
        3 => format!("batch, nice {nice}"),
        5 => "idle".into(),
        1 => "real-time (FIFO)".into(),
        2 => "real-time (round robin)".into(),
        other => format!("policy {other}"),
    })
}

/// Every thread's `stat` line of process `pid`.
#[cfg(target_os = "linux")]
fn task_stats(pid: u32) -> Option<Vec<String>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    Some(
        tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
            .collect(),
    )
}

#[cfg(not(target_os = "linux"))]
fn task_stats(_pid: u32) -> Option<Vec<String>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_class_and_nice_are_read_past_a_name_with_spaces() {
        // 52 fields, as Linux 6.18 prints them; nice 19, policy 5 (idle).
        let mut fields: Vec<String> = (1..=52).map(|i| i.to_string()).collect();
        fields[1] = "(a (b) c)".into();
        fields[18] = "19".into();
        fields[40] = "5".into();
        assert_eq!(scheduling_in(&fields.join(" ")).as_deref(), Some("idle"));
        fields[40] = "0".into();
        assert_eq!(scheduling_in(&fields.join(" ")).as_deref(), Some("nice 19"));
        assert_eq!(scheduling_in("42 (x) S 1"), None);
    }

    #[test]
    fn this_process_is_scheduled_as_linux_says() {
        if crate::platform::os::lacks().is_empty() {
            let here = scheduling_of(std::process::id()).unwrap();
            assert!(here.starts_with("nice ") || here == "mixed", "{here}");
        }
    }

    #[test]
    fn the_total_grows_by_each_threads_wait_and_keeps_a_thread_that_ended() {
        let mut seen = Seen::default();
        // What the threads waited before the first read is not counted.
        assert_eq!(seen.add(&[(1, 500), (2, 700)]), 0);
        assert_eq!(seen.add(&[(1, 600), (2, 900)]), 300);
        // Thread 2 ended; thread 3 began and waited 50 in its life so far.
        assert_eq!(seen.add(&[(1, 650), (3, 50)]), 400);
        // A reused id reads lower than before: nothing added, never a negative.
        assert_eq!(seen.add(&[(1, 10), (3, 50)]), 400);
    }

    #[test]
    fn this_kernel_gives_it_where_it_should() {
        if crate::platform::os::lacks().is_empty() {
            let first = runqueue_wait_ns().expect("Linux gives schedstat");
            assert!(runqueue_wait_ns().unwrap() >= first);
        }
    }
}
