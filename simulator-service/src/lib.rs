//! simulator-service: the simulated service itself, a deliberately imperfect,
//! fully instrumented data processor, and everything it is made of. A server
//! starts through the front door, [`server`]:
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use simulator_service::scenario::Scenario;
//! use simulator_service::server::{self, Answers, IncidentMode, SettingFlags};
//!
//! let scenario = Scenario::load("semaphore-starvation")?;
//! let settings = server::resolve(&scenario, None, &SettingFlags::default().0)?;
//! let listener = server::bind(settings.listen, settings.listen_backlog)?;
//! server::register_probes();
//! let report = server::serve(
//!     listener, None, settings, scenario,
//!     Answers::Shown, IncidentMode::OnDemand, server::shutdown_signal(),
//! ).await?;
//! print!("{}", server::final_report(&report));
//! # Ok(()) }
//! ```
//!
//! The front door is the five public modules below; the folders behind it are
//! private, and `tests/suite/guards/layout.rs` fails on a use of the commands crate
//! or its tests that names one. The commands that start it, load it and judge
//! it live in the `system-simulator` crate, which owns `main.rs`; nothing here
//! knows them. The folders are the architecture (`docs/architecture.md` draws
//! it):
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

// A function a reader can hold: at most 70 lines of code (clippy.toml), tests
// aside; one that reads better whole says why where it allows more.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod config;
mod model;
mod neighbour;
mod observe;
mod platform;
pub mod profile;
mod request_path;
pub mod scenario;
mod serving;

/// The front door: a server from its settings to its final report, and what
/// its start-up sets around it (the world's limits, its neighbour, its CPU
/// limit) and its banner tells (the machine, the tracing commands).
pub mod server {
    pub use crate::config::{resolve, SettingFlags};
    pub use crate::model::predict;
    pub use crate::observe::machine;
    pub use crate::observe::probes::{probe_names, register as register_probes, trace_commands};
    pub use crate::platform::cgroup::{CpuMax, ServerGroup};
    pub use crate::platform::descriptors::{set_limit as set_descriptor_limit, Descriptors};
    pub use crate::platform::memory_limit::{set_limit as set_memory_limit, MemoryLimit};
    pub use crate::request_path::work::{
        bytes_per_work as calibrate_work, figures as work_figures,
    };
    pub use crate::request_path::DrainReport;
    pub use crate::serving::answers::Answers;
    pub use crate::serving::incidents::IncidentMode;
    pub use crate::serving::shutdown::{final_report, signal as shutdown_signal};
    pub use crate::serving::{bind, run as serve, ServeError};

    /// The world's neighbour: a process the server starts beside itself.
    pub mod neighbour {
        pub use crate::neighbour::beside::{start, Neighbour};
        pub use crate::neighbour::{write_report, MAX_THREADS, PROCESS_NAME, REPORT_EVERY};
    }
}

/// The service's parts for what assembles them in process: the demo's
/// second server and the tests (the data processor, its router), the room
/// (the data port's hardened connections), and `replay` and `trace` (the live
/// view's page, sampler and stream, the cut of a request's waits), and the
/// benchmarks' examples (the events a request fires, the probe tap).
pub mod parts {
    pub use crate::observe::lifetime::Histogram as LifetimeHistogram;
    pub use crate::observe::resident::slope;
    #[cfg(feature = "probes")]
    pub use crate::observe::tap;
    pub use crate::observe::waits;
    pub use crate::observe::Events;
    pub use crate::request_path::admission::MAX_PERMITS;
    pub use crate::request_path::{DataProcessor, Element, RequestError};
    pub use crate::serving::accept_failures::AcceptFailures;
    pub use crate::serving::body::parse_element;
    pub use crate::serving::connections;
    pub use crate::serving::http::app;
    pub use crate::serving::live;
    pub use crate::serving::same_machine;
    pub use crate::serving::state::AppState;
}

/// What the commands ask of the OS, through the one place that names one:
/// private files, descriptors, a listing on stdout, a thread's name, the
/// CPU cgroups, which OS this is.
pub mod os {
    pub use crate::observe::machine::count_cpu_list;
    pub use crate::platform::cgroup::{CpuGroup, CpuMax, OwnCpuGroup};
    pub use crate::platform::descriptors::{hard_limit, raise_limit};
    pub use crate::platform::files::{is_private, write_private};
    pub use crate::platform::os::{Os, THIS};
    pub use crate::platform::process::name_this_thread;
    pub use crate::platform::stdout::print_listing;
}
