//! system-simulator: the commands of the workshop around the simulated service
//! (`simulator-service`), one module a command, each with its flags (`...Args`)
//! and its `run`. `src/main.rs` only parses arguments and `cli.rs` sends each
//! subcommand to its module (`docs/architecture.md` draws the layers):
//!
//! - `serve.rs`: `serve`, the service over HTTP until Ctrl-C, and its banner.
//! - `demo.rs`: the README's first command, a scenario before and after a fix.
//! - `workshop/`: the exercises (`workshop list`, `start`, `check`: the win
//!   condition, `figures`: a page's table), and the drill (`drill/`: a fault
//!   drawn by a seed and named by nobody).
//! - `room/`: the facilitator's view of the room (`room`), which attendees'
//!   checks report to when they opt in.
//! - `trace/`: the bundled scripts over the probe tap (`trace NAME`), for
//!   attendees whose tracer cannot attach.
//! - `doctor.rs`: which way this machine, as this user, traces each exercise.
//! - `profile.rs`: a flame graph of a running server (`profile`).
//! - `recording/`: a run kept in an `.isim` file and every command on one:
//!   `record`, `trace NAME --from`, `export` (a timeline for Perfetto) and
//!   `replay` (the file served as the live view).
//! - `neighbour.rs`: exercise 14's noisy neighbour as a process (`neighbour`).
//!
//! `local.rs` holds what several commands say of where they run.

// A function a reader can hold: at most 70 lines of code (clippy.toml), tests
// aside; one that reads better whole says why where it allows more.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod cli;
pub mod demo;
pub mod doctor;
pub mod local;
pub mod neighbour;
pub mod profile;
pub mod recording;
pub mod room;
pub mod serve;
pub mod trace;
pub mod workshop;
