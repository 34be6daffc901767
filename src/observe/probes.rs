//! The `isim` USDT provider: the probe contract of the workshop.
//!
//! The names and argument orders here are what every D and bpftrace script in
//! `scripts/` and the seed's own scripts rely on (`isim*:::request-start` and so on);
//! `__` in a Rust name becomes `-` in the probe name. arg0 is always the request id
//! (a `u64`), so a script pairs events with `follow[arg0]` rather than with `self->`
//! thread-locals, which are wrong in async code: a tokio task can run its
//! request-start on one OS thread and its request-done on another.
//!
//! Arguments are plain integers because bpftrace and DTrace for Linux cannot take
//! JSON apart. A probe costs about one load and a branch while nobody traces it; the
//! argument closures are only evaluated when a tracer has enabled the probe.
//!
//! Do not call these directly: `events.rs` fires each probe together with the
//! counter and metric that must agree with it.

/// The six probes of the original plus `request-unblock`, which marks the moment a
/// blocked request finally gets its permit (so the permit wait can be measured),
/// `request-shed` for a request refused because no permit was free,
/// `persist-hedge` for a persist that got a second attempt, and the persistence
/// queue's `queue-enqueue`, `queue-dequeue`, `queue-refuse` and `queue-drop`, the CPU work's `work-start` and
/// `work-done`, and the runtime's `canary-tick`.
#[cfg(feature = "probes")]
#[usdt::provider]
pub mod isim {
    /// A request entered the data processor path. (id, element bytes)
    fn request__start(id: u64, bytes: u64) {}
    /// A permit was free at once. (id, permits still free after taking it)
    fn request__nonblock(id: u64, available: u64) {}
    /// No permit was free; the request will wait. (id, permits total)
    fn request__block(id: u64, permits: u64) {}
    /// A blocked request got its permit. (id, nanoseconds it waited)
    fn request__unblock(id: u64, wait_ns: u64) {}
    /// A blocked request was refused at once with 503 (`when_full = shed`); it
    /// fired request-block first. (id, permits total)
    fn request__shed(id: u64, permits: u64) {}
    /// The reply is ready. (id, lifetime in ns since request-start, 1 if it blocked)
    fn request__done(id: u64, lifetime_ns: u64, blocked: u64) {}
    /// Persistence of the request's element begins. (id, element bytes, persists in
    /// flight counting this one, permits free right now)
    fn persist__start(id: u64, bytes: u64, in_flight: u64, permits_free: u64) {}
    /// Persistence ended, successfully or not. (id, 1 if ok, latency in ns, persists
    /// still in flight after this one)
    fn persist__done(id: u64, ok: u64, latency_ns: u64, in_flight: u64) {}
    /// A persist outlived `hedge_after` and a second attempt began; the first to
    /// finish ends it. (id, nanoseconds after persist-start)
    fn persist__hedge(id: u64, after_ns: u64) {}
    /// The element went into the persistence queue (`persistence = pool`). (id,
    /// elements queued counting this one)
    fn queue__enqueue(id: u64, depth: u64) {}
    /// A worker took the element from the queue; its persist-start follows. (id,
    /// nanoseconds it waited in the queue, elements still queued)
    fn queue__dequeue(id: u64, wait_ns: u64, depth: u64) {}
    /// The queue was full and the request is refused with 503 (`when_full =
    /// shed`); the element was never queued. (id, elements queued)
    fn queue__refuse(id: u64, depth: u64) {}
    /// A worker dropped the element unpersisted: it waited longer than
    /// `queue_wait_limit` (its queue-dequeue fired first; no persist-start
    /// follows). (id, nanoseconds it waited, the limit in ns)
    fn queue__drop(id: u64, wait_ns: u64, limit_ns: u64) {}
    /// The element's CPU work (`work = zstd`) was asked for; it may wait for a
    /// slot first. (id, bytes to process, where it runs: 0 async worker, 1 blocking
    /// pool, 2 rayon)
    fn work__start(id: u64, bytes: u64, on: u64) {}
    /// The work is finished. (id, ns it ran, ns it waited for a slot or a thread
    /// first, where it ran as in work-start)
    fn work__done(id: u64, run_ns: u64, wait_ns: u64, on: u64) {}
    /// The runtime's timer canary woke. It has no request, so arg0 is its own
    /// sequence number. (tick number, ns later than the interval it asked for,
    /// the interval in ns)
    fn canary__tick(seq: u64, late_ns: u64, interval_ns: u64) {}
}

