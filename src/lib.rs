//! system-simulator: a deliberately imperfect, fully instrumented data processor.
//!
//! The library holds everything; `src/main.rs` only parses arguments. The folders
//! are the architecture (`docs/architecture.md` draws it):
//!
//! - `request_path/`: what happens to one request, cut into parts that each own
//!   one decision: `network`, `normalise`, `work`, `admission`, `persistence`,
//!   `store`. Start
//!   reading at `request_path/mod.rs`, then `admission/semaphore.rs`, the
//!   workshop's bottleneck.
//! - `config/`: where the settings come from (defaults, scenario, file, flags);
//!   the settings themselves are declared once in the `simulator-api` crate.
//! - `scenario.rs` and `model.rs`: named bundles of settings (`scenarios/*.toml`)
//!   and what queueing theory predicts from the settings in force.
//! - `serving/`: HTTP, connections, admin, shutdown, errors.
//! - `platform/`: all that differs from one OS to another, and the only
//!   place that names one: the CPU cgroups (a world's quota, a measured
//!   server's confinement), the listener's kernel figures, the namespace's TCP
//!   counters, the server's own stack sampler, files and signals.
//! - `observe/`: probes, events, counters, Prometheus metrics, process CPU.
//! - `profile/`: the server's CPU profile, sampled by itself (`profile`,
//!   `GET /admin/profile`), folded and drawn as a flame graph.
//! - `trace/`: the bundled scripts over the probe tap (`trace NAME`), for
//!   attendees whose tracer cannot attach; `doctor.rs` tells each machine which
//!   way it traces.
//! - `cli.rs` (the subcommands), `serve.rs` (`serve`: its flags and banner),
//!   `demo.rs`, and `workshop/`: the exercises (`workshop list`, `start`,
//!   `check`: the win condition), and `room/`: the facilitator's view of the
//!   room (`room`), which attendees' checks report to when they opt in.
//!
//! `docs/patterns.md` maps every pattern to its file.

// A function a reader can hold: at most 80 lines of code (clippy.toml), tests
// aside; one that reads better whole says why where it allows more.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod cli;
pub mod config;
pub mod demo;
pub mod doctor;
pub mod model;
pub mod neighbour;
pub mod observe;
pub mod platform;
pub mod profile;
pub mod request_path;
pub mod room;
pub mod scenario;
pub mod serve;
pub mod serving;
pub mod trace;
pub mod workshop;
