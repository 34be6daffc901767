//! CPU profiles of the server itself, without root: where its CPU goes, as
//! folded stacks and as a flame graph.
//!
//! [`sample`] runs pprof-rs's sampler in this process for a while
//! (`platform/stack_sampler.rs`; Unix only, and elsewhere it says why not): a `SIGPROF`
//! timer (`setitimer(ITIMER_PROF)`, the process's CPU time, so an idle thread is
//! never sampled and a busy one at about the rate asked, [`FREQUENCY_HZ`]), each
//! signal unwinding the stack of the thread it lands on. Nothing runs while
//! nobody profiles: the timer and the handler exist only inside [`sample`]. One
//! profile at a time per process ([`ProfileError::Busy`]): the timer is the
//! process's.
//!
//! The stacks are folded as Brendan Gregg's `stackcollapse` tools write them
//! (`thread;outermost;...;innermost COUNT`, [`Folded`]) and drawn by inferno,
//! the Rust port of FlameGraph, the same way as the kernel's profiles of the
//! server are (`scripts/profile.bt`, `scripts/profile.d`: `stacks.rs`).
//! Written here rather than with pprof's `flamegraph` feature so that both kinds
//! of profile go through one folding and one drawing, and a test can read the
//! folded stacks of either.
//!
//! pprof unwinds with backtrace-rs (libgcc's DWARF unwinder), which walks our
//! frames and the standard library's whether or not they keep frame pointers.
//! Samples that land inside libc, libgcc or the vDSO are dropped (pprof's
//! blocklist): unwinding from inside the unwinder or the allocator's locks can
//! deadlock a signal handler. So a thread in a system call shows up in the
//! kernel's profile and not here; this one is user CPU.

pub mod diff;
pub mod folded;
pub mod heap;
pub mod stacks;
pub mod symbols;
pub mod threads;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use folded::Folded;

use crate::platform::stack_sampler;

/// Samples a second: 99, not 100, so the sampler does not run in lockstep with
/// timers that fire at round rates (the usual choice: perf, bpftrace, DTrace).
pub const FREQUENCY_HZ: i32 = 99;
/// The longest profile one request may ask for.
pub const MAX_SECONDS: u64 = 120;
/// Libraries whose samples are dropped (see the module comment).
const BLOCKLIST: [&str; 4] = ["libc", "libgcc", "pthread", "vdso"];

/// Why a profile could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("a profile of this server is being taken already; one at a time (the CPU timer is the process's): try again when it ends")]
    Busy,
    #[error("the sampler did not start: {0}")]
    Start(String),
    #[error("the sampler's report failed: {0}")]
    Report(String),
}

/// Set while a profile is being taken, so a second one is refused rather than
/// queued behind the first (pprof's own lock would make it wait).
static TAKING: AtomicBool = AtomicBool::new(false);

/// Clears [`TAKING`] however the profile ends, a dropped future included.
struct Taking;

impl Drop for Taking {
    fn drop(&mut self) {
        TAKING.store(false, Ordering::Release);
    }
}

/// This process's stacks, sampled for `seconds` at [`FREQUENCY_HZ`] per second
/// of CPU, folded.
pub async fn sample(seconds: Duration) -> Result<Folded, ProfileError> {
    if TAKING.swap(true, Ordering::AcqRel) {
        return Err(ProfileError::Busy);
    }
    let taking = Taking;
    // Building the guard starts the timer; it finds the shared libraries to
    // skip, which reads the process's maps: off the runtime's workers.
    let running = tokio::task::spawn_blocking(|| stack_sampler::start(FREQUENCY_HZ, &BLOCKLIST))
        .await
        .map_err(|e| ProfileError::Start(e.to_string()))?
        .map_err(ProfileError::Start)?;
    tokio::time::sleep(seconds).await;
    // Symbolising thousands of frames takes a while: on the blocking pool too;
    // taking the stacks there stops the timer.
    let folded = tokio::task::spawn_blocking(move || {
        let stacks = running.stacks().map_err(ProfileError::Report)?;
        Ok(Folded::from_samples(&stacks))
    })
    .await
    .map_err(|e| ProfileError::Report(e.to_string()))?;
    drop(taking);
    folded
}
