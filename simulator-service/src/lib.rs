//! simulator-service: the simulated service itself, a deliberately imperfect,
//! fully instrumented data processor, and everything it is made of. The
//! commands that start it, load it and judge it live in the `system-simulator`
//! crate, which owns `main.rs`; nothing here knows them. The folders are the
//! architecture (`docs/architecture.md` draws it):
//!
//! - `request_path/`: what happens to one request, cut into parts that each own
//!   one decision: `network`, `normalise`, `work`, `admission`, `persistence`,
//!   `store`. Start reading at `request_path/mod.rs`, then
//!   `admission/semaphore.rs`, the workshop's bottleneck.
//! - `config/`: where the settings come from (defaults, scenario, file, flags);
//!   the settings themselves are declared once in the `simulator-api` crate.
//! - `scenario.rs` and `model.rs`: named bundles of settings (`scenarios/*.toml`)
//!   and what queueing theory predicts from the settings in force.
//! - `serving/`: HTTP, connections, admin, shutdown, errors, the live view.
//! - `platform/`: all that differs from one OS to another, and the only
//!   place that names one: the CPU cgroups (a world's quota, a measured
//!   server's confinement), the listener's kernel figures, the namespace's TCP
//!   counters, the server's own stack sampler, files and signals.
//! - `observe/`: probes, events, counters, Prometheus metrics, process CPU, the
//!   probe tap.
//! - `profile/`: the server's CPU profile, sampled by itself
//!   (`GET /admin/profile`), and the kernel's profiles of it, folded and drawn
//!   as flame graphs.
//! - `neighbour/`: the server's side of exercise 14's noisy neighbour.
//!
//! `docs/patterns.md` maps every pattern to its file.

// A function a reader can hold: at most 80 lines of code (clippy.toml), tests
// aside; one that reads better whole says why where it allows more.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod config;
pub mod model;
pub mod neighbour;
pub mod observe;
pub mod platform;
pub mod profile;
pub mod request_path;
pub mod scenario;
pub mod serving;
