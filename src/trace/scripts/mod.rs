//! The bundled scripts' logic over the probe tap, one module a script (or a
//! family), and the one list of them (`SCRIPTS`): each listens to the probes its `.bt` twin attaches to, aggregates as
//! the twin does, and prints what the twin prints (`report.rs` keeps bpftrace's
//! layout). `tests/suite/tracing/scripts_live/tap.rs` holds each equal to its twin, attached to
//! the same server under the same load. The kernel-side scripts have twins too,
//! which read the kernel's own counts of the server through `/stats` (its CPU
//! time, its cgroup's `cpu.stat`, its listener's queue and drops, its network
//! namespace's TCP counters, its threads' run-queue wait) and the server's own
//! counts (its writes): cpu-usage, cgroup-cpu, listener, delayed-ack and
//! runqlat, held to their scripts by
//! `tests/suite/tracing/scripts_live/tap.rs` and `sockets.rs`.
//!
//! Timing differs in one way: a tracer reads the kernel's clock in its probe
//! handler, a twin reads the tap's timestamp, taken in the server just before the
//! probe fires; the intervals between two events agree to well under a bucket.

mod cache;
mod cgroup_cpu;
mod count;
mod cpu_usage;
mod delayed_ack;
mod errors;
mod in_flight;
mod incident;
mod listener;
mod locks;
mod memory;
mod queue;
mod readings;
mod retry;
mod runqlat;
mod runtime;
mod size;
mod timings;
mod waits;

use crate::trace::script::{Options, Script};

/// A script's name, as `scripts/trace` takes it, and how to start it.
type Entry = (&'static str, fn(Options) -> Box<dyn Script>);

/// The scripts the tap can run, in the order `trace` lists them.
const SCRIPTS: &[Entry] = &[
    ("count", |o| Box::new(count::Count::new(o))),
    ("request-lifetime", |o| {
        Box::new(timings::request_lifetime(o))
    }),
    ("persist-time", |o| Box::new(timings::persist_time(o))),
    ("permit-wait", |o| Box::new(timings::permit_wait(o))),
    ("in-flight", |_| Box::new(in_flight::InFlight::new())),
    ("queue", |o| Box::new(queue::Queue::new(o))),
    ("runtime", |o| Box::new(runtime::Runtime::new(o))),
    ("size", |o| Box::new(size::Size::new(o))),
    ("retry", |o| Box::new(retry::Retry::new(o))),
    ("cache", |o| Box::new(cache::Cache::new(o))),
    ("cpu-usage", |o| Box::new(cpu_usage::CpuUsage::new(o))),
    ("cgroup-cpu", |o| Box::new(cgroup_cpu::CgroupCpu::new(o))),
    ("listener", |o| Box::new(listener::Listener::new(o))),
    ("delayed-ack", |o| Box::new(delayed_ack::DelayedAck::new(o))),
    ("runqlat", |o| Box::new(runqlat::Runqlat::new(o))),
    ("locks", |o| Box::new(locks::Locks::new(o))),
    ("waits", |o| Box::new(waits::Waits::new(o))),
    ("errors", |o| Box::new(errors::Errors::new(o))),
    ("memory", |o| Box::new(memory::Memory::new(o))),
];

/// Every script's name, in the order `trace` lists them.
pub fn names() -> impl Iterator<Item = &'static str> {
    SCRIPTS.iter().map(|(name, _)| *name)
}

/// The script called `name`, or none.
pub fn by_name(name: &str, options: Options) -> Option<Box<dyn Script>> {
    SCRIPTS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, start)| start(options))
}
