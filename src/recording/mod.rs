//! A run kept in an `.isim` file, and every command on one:
//!
//! - `format/`: the file itself, its blocks and packed events, written and
//!   read back whole or as far as it is good;
//! - `record.rs`: `record`, and a recording beside a check or the demo. The
//!   recorder is a script of `trace`'s, run by its live loop;
//! - `trace_from.rs`: `trace NAME --from FILE`, a script's twin fed from the
//!   file instead of the tap;
//! - `export/`: `export`, the file as a timeline Perfetto opens;
//! - `replay/`: `replay`, the file served as the live view;
//! - `compare.rs`: `compare`, two recordings told apart from their noise.
//!
//! Above `trace` (it runs trace's scripts) and below the commands that keep a
//! run (`demo`, `workshop`).

pub mod compare;
pub mod export;
pub mod format;
pub mod record;
pub mod replay;
pub mod trace_from;
