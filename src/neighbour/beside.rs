//! The server's side of its neighbour: a world with `neighbour_threads_per_cpu`
//! starts `system-simulator neighbour` (this binary) when the server starts,
//! with that many threads for each CPU the server may use, before the server
//! enters a CPU limit of its own (a neighbour is someone else's process, not in
//! the server's cgroup). A thread reads the neighbour's `work N` lines, and
//! `/stats.neighbour` carries its pid, its threads, its work so far and whether
//! it still runs; `workshop check` reads its work a second alone and under the
//! load, so a fix that stops or kills it is seen.
//!
//! One a process, kept in a global: the server starts at most one, and `/stats`
//! reads it where the server's parts are built without it. Dropped (killed and
//! reaped) when `serve` ends; if the server is killed instead, the neighbour's
//! next report meets a closed pipe and it ends itself (`mod.rs`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Context;
use simulator_api::NeighbourStats;

/// The neighbour a server started, while it runs.
#[derive(Debug)]
pub struct Neighbour {
    child: Mutex<Child>,
    pid: u32,
    threads: u32,
    reading: Arc<Reading>,
}

#[derive(Debug, Default)]
struct Reading {
    work: AtomicU64,
    /// False once its stdout closed: it ended, or was killed.
    running: AtomicBool,
}

static THIS_SERVERS: OnceLock<Arc<Neighbour>> = OnceLock::new();

/// Starts the server's neighbour with `threads` threads, keeps it for
/// `/stats`, and returns the guard that ends it.
pub fn start(threads: u32) -> anyhow::Result<Arc<Neighbour>> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(["neighbour", "--threads", &threads.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start the neighbour (system-simulator neighbour)")?;
    let stdout = child.stdout.take().context("the neighbour's stdout")?;
    let reading = Arc::new(Reading {
        work: AtomicU64::new(0),
        running: AtomicBool::new(true),
    });
    let fed = Arc::clone(&reading);
    std::thread::Builder::new()
        .name("neighbour-reader".into())
        .spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(work) = super::parse_report(&line) {
                    fed.work.store(work, Ordering::Relaxed);
                }
            }
            fed.running.store(false, Ordering::Relaxed);
        })?;
    let neighbour = Arc::new(Neighbour {
        pid: child.id(),
        child: Mutex::new(child),
        threads,
        reading,
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
