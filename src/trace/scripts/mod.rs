//! The bundled scripts' logic over the probe tap, one module a script (or a
//! family): each listens to the probes its `.bt` twin attaches to, aggregates as
//! the twin does, and prints what the twin prints (`report.rs` keeps bpftrace's
//! layout). `tests/suite/scripts_live/tap.rs` holds each equal to its twin, attached to
//! the same server under the same load. The kernel-side scripts have twins too,
//! which read the kernel's own counts of the server through `/stats` (its CPU
//! time, its cgroup's `cpu.stat`, its listener's queue and drops, its network
//! namespace's TCP counters, its threads' run-queue wait) and the server's own
//! counts (its writes): cpu-usage, cpu-quota, accept-queue, delayed-ack and
//! runqlat, held to their scripts by
//! `tests/suite/scripts_live/tap.rs` and `sockets.rs`.
//!
//! Timing differs in one way: a tracer reads the kernel's clock in its probe
//! handler, a twin reads the tap's timestamp, taken in the server just before the
//! probe fires; the intervals between two events agree to well under a bucket.

mod accept_queue;
mod cache;
mod count;
mod cpu_quota;
mod cpu_usage;
mod delayed_ack;
mod in_flight;
mod incident;
mod locks;
mod queue;
mod readings;
mod retry;
mod runqlat;
mod runtime;
mod size;
mod timings;

/// One event off the tap.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// ns since the tap began, on the server's steady clock (the tap's: `observe/tap.rs`).
    pub at_ns: u64,
    pub probe: &'a str,
    /// The probe's arguments, arg0 first; unused ones are zero.
    pub args: [u64; 6],
}

/// What a script is told at its start.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// How long it runs (the twins' SECONDS, default 60).
    pub seconds: u64,
    /// retry's TIMEOUT_MS: the clients' --timeout, in ms.
    pub client_timeout_ms: u64,
    /// cpu-usage's INTERVAL: seconds between lines.
    pub interval_s: u64,
}

/// A bundled script, run over the tap.
pub trait Script: Send {
    /// The probes its twin attaches to (none: it reads no tap).
    fn probes(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether it reads the server's `/stats`: then [`stats`](Self::stats) has a
    /// fresh reading before `begin`, each `second` and `end`. By default, when it
    /// attaches to no probe: a script that did neither would have nothing to read.
    fn reads_stats(&self) -> bool {
        self.probes().is_empty()
    }
    fn stats(&mut self, _now: &simulator_api::Stats) {}
    /// How many times a second it reads `/stats` (a line a second whatever this).
    fn readings_per_second(&self) -> u32 {
        1
    }
    /// What its BEGIN prints.
    fn begin(&mut self, out: &mut String);
    fn on(&mut self, event: &Event<'_>);
    /// `interval:s:1`: a second has passed; `clock` is the wall time HH:MM:SS.
    fn second(&mut self, _clock: &str, _out: &mut String) {}
    /// What its END prints; `ran_s`: whole seconds since BEGIN.
    fn end(&mut self, ran_s: u64, out: &mut String);
}

/// The scripts the tap can run, by the name `scripts/trace` takes.
pub const NAMES: &[&str] = &[
    "count",
    "request-lifetime",
    "persist-time",
    "permit-wait",
    "in-flight",
    "queue",
    "runtime",
    "size",
    "retry",
    "cache",
    "cpu-usage",
    "cpu-quota",
    "accept-queue",
    "delayed-ack",
    "runqlat",
    "locks",
];

/// The script called `name`, or none.
pub fn by_name(name: &str, options: Options) -> Option<Box<dyn Script>> {
    Some(match name {
        "count" => Box::new(count::Count::new(options)),
        "request-lifetime" => Box::new(timings::request_lifetime(options)),
        "persist-time" => Box::new(timings::persist_time(options)),
        "permit-wait" => Box::new(timings::permit_wait(options)),
        "in-flight" => Box::new(in_flight::InFlight::new()),
        "queue" => Box::new(queue::Queue::new(options)),
        "runtime" => Box::new(runtime::Runtime::new(options)),
        "size" => Box::new(size::Size::new(options)),
        "retry" => Box::new(retry::Retry::new(options)),
        "cache" => Box::new(cache::Cache::new(options)),
        "cpu-usage" => Box::new(cpu_usage::CpuUsage::new(options)),
        "cpu-quota" => Box::new(cpu_quota::CpuQuota::new(options)),
        "accept-queue" => Box::new(accept_queue::AcceptQueue::new(options)),
        "delayed-ack" => Box::new(delayed_ack::DelayedAck::new(options)),
        "runqlat" => Box::new(runqlat::Runqlat::new(options)),
        "locks" => Box::new(locks::Locks::new(options)),
        _ => return None,
    })
}
