//! sim-clients: N virtual clients against `system-simulator serve`.
//!
//! [`run`] drives one load run from a [`LoadPlan`] and returns a [`Report`]; the
//! binary (`src/main.rs`) only parses flags. The folders are its parts:
//!
//! - `plan/`: what a run is (`LoadPlan`) and which share of it this process runs;
//! - `load/`: running a load (the clients, connections, pacing);
//! - `reporting/`: recording what the clients saw and laying it out (each
//!   whole-run histogram declared once, what an attempt came to, the tally, the
//!   report and its JSON, the per-second series, HDR histograms, progress, the
//!   driver's own `/metrics`);
//! - `sweep/`: the seed's sweep of client counts, its tables and chart;
//! - `knee/`: the highest rate or client count at which the bars hold;
//! - `thresholds/`: pass bars for a run (`--threshold`), read and judged;
//! - `compare/`: two runs told apart from their noise;
//! - `scale_out/`: load beyond one machine (`docs/scale-out.md`): starting
//!   together, adding reports up;
//! - `platform/`: what differs by OS (the precise timer, a socket option, the
//!   clock's synchronisation), the only place that names one;
//! - `cli/`: the flags (`flags.rs`) and the commands they run;
//!
//! What the server crate and the tests use is re-exported here; the rest stays inside.

// A function a reader can hold: at most 80 lines of code (clippy.toml), tests
// aside; one that reads better whole says why where it allows more.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod cli;
pub mod compare;
mod knee;
mod load;
mod plan;
mod platform;
mod reporting;
mod scale_out;
mod sweep;
pub mod thresholds;

pub use load::schedule::Schedule;
pub use load::worker::payload_rng;
pub use load::{run, run_with, Outputs, RunError};
pub use plan::shard::{Shard, ShardSource};
pub use plan::{Arrivals, Connections, LoadPlan, Pacing, PayloadSize, PlanError, Stop};
pub use reporting::live::LATENCY_BUCKETS_S;
pub use reporting::series::Line as SeriesLine;
pub use reporting::Report;
