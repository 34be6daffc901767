//! Where the server's threads are, by the wall clock, without root: what the
//! kernel says each thread is doing (`/proc/self/task/TID/stat`'s state and
//! `wchan`, the kernel function a sleeping thread waits in), sampled every
//! [`PERIOD`], and, for the runtime's async workers, whether tokio had parked
//! the worker (waiting for work) or it was inside a task.
//!
//! It is the no-root half of an off-CPU profile, and says less: the kernel
//! names where a thread sleeps (`futex_do_wait`, `do_epoll_wait`,
//! `hrtimer_nanosleep`), not the user stack that asked, so a worker waiting for
//! a lock and one parked on its condvar both sleep in a futex. What tells them
//! apart is tokio's own word: [`note_park`] and [`note_unpark`] run from the
//! runtime's `on_thread_park`/`on_thread_unpark` hooks, so a worker asleep in the
//! kernel while tokio counts it unparked is blocked *inside a task*: the bug
//! class of exercises 3 and 12, shown without a tracer. Which lock, which task,
//! the probes (`trace locks`) or a kernel off-CPU profile (`offcpu.bt`) say.
//!
//! Each sample reads three small files a thread: about 40 us for a server's 20
//! threads here, every 10 ms while asked, nothing otherwise. Linux only (there
//! is no `/proc/self/task` elsewhere: the sample comes back empty).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Folded;

/// How often the threads are read.
pub const PERIOD: Duration = Duration::from_millis(10);

/// Each async worker's parked flag, by thread id, registered at its first park.
static WORKERS: Mutex<Vec<(u32, Arc<AtomicBool>)>> = Mutex::new(Vec::new());

thread_local! {
    static PARKED: Arc<AtomicBool> = {
        let flag = Arc::new(AtomicBool::new(false));
        let tid = crate::platform::process::thread_id();
        WORKERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((tid, Arc::clone(&flag)));
        flag
    };
}

/// The runtime's `on_thread_park` hook: this worker has nothing to run.
pub fn note_park() {
    PARKED.with(|p| p.store(true, Ordering::Relaxed));
}

/// The runtime's `on_thread_unpark` hook: this worker runs tasks again.
pub fn note_unpark() {
    PARKED.with(|p| p.store(false, Ordering::Relaxed));
}

/// What one thread was doing at one sample, as a folded stack's frames.
fn state_of(tid: u32, parked: &HashMap<u32, bool>) -> Option<String> {
    let dir = format!("/proc/self/task/{tid}");
    let comm = std::fs::read_to_string(format!("{dir}/comm")).ok()?;
    let stat = std::fs::read_to_string(format!("{dir}/stat")).ok()?;
    // The state follows the name's closing parenthesis (a name may hold one).
    let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
    let wchan = std::fs::read_to_string(format!("{dir}/wchan")).unwrap_or_default();
    let thread = match parked.get(&tid) {
        Some(_) => "async worker".to_owned(),
        None => comm.trim().replace(';', ":"),
    };
    let doing = match (parked.get(&tid), state) {
        (Some(true), _) => "parked: waiting for work".to_owned(),
        (_, 'R') => "on a CPU or runnable".to_owned(),
        (worker, 'S' | 'D') => {
            let how = match state {
                'D' => "waiting uninterruptibly in",
                _ => "sleeping in",
            };
            let wchan = match wchan.trim() {
                "" | "0" => "an unnamed kernel function",
                name => name,
            };
            let inside = match worker {
                Some(false) => "inside a task;",
                _ => "",
            };
            format!("{inside}{how} {wchan}")
        }
        (_, other) => format!("state {other}"),
    };
    Some(format!("{thread};{doing}"))
}

/// This process's threads, read every [`PERIOD`] for `seconds`: a folded
/// stack a thread and state, counted in milliseconds. Read from a thread of
/// the blocking pool, so no async worker is caught reading.
pub async fn sample(seconds: Duration) -> Folded {
    tokio::task::spawn_blocking(move || read_for(seconds))
        .await
        .unwrap_or_default()
}

fn read_for(seconds: Duration) -> Folded {
    let mut folded = Folded::default();
    let me = crate::platform::process::thread_id();
    let ticks = (seconds.as_millis() / PERIOD.as_millis()).max(1);
    let began = std::time::Instant::now();
    for tick in 0..ticks {
        let parked: HashMap<u32, bool> = WORKERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(tid, flag)| (*tid, flag.load(Ordering::Relaxed)))
            .collect();
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            break;
        };
        for task in tasks.flatten() {
            let tid = task.file_name().to_string_lossy().parse::<u32>();
            let stack = tid
                .ok()
                .filter(|tid| *tid != me)
                .and_then(|tid| state_of(tid, &parked));
            if let Some(stack) = stack {
                folded.add(stack, PERIOD.as_millis() as u64);
            }
        }
        // On the period's grid, so a late read does not shift the rest.
        let next = PERIOD * (tick as u32 + 1);
        std::thread::sleep(next.saturating_sub(began.elapsed()));
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_asleep_outside_a_park_is_inside_a_task() {
        let tid = crate::platform::process::thread_id();
        let mut parked = HashMap::new();
        // This test's own thread is on a CPU while it reads itself.
        assert_eq!(
            state_of(tid, &parked)
                .as_deref()
                .map(|s| s.split_once(';').unwrap().1),
            Some("on a CPU or runnable")
        );
        parked.insert(tid, true);
        assert_eq!(
            state_of(tid, &parked).as_deref(),
            Some("async worker;parked: waiting for work")
        );
    }
}
