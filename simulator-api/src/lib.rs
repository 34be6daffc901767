//! simulator-api: what system-simulator and sim-clients agree on.
//!
//! The settings (`settings/`: every one declared once in `defs.rs`, with the kinds of value in
//! `value.rs` and the latency distributions in `delay.rs`), the server's events
//! (`events/`: every one declared once in `defs.rs`, with the counters they move), a
//! scenario's incident (`incident.rs`), a load, its flags declared once for the
//! driver's command line and a scenario's words (`load/`), and the HTTP bodies
//! (`bodies.rs`), the trail a drill is scored from (`trail.rs`), and the workshop room's (`room.rs`), and the record an element carries
//! (`record.rs`); with the feature `client`, the server's API as a typed
//! client (`client/`). The clients depend on this crate and never on the server, so
//! the two cannot drift apart silently: a field one writes and the other does not
//! know fails to parse.

// A function a reader can hold: at most 80 lines of code (clippy.toml), tests
// aside; one that reads better whole says why where it allows more.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod bodies;
#[cfg(feature = "client")]
pub mod client;
pub mod delay;
pub mod events;
pub mod incident;
pub mod live;
pub mod load;
pub mod max_duration;
pub mod output;
pub mod record;
pub mod room;
pub mod settings;
pub mod trail;
pub mod value;

pub use bodies::{
    ConnectionCounts, Counts, CpuCgroup, DescriptorCounts, ErrorBody, Fix, Machine, MemoryCounts,
    Model, NeighbourStats, OsFeature, Reply, RetriedLoad, RuntimeStats, ScenarioInfo, SeedCount,
    Stats, TcpCounters, REQUEST_KEY_HEADER, SEED_COUNTS,
};
pub use delay::Delay;
pub use incident::{Incident, IncidentStatus};
pub use load::Load;
pub use settings::{Settings, SettingsError, SettingsUpdate, SETTINGS};
