//! The server's own stack sampler, where the OS has one: on Unix pprof-rs's
//! `SIGPROF` timer (`setitimer(ITIMER_PROF)`, the process's CPU time), each
//! signal unwinding the stack of the thread it lands on; elsewhere (Windows has
//! no `SIGPROF`) [`start`] says so and `GET /admin/profile` answers with the
//! reason. `profile/` folds and draws what this returns.

/// One distinct stack and how many samples landed on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledStack {
    /// The thread's name, or its id.
    pub thread: String,
    /// Each frame's symbols by name, outermost frame first and, within a frame,
    /// the inlined symbols outermost first.
    pub symbols: Vec<String>,
    pub count: u64,
}

/// A sampler running until its stacks are taken.
pub struct Running {
    #[cfg(unix)]
    guard: pprof::ProfilerGuard<'static>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Running")
    }
}

/// Starts sampling this process at `frequency_hz` per second of CPU, dropping
/// samples whose innermost frame lies in a library named in `blocklist`.
/// Blocking: it reads the process's maps.
pub fn start(frequency_hz: i32, blocklist: &[&str]) -> Result<Running, String> {
    #[cfg(unix)]
    {
        pprof::ProfilerGuardBuilder::default()
            .frequency(frequency_hz)
            .blocklist(blocklist)
            .build()
            .map(|guard| Running { guard })
            .map_err(|e| e.to_string())
    }
    #[cfg(not(unix))]
    {
        let _ = (frequency_hz, blocklist);
        Err("this OS has no SIGPROF timer to sample the server's own stacks with (Unix only): profile it with the OS's own profiler".into())
    }
}

impl Running {
    /// Stops the timer and names every sampled frame. Blocking: symbolising
    /// thousands of frames takes a while.
    pub fn stacks(self) -> Result<Vec<SampledStack>, String> {
        #[cfg(unix)]
        {
            let report = self.guard.report().build().map_err(|e| e.to_string())?;
            drop(self.guard);
            Ok(report
                .data
                .iter()
                .map(|(frames, count)| SampledStack {
                    thread: frames.thread_name_or_id(),
                    symbols: frames
                        .frames
                        .iter()
                        .rev()
                        .flat_map(|frame| frame.iter().rev().map(|symbol| symbol.name()))
                        .collect(),
                    count: u64::try_from(*count).unwrap_or(0),
                })
                .collect())
        }
        #[cfg(not(unix))]
        {
            Ok(Vec::new())
        }
    }
}
