//! system-simulator: a deliberately imperfect, fully instrumented data processor.
//!
//! The library holds everything; `src/main.rs` only parses arguments. Start reading
//! at `processor.rs` (the request path of the original simulator) and `gate.rs` (the
//! semaphore that is the workshop's bottleneck); `docs/patterns.md` maps every
//! pattern to its file.

pub mod admin;
pub mod cli;
pub mod config;
pub mod connections;
pub mod delay;
pub mod demo;
pub mod error;
pub mod events;
pub mod gate;
pub mod http;
pub mod metrics;
pub mod persist;
pub mod probes;
pub mod process;
pub mod processor;
pub mod server;
pub mod shutdown;
pub mod stats;
