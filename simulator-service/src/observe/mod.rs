//! Observation: everything that reports what the request path did. `events.rs`
//! fires each probe (`probes.rs`), moves its `/stats` counter (`live_counts.rs`) and
//! its lifetime counter and histogram (`lifetime.rs`, what `metrics.rs` writes into
//! `/metrics`) in one call, so the three views never disagree; both kept in
//! per-thread parts added up when read (`shards.rs`); `process.rs` reads the process's own CPU time, `runtime.rs` watches the
//! async runtime (its metrics and a timer-lateness canary), `machine.rs` the cores,
//! quota, timer and calibration an exercise's figures depend on (the kernel's own
//! figures, which differ by OS, are read in `platform/`), `recent_peak.rs` the
//! largest of a figure over the last second (the accept queue's, the writes
//! acknowledged and not yet made), `resident.rs` the resident memory and its growth; `tap.rs` streams
//! the same events as the probes in process, for tracing without root, and
//! `waits.rs` cuts a request's lifetime into the waits those events bound.

pub mod events;
pub mod lifetime;
pub mod live_counts;
pub mod machine;
pub mod metrics;
pub mod probes;
pub mod process;
pub mod recent_peak;
pub mod resident;
pub mod runtime;
pub(crate) mod shards;
#[cfg(feature = "probes")]
pub mod tap;
#[cfg(feature = "probes")]
mod tap_ring;
pub mod waits;

pub use events::Events;

/// A duration in whole nanoseconds, saturating (probes and `/stats` carry u64).
pub fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