/// The same probe sites with the `probes` feature off (`cargo build
/// --no-default-features`): each macro takes the argument closure and drops it
/// uncalled, so the binary has no stapsdt notes and the event path no probe
/// sites at all. `scripts/bench/probes.py` measures a build with probes compiled
/// in but not enabled against this one (`docs/performance.md`).
#[cfg(not(feature = "probes"))]
pub mod isim {
    macro_rules! request__start {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use request__start;
    macro_rules! request__nonblock {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use request__nonblock;
    macro_rules! request__block {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use request__block;
    macro_rules! request__unblock {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use request__unblock;
    macro_rules! request__shed {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use request__shed;
    macro_rules! request__done {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use request__done;
    macro_rules! persist__start {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use persist__start;
    macro_rules! persist__done {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use persist__done;
    macro_rules! persist__hedge {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use persist__hedge;
    macro_rules! queue__enqueue {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use queue__enqueue;
    macro_rules! queue__dequeue {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use queue__dequeue;
    macro_rules! queue__refuse {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use queue__refuse;
    macro_rules! queue__drop {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use queue__drop;
    macro_rules! work__start {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use work__start;
    macro_rules! work__done {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use work__done;
    macro_rules! canary__tick {
        ($args:expr) => {
            let _ = $args;
        };
    }
    pub(crate) use canary__tick;
}

/// Every probe name, as tracers see it. Tests check the binary against this list.
pub const PROBE_NAMES: [&str; 16] = [
    "request-start",
    "request-nonblock",
    "request-block",
    "request-unblock",
    "request-shed",
    "request-done",
    "persist-start",
    "persist-done",
    "persist-hedge",
    "queue-enqueue",
    "queue-dequeue",
    "queue-refuse",
    "queue-drop",
    "work-start",
    "work-done",
    "canary-tick",
];

/// Makes the probes visible to DTrace. On Linux the stapsdt notes need no
/// registration, so a failure only matters on DTrace systems; it is logged, not fatal,
/// because the simulator is still useful without tracing.
pub fn register() {
    #[cfg(feature = "probes")]
    if let Err(err) = usdt::register_probes() {
        tracing::warn!(%err, "could not register the isim USDT probes; tracing will see nothing");
    }
    #[cfg(not(feature = "probes"))]
    tracing::warn!("built without the probes feature: no isim probes to trace");
}

/// Ready-to-paste commands that trace process `pid`, for the banners of `serve` and
/// `demo`: the bundled scripts through `scripts/trace`, and each tool by hand in
/// the form this platform needs (DTrace for Linux only matches `isim$target`).
pub fn trace_commands(pid: u32) -> Vec<String> {
    if cfg!(not(feature = "probes")) {
        return vec!["(built without the probes feature: nothing to trace; rebuild with the default features)".into()];
    }
    let mut commands = vec![
        format!("sudo scripts/trace count {pid}        (also request-lifetime, persist-time, permit-wait, in-flight, queue, runtime, size, cpu-usage)"),
    ];
    if cfg!(target_os = "linux") {
        commands.push(format!("sudo bpftrace -p {pid} scripts/count.bt"));
        commands.push(format!(
            "sudo dtrace -p {pid} -n 'isim$target::: {{ @[probename] = count(); }}'"
        ));
    } else {
        commands.push(format!("sudo dtrace -p {pid} -s scripts/count.d"));
    }
    commands
}
