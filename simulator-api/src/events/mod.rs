//! Every event of the server, declared once.
//!
//! [`with_events!`] holds the one list, as [`with_settings!`](crate::with_settings)
//! does for the settings: each event's USDT probe (its name, when it fires, and
//! what each argument means), the `/stats` counters it moves with their Prometheus
//! names and help, the histograms it records, and, on a counter that opens an
//! in-flight pair, the pair: its name, the counter that closes it, and its gauge.
//! Everything else is derived from that list by a macro that receives it: here,
//! the [`Counts`] body of `GET /stats` with `since`, the in-flight figures and
//! what a reset carries over, and the [`EVENTS`] table that `docs/tracing.md`'s
//! probe table is made from; in the server crate, the `isim` provider, the probe
//! names the tests read, and the metric handles with their names and help.
//!
//! Adding an event is one entry in the list (`defs.rs`, alone in its file), one function in the server's
//! `observe/events.rs` that fires it with its arguments, and its D and bpftrace
//! twins in `scripts/` (a test fails until each is there).
//!
//! Every probe argument is a `u64`: bpftrace and DTrace for Linux take integers
//! apart, not JSON. arg0 is the request id, except on `canary-tick`,
//! `incident-*`, `compaction-*` and `accept-error`, which have no request.

mod defs;
mod derived;

pub use derived::*;
