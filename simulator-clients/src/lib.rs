//! sim-clients: N virtual clients against `system-simulator serve`.
//!
//! [`run`] drives one load run from a [`LoadPlan`] and returns a [`Report`]; the
//! binary (`src/main.rs`) only parses flags. The folders are its parts:
//!
//! - `load/`: running a load (the plan, the clients, connections, pacing);
//! - `reporting/`: recording what the clients saw and laying it out (the tally,
//!   the report and its JSON, the per-second series, HDR histograms, progress);
//! - `sweep/`: the seed's sweep of client counts, its tables and chart;
//! - `scale_out/`: load beyond one machine (`docs/scale-out.md`): which share a
//!   process runs, starting together, adding reports up, the driver's own `/metrics`;
//! - `cli/`: the flags (`flags.rs`) and the commands they run;
//! - `endpoints.rs`: the server's `/stats` and `/admin` routes, as the driver reads them.
//!
//! What the server crate and the tests use is re-exported here; the rest stays inside.

pub mod cli;
pub mod endpoints;
mod load;
mod reporting;
mod scale_out;
mod sweep;

pub use load::plan::{Arrivals, LoadPlan, Pacing, PayloadSize, PlanError, Stop};
pub use load::schedule::Schedule;
pub use load::worker::payload_rng;
pub use load::{run, run_with, Outputs, RunError};
pub use reporting::series::Line as SeriesLine;
pub use reporting::Report;
pub use scale_out::live::LATENCY_BUCKETS_S;
pub use scale_out::shard::{Shard, ShardSource};
