//! The server's side of its neighbour: a world with `neighbour_threads_per_cpu`
//! starts the program the caller gives (`system-simulator neighbour`, this
//! binary's own command, `src/neighbour.rs`) when the server starts,
//! with that many threads for each CPU the server may use, before the server
//! enters a CPU limit of its own (a neighbour is someone else's process, not in
//! the server's cgroup). A thread reads the neighbour's `work N` lines, and
//! `/stats.neighbour` carries its pid, its threads, its work so far and whether
//! it still runs; `workshop check` holds its work a second under the load to
//! a share of its work a second alone, so a fix that stops, kills or starves
//! it is seen.
//!
//! Its rate alone is measured here, once, as the world starts: `start` waits
//! for its first report, then for the first one [`ALONE`] later, before the
//! server binds its port. So no load runs yet, and nothing an attendee does to
//! the running neighbour (a quota, a duty cycle of stop and continue, a cpuset)
//! can shrink the yardstick with it. A neighbour confined before the world
//! starts (a server started under `taskset`) is measured confined, as it is
//! the world then.
//!
//! One a process, kept in a global: the server starts at most one, and `/stats`
//! reads it where the server's parts are built without it. Dropped (killed and
//! reaped) when `serve` ends; if the server is killed instead, the neighbour's
//! next report meets a closed pipe and it ends itself (`mod.rs`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Context;
use simulator_api::NeighbourStats;

/// How long the neighbour's rate alone is measured: it reports every 25 ms,
/// so a rate over a second is within 2.5 % of the truth.
pub const ALONE: Duration = Duration::from_secs(1);

/// How long `start` waits for that measurement before it gives up: a
/// neighbour that cannot report its first second in this time is broken.
const ALONE_AT_MOST: Duration = Duration::from_secs(10);

/// The neighbour a server started, while it runs.
#[derive(Debug)]
pub struct Neighbour {
    child: Mutex<Child>,
    pid: u32,
    threads: u32,
    reading: Arc<Reading>,
    /// Its units of work a second alone, measured as the world started.
    alone_per_s: u64,
}

#[derive(Debug, Default)]
struct Reading {
    work: AtomicU64,
    /// False once its stdout closed: it ended, or was killed.
    running: AtomicBool,
}

static THIS_SERVERS: OnceLock<Arc<Neighbour>> = OnceLock::new();

/// Starts the server's neighbour, `program` with `threads` threads (the
/// commands' `neighbour`, which the caller names: the service knows no
/// command), measures its rate alone over its first [`ALONE`] (this waits
/// that long), keeps it for `/stats`, and returns the guard that ends it.
pub fn start(mut program: Command, threads: u32) -> anyhow::Result<Arc<Neighbour>> {
    let mut child = program
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start the neighbour ({program:?})"))?;
    let stdout = child.stdout.take().context("the neighbour's stdout")?;
    let reading = Arc::new(Reading {
        work: AtomicU64::new(0),
        running: AtomicBool::new(true),
    });
    let fed = Arc::clone(&reading);
    let (measured, alone) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("neighbour-reader".into())
        .spawn(move || {
            let mut first: Option<(u64, Instant)> = None;
            let mut measured = Some(measured);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Some(work) = super::parse_report(&line) else {
                    continue;
                };
                fed.work.store(work, Ordering::Relaxed);
                let now = Instant::now();
                let (first_work, first_at) = *first.get_or_insert((work, now));
                if now - first_at >= ALONE {
                    if let Some(measured) = measured.take() {
                        let seconds = (now - first_at).as_secs_f64();
                        let rate = work.saturating_sub(first_work) as f64 / seconds;
                        let _ = measured.send(rate.round() as u64);
                    }
                }
            }
            fed.running.store(false, Ordering::Relaxed);
        })?;
    let alone_per_s = match alone.recv_timeout(ALONE_AT_MOST) {
        Ok(rate) => rate,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!(
                "the neighbour (pid {}) did not report a second of its work within {} s",
                child.id(),
                ALONE_AT_MOST.as_secs()
            );
        }
    };
    let neighbour = Arc::new(Neighbour {
        pid: child.id(),
        child: Mutex::new(child),
        threads,
        reading,
        alone_per_s,
    });
    THIS_SERVERS
        .set(Arc::clone(&neighbour))
        .map_err(|_| anyhow::anyhow!("this server has a neighbour already"))?;
    Ok(neighbour)
}

/// The server's neighbour as `/stats` shows it; `None` in a world without one.
pub fn stats() -> Option<NeighbourStats> {
    THIS_SERVERS.get().map(|n| n.stats())
}

impl Neighbour {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn stats(&self) -> NeighbourStats {
        NeighbourStats {
            pid: self.pid,
            threads: self.threads,
            work: self.reading.work.load(Ordering::Relaxed),
            running: self.reading.running.load(Ordering::Relaxed),
            alone_per_s: Some(self.alone_per_s),
            scheduling: crate::platform::schedstat::scheduling_of(self.pid),
        }
    }

    /// Kills it and waits for it to end.
    pub fn stop(&self) {
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}
