//! Every setting of the server, declared once.
//!
//! [`with_settings!`] holds the one list: name, type, default, bounds, whether it can
//! change while the server runs, which part of the server it belongs to, and its
//! help text. Everything else is derived from that list by a macro that receives it:
//! here, the [`Settings`] struct (the configuration in force, as `/stats.config`
//! shows it), [`SettingsUpdate`] (a TOML file, a scenario, the flags or a
//! `PUT /admin/config` body: every key optional, unknown keys refused), the
//! validation, the live-change rule and the [`SETTINGS`] table that `--help` and
//! `docs/limits.md` are made from; in the server crate, the `serve` flags. Adding a
//! setting is one entry in the list.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::delay::Delay;
use crate::value::{Bounds, SettingValue};

/// The original simulator's `PERSIST_N`.
pub const DEFAULT_PERMITS: usize = 8;
/// Where the server listens unless told otherwise: loopback only.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 7878);
/// The most permits tokio's semaphore can hold (`Semaphore::MAX_PERMITS`).
pub const MAX_PERMITS: u64 = usize::MAX as u64 >> 3;
/// The longest any timeout or cost may be: longer is almost certainly a typo.
pub const MAX_SPAN: Duration = Duration::from_secs(3600);

/// The most CPU one work may be asked to cost.
pub const MAX_WORK_CPU: Duration = Duration::from_secs(10);
/// The most CPU a connection's handshake may be asked to cost.
pub const MAX_HANDSHAKE_CPU: Duration = Duration::from_secs(1);
/// The data port's listen backlog unless told otherwise: the kernel's own cap
/// since Linux 5.4 (`net.core.somaxconn`). The seed's story starts with every
/// client connecting at once: tokio's default of 1024 overflows at a thousand
/// clients, and each dropped SYN costs its client a one-second retransmit.
pub const DEFAULT_LISTEN_BACKLOG: usize = 4096;
/// The coarsest simulated timer tick (Windows' default is 15.6 ms).
pub const MAX_TIMER_TICK: Duration = Duration::from_secs(1);
/// The kernel's CFS bandwidth period bounds (`cpu.cfs_period_us`: 1 ms to 1 s).
pub const MIN_CPU_PERIOD: Duration = Duration::from_millis(1);
pub const MAX_CPU_PERIOD: Duration = Duration::from_secs(1);
/// The period a container runtime gives a quota unless told otherwise.
pub const DEFAULT_CPU_PERIOD: Duration = Duration::from_millis(100);
/// The largest `cpu_quota`: sixty cores' worth of a one-second period.
pub const MAX_CPU_QUOTA: Duration = Duration::from_secs(60);

/// The original's persistence latency: 50 ms + Normal(10 ms, 5 ms).
pub fn default_persist_latency() -> Delay {
    Delay::base_plus_normal(
        Duration::from_millis(50),
        Duration::from_millis(10),
        Duration::from_millis(5),
    )
}

/// The original's network traverse, each way: 500 us + Normal(1 ms, 100 us).
pub fn default_network_delay() -> Delay {
    Delay::base_plus_normal(
        Duration::from_micros(500),
        Duration::from_millis(1),
        Duration::from_micros(100),
    )
}

crate::choice! {
    /// What a request must obtain before its element is handed to persistence.
    AdmissionKind {
        /// A semaphore of `permits`; the permit is held until the persist ends,
        /// and a request that finds none free waits for one (the original).
        Semaphore = "semaphore",
    }
}

crate::choice! {
    /// What a request does when what it needs is not there: a free permit, or
    /// room in a full persistence queue.
    WhenFull {
        /// Wait for it, in arrival order (the original).
        Wait = "wait",
        /// Refuse at once with 503 ("performance over completeness", the seed's
        /// second idea): request-block then request-shed at the semaphore,
        /// queue-refuse at a full queue.
        Shed = "shed",
    }
}

crate::choice! {
    /// What a request does when its client closes the connection before the reply
    /// (a client timeout or a hang-up: request-abandoned).
    OnDisconnect {
        /// Run on to its end as if the client were still there (the original): its
        /// permit, its place in a queue and its persist are spent on a reply nobody
        /// reads.
        Detach = "detach",
        /// Stop at its next wait: a request waiting for the network, a work slot, a
        /// permit, room in the queue or its durable persist ends there (request-done
        /// with cancelled = 1) and gives back what it held; an element still queued
        /// for a worker is dropped unpersisted (queue-drop). Work and persists already
        /// under way finish.
        Cancel = "cancel",
    }
}

crate::choice! {
    /// How long a request's permit is held.
    PermitUntil {
        /// Until its element's persist ends (the original: the permit bounds
        /// persists in flight).
        PersistDone = "persist-done",
        /// Only until the element is handed to persistence (a spawned task or a
        /// place in the queue): the permit bounds hand-offs, not persists.
        HandOff = "hand-off",
    }
}

crate::choice! {
    /// How elements reach the store and how many persist at once.
    PersistenceKind {
        /// A task spawned per element, as many at once as admission lets through
        /// (the original).
        TaskPerElement = "task-per-element",
        /// `persist_workers` workers drain a queue of `persist_queue` elements;
        /// one worker is a sequential drain.
        Pool = "pool",
    }
}

crate::choice! {
    /// How a reply leaves the server.
    ReplyWrites {
        /// One write: the head and the body together (hyper's own way).
        One = "one",
        /// Two writes: the head, flushed, then the body, as a server that sends
        /// its headers before it has the body. Without `tcp_nodelay` Nagle holds
        /// the small second write until the client acknowledges the first, which
        /// a client delays by up to 40 ms (Linux's least delayed-ACK timeout).
        Split = "split",
    }
}

crate::choice! {
    /// Where a new connection's handshake (`handshake_cpu`) runs.
    HandshakeOn {
        /// The connection's own task, after the accept loop handed it over: many
        /// handshakes run at once, on every worker.
        Connection = "connection",
        /// Inline in the accept loop, before it accepts the next connection: the
        /// loop takes connections one handshake at a time, and what it has not
        /// taken waits in the kernel's accept queue (`listen_backlog`), whose
        /// overflow drops SYNs.
        AcceptLoop = "accept-loop",
    }
}

crate::choice! {
    /// What the processor does with an element before persisting it.
    WorkKind {
        /// Nothing (the original).
        None = "none",
        /// Compress `work_bytes` of WAL-like text with zstd (level 3), as seed 001
        /// archives WAL segments: real CPU work, milliseconds per element.
        Zstd = "zstd",
    }
}

crate::choice! {
    /// How the cache's fills are shared between the requests that miss the same key.
    CacheFills {
        /// Each miss starts a fill of its own (the plain look-aside cache).
        PerRequest = "per-request",
        /// One fill per key in flight; the other misses of that key wait on it
        /// (single-flight, as memcache's leases and Go's `singleflight`). A
        /// shared fill belongs to no one request and always runs to its end.
        Coalesced = "coalesced",
    }
}

crate::choice! {
    /// What a read does with an entry that is stale (the cache missed the
    /// invalidations sent while it was unreachable: `cache_reachable`).
    StaleReads {
        /// A stale entry is a miss: the read fills it as any other miss.
        Miss = "miss",
        /// A stale entry answers the read at once (cache-stale-hit), and one
        /// refresh per key runs in the background: a fill that belongs to no
        /// request, so it runs to its end (stale-while-revalidate, as HTTP's
        /// RFC 5861 and nginx's `proxy_cache_use_stale updating`).
        Serve = "serve",
    }
}

crate::choice! {
    /// What becomes of a fill whose request's client has gone.
    AbandonedFills {
        /// Thrown away, as a fetch made under the request's deadline is: while
        /// it waits for the store it gives up its place, and a read the store
        /// has begun is wasted (cache-fill-abandoned).
        Discard = "discard",
        /// Run to the end and put in the cache, whoever still waits for it.
        Keep = "keep",
    }
}

crate::choice! {
    /// How the service normalises each element's record before admission.
    Normalise {
        /// Not at all (the original): replies carry no digest.
        Off = "off",
        /// Trims the record's end by trying each position from the front: is
        /// everything after it whitespace?
        ScanForward = "scan-forward",
        /// Trims the record's end by walking back from its last byte.
        ScanBack = "scan-back",
    }
}

crate::choice! {
    /// How a compaction of the index (`index`) holds the index's lock.
    Compaction {
        /// For the whole compaction: the expired entries dropped, the snapshot
        /// compressed and written, every request that needs the index waiting.
        HoldingTheLock = "holding-the-lock",
        /// Only to copy the index and, at the end, to swap the rebuilt one in:
        /// the snapshot is compressed and written off the lock, and the entries
        /// added meanwhile are carried over.
        BuildAndSwap = "build-and-swap",
        /// In `compaction_slices` pieces, the lock taken and given back for
        /// each: the same work, in short holds; the snapshot written off the lock.
        InSlices = "in-slices",
    }
}

crate::choice! {
    /// Which threads do the work.
    WorkOn {
        /// The request's own task, on the runtime's async worker threads: while it
        /// runs, that worker serves nothing else (seed 001's bug).
        AsyncWorker = "async-worker",
        /// tokio's blocking pool (`spawn_blocking`), at most `work_limit` at once.
        BlockingPool = "blocking-pool",
        /// A rayon pool of `work_limit` threads (seed 001's fix).
        Rayon = "rayon",
    }
}

/// How many threads a pool runs (or works a limit lets run at once): a number, or
/// sized from the machine the way services size theirs. `host-cpus` counts the
/// CPUs the kernel has online (`/proc/cpuinfo`, `sysconf(_SC_NPROCESSORS_ONLN)`),
/// blind to the affinity and the cgroup quota the process runs under, as a service
/// that reads the host's CPU count does (Go before `automaxprocs`, the JVM before
/// container support); `quota` is the server's own CPU quota rounded down to whole
/// threads (at least 1), the affinity's cores where there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolSize {
    Count(usize),
    HostCpus,
    Quota,
}

impl PoolSize {
    /// The number this size comes to: `host_cpus` online, `quota_cores` allowed
    /// by the server's cgroup, `cores` in its affinity; a count as it is.
    pub fn resolve(&self, host_cpus: usize, quota_cores: Option<f64>, cores: usize) -> usize {
        match self {
            PoolSize::Count(n) => *n,
            PoolSize::HostCpus => host_cpus.max(1),
            // Rounded down, as automaxprocs does: the pool alone can then never
            // spend more than the quota in a period.
            PoolSize::Quota => quota_cores
                .map_or(cores, |q| (q.floor() as usize).min(cores))
                .max(1),
        }
    }
}

impl SettingValue for PoolSize {
    const VALUE_NAME: &'static str = "N|host-cpus|quota";
    fn parse_text(text: &str) -> Result<Self, String> {
        match text.trim() {
            "host-cpus" => Ok(PoolSize::HostCpus),
            "quota" => Ok(PoolSize::Quota),
            other => other
                .parse()
                .map(PoolSize::Count)
                .map_err(|_| format!("`{other}` is neither a whole number, host-cpus nor quota")),
        }
    }
    fn to_text(&self) -> String {
        match self {
            PoolSize::Count(n) => n.to_string(),
            PoolSize::HostCpus => "host-cpus".into(),
            PoolSize::Quota => "quota".into(),
        }
    }
    fn check(&self, bounds: &Bounds) -> Result<(), String> {
        match (self, bounds) {
            (PoolSize::Count(n), Bounds::Count { min, max })
                if (*n as u64) < *min || (*n as u64) > *max =>
            {
                Err(format!("between {min} and {max}, host-cpus or quota"))
            }
            _ => Ok(()),
        }
    }
    fn allowed(bounds: &Bounds) -> String {
        format!(
            "{}, host-cpus (the CPUs online, blind to affinity and quota), \
             quota (the server's cgroup quota in whole cores, rounded down, at least 1)",
            bounds.describe()
        )
    }
    fn write<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PoolSize::Count(n) => s.serialize_u64(*n as u64),
            other => s.serialize_str(&other.to_text()),
        }
    }
    fn read<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum CountOrName {
            Count(usize),
            Name(String),
        }
        match CountOrName::deserialize(d)? {
            CountOrName::Count(n) => Ok(PoolSize::Count(n)),
            CountOrName::Name(text) => Self::parse_text(&text).map_err(serde::de::Error::custom),
        }
    }
}

/// Where the operator's routes (`/stats`, `/metrics`, `/healthz`, `/scenarios`,
/// `/admin/*`) listen besides the data port, so a flood of the data port cannot
/// lock the operator out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminListen {
    /// Loopback, on the data port + 1 (an ephemeral port when the data port is 0).
    Auto,
    /// Nowhere but the data port.
    Off,
    At(SocketAddr),
}

impl AdminListen {
    /// The address to bind, given where the data port is.
    pub fn address(&self, data: SocketAddr) -> Option<SocketAddr> {
        match self {
            AdminListen::Off => None,
            AdminListen::At(addr) => Some(*addr),
            AdminListen::Auto => {
                let port = match data.port() {
                    0 => 0,
                    p => p.checked_add(1).unwrap_or(0),
                };
                Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
            }
        }
    }
}

impl SettingValue for AdminListen {
    const VALUE_NAME: &'static str = "ADDR|auto|off";
    fn parse_text(text: &str) -> Result<Self, String> {
        match text.trim() {
            "auto" => Ok(AdminListen::Auto),
            "off" => Ok(AdminListen::Off),
            other => other.parse().map(AdminListen::At).map_err(|_| {
                format!("`{other}` is neither auto, off nor an address like 127.0.0.1:7879")
            }),
        }
    }
    fn to_text(&self) -> String {
        match self {
            AdminListen::Auto => "auto".into(),
            AdminListen::Off => "off".into(),
            AdminListen::At(addr) => addr.to_string(),
        }
    }
    fn allowed(_: &Bounds) -> String {
        "auto (127.0.0.1, the data port + 1; ephemeral when the data port is 0), \
         off (the data port only), IP:PORT"
            .into()
    }
    fn write<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_text())
    }
    fn read<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::parse_text(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// The one list of settings; `$callback!` receives every entry as
/// `/// help  name: Type = default; bounds; live|restart; world|service; "section";`.
///
/// `world` marks what a ticket takes as given and an attendee could not change in
/// real life: the store's latency, faults and slots, the network's delay, the CPU
/// cost of the work, the timer. `service` is what the code decides. A fix changes
/// the service only: `workshop check` refuses to judge a server whose world
/// differs from its scenario's ([`Settings::world_changes`]).
#[macro_export]
macro_rules! with_settings {
    ($callback:ident) => {
        $callback! {
            /// Address to listen on; port 0 picks a free port.
            listen: std::net::SocketAddr = $crate::settings::DEFAULT_LISTEN;
                $crate::value::Bounds::Any; restart; service; "serving";
            /// Where the operator's routes (/stats, /metrics, /healthz, /scenarios, /admin/*) also
            /// listen, with a connection limit of their own; they stay on the data port too.
            admin_listen: $crate::settings::AdminListen = $crate::settings::AdminListen::Auto;
                $crate::value::Bounds::Any; restart; service; "serving";
            /// Connections open at once on the data port; beyond it a new connection gets a JSON
            /// 503 and is closed.
            max_connections: usize = 10_000;
                $crate::value::Bounds::Count { min: 1, max: 1 << 20 }; restart; service; "serving";
            /// Close a connection that has not sent a whole request head within this of opening or
            /// going idle.
            header_read_timeout: std::time::Duration = std::time::Duration::from_secs(10);
                $crate::value::Bounds::Span { zero: false, max: $crate::settings::MAX_SPAN };
                restart; service; "serving";
            /// Answer 408 when a request body has not fully arrived within this.
            body_read_timeout: std::time::Duration = std::time::Duration::from_secs(30);
                $crate::value::Bounds::Span { zero: false, max: $crate::settings::MAX_SPAN };
                restart; service; "serving";
            /// Largest raw request body accepted (413 beyond), e.g. `64k`, `16MiB`.
            max_body_bytes: u64 = 16 << 20;
                $crate::value::Bounds::Count { min: 1, max: u64::MAX }; restart; service; "serving";
            /// Largest synthetic element (`{"size": N}`) accepted (413 beyond).
            max_element_bytes: u64 = 1 << 30;
                $crate::value::Bounds::Count { min: 1, max: u64::MAX }; restart; service; "serving";
            /// How long shutdown waits for requests and persists in flight.
            drain_timeout: std::time::Duration = std::time::Duration::from_secs(10);
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_SPAN };
                restart; service; "serving";
            /// Require `Authorization: Bearer TOKEN` on admin routes, from any address (also
            /// ISIM_ADMIN_TOKEN); without it admin routes answer loopback clients only.
            admin_token: $crate::value::Secret = $crate::value::Secret::default();
                $crate::value::Bounds::Any; restart; service; "serving";
            /// The data port's listen backlog (`listen(2)`): connections the kernel has completed
            /// and holds for the server to accept; when it is full, new SYNs are dropped (`nstat`
            /// `TcpExtListenOverflows`) and their clients retransmit after 1 s, and a second after
            /// each further drop (Linux 6.5 and later, `net.ipv4.tcp_syn_linear_timeouts`; before
            /// 6.5 after 1 s, then 3 s). The kernel caps it at `net.core.somaxconn` (4096 since
            /// Linux 5.4, 128 before); 128 is also mio's hard-coded backlog in some versions. A
            /// live change is a second `listen(2)` on the listening socket, which Linux takes as
            /// the new limit within a second.
            listen_backlog: usize = $crate::settings::DEFAULT_LISTEN_BACKLOG;
                $crate::value::Bounds::Count { min: 1, max: 65_535 }; live; service; "connections";
            /// CPU time a new connection costs the server before its first request, as a TLS
            /// handshake's (about 1 ms with an RSA-2048 key, 5 ms with RSA-4096): spent on the
            /// thread that runs it, measured in thread CPU time, so it costs the same CPU on any
            /// machine (0 = none).
            handshake_cpu: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_HANDSHAKE_CPU };
                live; world; "connections";
            /// Where the handshake runs: `connection` (the connection's own task, on an async
            /// worker) or `accept-loop` (inline, before the next accept).
            handshake_on: $crate::settings::HandshakeOn = $crate::settings::HandshakeOn::Connection;
                $crate::value::Bounds::Any; live; service; "connections";
            /// Set TCP_NODELAY on each accepted connection, so a small write leaves at once;
            /// `false` lets Nagle's algorithm hold a small write while an earlier one is
            /// unacknowledged (connections accepted after a change).
            tcp_nodelay: bool = true;
                $crate::value::Bounds::Any; live; service; "connections";
            /// How a reply leaves: `one` write, or `split` (the head, then the body in a write of
            /// its own).
            reply_writes: $crate::settings::ReplyWrites = $crate::settings::ReplyWrites::One;
                $crate::value::Bounds::Any; live; service; "connections";
            /// The container's CPU limit: the server puts itself in a cgroup of its own at start
            /// with this much CPU time per `cpu_period` (cgroup v2 `cpu.max`, v1
            /// `cpu.cfs_quota_us`), e.g. `50ms` for half a core; needs root or a delegated cgroup
            /// (0 = no limit of its own).
            cpu_quota: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_CPU_QUOTA };
                restart; world; "machine";
            /// With `cpu_quota`: the period the quota is granted per, as the kernel's CFS bandwidth
            /// control counts it (the kernel's and Kubernetes' default is 100ms; 1ms to 1s).
            cpu_period: std::time::Duration = $crate::settings::DEFAULT_CPU_PERIOD;
                $crate::value::Bounds::Span { zero: false, max: $crate::settings::MAX_CPU_PERIOD };
                restart; world; "machine";
            /// A noisy neighbour: another process the server starts beside itself at start
            /// (`system-simulator neighbour`, a batch job on the same host), with this many
            /// CPU-bound threads for each CPU the server may use, outside the server's own CPU
            /// limit; the server's threads then wait for a CPU while its own CPU use looks low (0 =
            /// none).
            neighbour_threads_per_cpu: usize = 0;
                $crate::value::Bounds::Count { min: 0, max: 16 }; restart; world; "machine";
            /// Simulated network delay, applied on the way in and again on the way out, inside the
            /// request lifetime.
            network_delay: $crate::delay::Delay = $crate::settings::default_network_delay();
                $crate::value::Bounds::Any; live; world; "request path";
            /// What the processor does with each element before persisting it.
            work: $crate::settings::WorkKind = $crate::settings::WorkKind::None;
                $crate::value::Bounds::Any; live; world; "request path";
            /// With `work = zstd`: bytes compressed per element, e.g. `1MiB` (the element stands
            /// for a WAL segment's worth of records).
            work_bytes: u64 = 1 << 20;
                $crate::value::Bounds::Count { min: 1, max: 64 << 20 }; live; world; "request path";
            /// With `work = zstd`: the CPU time one work costs, e.g. `35ms`; the server measures
            /// once how many bytes of zstd take that long on this machine (thread CPU time, not
            /// wall time), so the work costs the same CPU on a slow laptop and a fast one (0 =
            /// compress exactly `work_bytes` everywhere).
            work_cpu: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_WORK_CPU };
                live; world; "request path";
            /// Where the work runs: `async-worker` (inline, blocking the runtime), `blocking-pool`
            /// (spawn_blocking) or `rayon`.
            work_on: $crate::settings::WorkOn = $crate::settings::WorkOn::AsyncWorker;
                $crate::value::Bounds::Any; live; service; "request path";
            /// With `work_on = blocking-pool`: works running at once, the rest wait their turn (0 =
            /// no limit: up to tokio's 512 blocking threads); with `rayon`: the pool's threads (0 =
            /// one per core the process may use); `host-cpus` or `quota` size either from the
            /// machine.
            work_limit: $crate::settings::PoolSize = $crate::settings::PoolSize::Count(1);
                $crate::value::Bounds::Count { min: 0, max: 512 }; live; service; "request path";
            /// With `work_on = rayon`: the pieces each work is cut into and compressed in parallel
            /// on the pool, as a `par_iter` over the element would (1 = whole, on one thread);
            /// `host-cpus` or `quota` size it from the machine; the work's CPU is the same, spent
            /// faster.
            work_split: $crate::settings::PoolSize = $crate::settings::PoolSize::Count(1);
                $crate::value::Bounds::Count { min: 1, max: 512 }; live; service; "request path";
            /// Pace the CPU work to this share of the server's CPU quota: a work starts only while
            /// the works started in the last quota period (`cpu.max`'s, read from the server's own
            /// cgroup) and it come to at most this share of the quota, so the kernel never
            /// throttles the process for the work and the rest of the server keeps running; the
            /// work waits its turn instead (0 = no pacing; no quota, no pacing).
            work_budget: f64 = 0.0;
                $crate::value::Bounds::Share; live; service; "request path";
            /// How the service normalises each element's record (trimmed, one space between fields)
            /// before admission, on tokio's blocking pool: `off` (replies carry no digest),
            /// `scan-forward` or `scan-back` (the same text, found another way); the reply carries
            /// the normalised record's CRC-32.
            normalise: $crate::settings::Normalise = $crate::settings::Normalise::Off;
                $crate::value::Bounds::Any; live; service; "request path";
            /// Share of synthetic elements whose record arrives in a partner's fixed-width layout
            /// (each field padded with spaces to its column) rather than delimited; which ones
            /// follows from the id.
            records_fixed_width: f64 = 0.0;
                $crate::value::Bounds::Share; live; world; "request path";
            /// With `records_fixed_width`: the fixed-width note column is as wide as makes
            /// `scan-forward` spend this much CPU on one record on this machine, measured at start
            /// in thread CPU time as `work_cpu` is (0 = 80 columns).
            record_padding_cpu: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_WORK_CPU };
                live; world; "request path";
            /// Every request records its element in a shared in-memory index before admission: a
            /// map behind one `std::sync::Mutex`, taken on the async worker that runs the request,
            /// each entry kept 10 s; a compactor thread drops the expired entries and writes a
            /// snapshot every `compaction_every` (false = no index, the original).
            index: bool = false;
                $crate::value::Bounds::Any; live; service; "index";
            /// With `index`: how a compaction holds the index's lock: `holding-the-lock` (all of
            /// it), `build-and-swap` (a copy taken under the lock, the rest off it, the result
            /// swapped in) or `in-slices` (`compaction_slices` short holds).
            compaction: $crate::settings::Compaction = $crate::settings::Compaction::HoldingTheLock;
                $crate::value::Bounds::Any; live; service; "index";
            /// With `index`: how often the compactor runs, from the end of one compaction to the
            /// start of the next (0 = never: the index keeps every entry).
            compaction_every: std::time::Duration = std::time::Duration::from_secs(3);
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_SPAN };
                live; service; "index";
            /// With `compaction = in-slices`: the pieces a compaction is cut into, the lock taken
            /// and given back for each.
            compaction_slices: usize = 32;
                $crate::value::Bounds::Count { min: 1, max: 4096 }; live; service; "index";
            /// With `index`: the CPU one compaction costs, compressing the index's snapshot with
            /// zstd; the bytes are measured on this machine at start, in thread CPU time, as
            /// `work_cpu`'s are (0 = the entries' own bytes only).
            compaction_cpu: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_WORK_CPU };
                live; world; "index";
            /// With `index`: how long writing one compaction's snapshot to the store takes: the
            /// store's latency, a wait off the CPU.
            snapshot_write: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_SPAN };
                live; world; "index";
            /// What a request must obtain before its element is handed on: `semaphore`.
            admission: $crate::settings::AdmissionKind = $crate::settings::AdmissionKind::Semaphore;
                $crate::value::Bounds::Any; restart; service; "request path";
            /// Persistence permits: how many persists may run at once (the original's PERSIST_N).
            permits: usize = $crate::settings::DEFAULT_PERMITS;
                $crate::value::Bounds::Count { min: 1, max: $crate::settings::MAX_PERMITS };
                live; service; "request path";
            /// Byte-weighted admission: an element takes one permit per this many bytes, rounded up
            /// (at least 1, at most `permits`); 0 = one permit per element, whatever its size (the
            /// original).
            permit_bytes: u64 = 0;
                $crate::value::Bounds::Count { min: 0, max: u64::MAX };
                live; service; "request path";
            /// A lane for small elements: those of at most this many bytes take their permits from
            /// `small_lane_permits` of their own, so they never queue behind large ones (0 = one
            /// lane for all).
            small_lane_bytes: u64 = 0;
                $crate::value::Bounds::Count { min: 0, max: u64::MAX };
                live; service; "request path";
            /// With `small_lane_bytes`: the small lane's permits (the rest of the elements keep
            /// `permits`).
            small_lane_permits: usize = $crate::settings::DEFAULT_PERMITS;
                $crate::value::Bounds::Count { min: 1, max: $crate::settings::MAX_PERMITS };
                live; service; "request path";
            /// What a request that finds no permit free, or the persistence queue full, does:
            /// `wait` or `shed` (503 at once).
            when_full: $crate::settings::WhenFull = $crate::settings::WhenFull::Wait;
                $crate::value::Bounds::Any; live; service; "request path";
            /// A request that has waited this long for a permit gets 503 (request-shed) instead of
            /// waiting on: its client has most likely given up (0 = wait as long as it takes).
            permit_wait_limit: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_SPAN };
                live; service; "request path";
            /// What a request does when its client leaves before the reply: `detach` (run on to its
            /// end, the original) or `cancel` (stop at its next wait and give back its permit or
            /// queue slot; work and persists under way finish).
            on_disconnect: $crate::settings::OnDisconnect = $crate::settings::OnDisconnect::Detach;
                $crate::value::Bounds::Any; live; service; "request path";
            /// How long a permit is held: `persist-done` (the original) or `hand-off` (only until
            /// the element is handed to persistence).
            permit_until: $crate::settings::PermitUntil =
                $crate::settings::PermitUntil::PersistDone;
                $crate::value::Bounds::Any; live; service; "request path";
            /// How elements reach the store: `task-per-element` or `pool`.
            persistence: $crate::settings::PersistenceKind =
                $crate::settings::PersistenceKind::TaskPerElement;
                $crate::value::Bounds::Any; live; service; "request path";
            /// With `persistence = pool`: workers persisting at once (1 drains sequentially).
            persist_workers: usize = 32;
                $crate::value::Bounds::Count { min: 1, max: 65_536 }; live; service; "request path";
            /// With `persistence = pool`: elements the queue holds before a request waits for room.
            persist_queue: usize = 1024;
                $crate::value::Bounds::Count { min: 1, max: 1 << 20 };
                live; service; "request path";
            /// With `persistence = pool`: an element that waited longer than this in the queue is
            /// dropped, not persisted (CoDel-style: stale work is worth less than fresh); 0 =
            /// never.
            queue_wait_limit: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_SPAN };
                live; service; "request path";
            /// Multipart: an element larger than this is written as parts of this size,
            /// `parts_at_once` at a time, and its persist ends with its last part (0 = whole
            /// elements; simulated store only).
            part_bytes: u64 = 0;
                $crate::value::Bounds::Count { min: 0, max: u64::MAX };
                live; service; "store and faults";
            /// With `part_bytes`: parts of one element written at once.
            parts_at_once: usize = 4;
                $crate::value::Bounds::Count { min: 1, max: 1024 };
                live; service; "store and faults";
            /// The simulated timer's tick: every simulated delay (network, store) ends on the first
            /// tick at or after its deadline, as the original's tokio timer rounded every sleep up
            /// to its 1 ms tick, which kept clients released together in step (0 = delays last what
            /// they are configured to, on average).
            timer_tick: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_TIMER_TICK };
                live; world; "store and faults";
            /// Simulated store latency per element, e.g. `60ms`, `exp(60ms)`, `uniform(50ms,
            /// 70ms)`.
            persist_latency: $crate::delay::Delay = $crate::settings::default_persist_latency();
                $crate::value::Bounds::Any; live; world; "store and faults";
            /// Writes the store serves at once; the rest wait inside it, in order, and that wait
            /// counts in the persist (0 = no limit; applies to writes that start after a change).
            store_concurrency: usize = 0;
                $crate::value::Bounds::Count { min: 0, max: 1 << 20 };
                live; world; "store and faults";
            /// Extra simulated store time per MiB of element.
            persist_cost_per_mib: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_SPAN };
                live; world; "store and faults";
            /// Share of persists that fail on purpose.
            persist_error_rate: f64 = 0.0;
                $crate::value::Bounds::Share; live; world; "store and faults";
            /// Share of persists that hang until `persist_timeout` ends them (a stuck store).
            persist_stall_rate: f64 = 0.0;
                $crate::value::Bounds::Share; live; world; "store and faults";
            /// Hedging: a persist still running after this starts a second attempt, and the first
            /// to finish counts (0 = never; simulated store only).
            hedge_after: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_SPAN };
                live; service; "store and faults";
            /// A persist still running after this fails and gives its permit back.
            persist_timeout: std::time::Duration = std::time::Duration::from_secs(30);
                $crate::value::Bounds::Span { zero: false, max: $crate::settings::MAX_SPAN };
                live; service; "store and faults";
            /// A look-aside cache of this many elements by key in front of the store's reads (0 =
            /// none): a request that carries a key (`{"size": N, "key": K}`) reads element K, from
            /// the cache (cache-hit) or, on a miss, by a fill that reads the store
            /// (`persist_latency`, one of the store's `store_concurrency` slots; reads are
            /// simulated, with `persist_dir` too) and puts the element in the cache, least recently
            /// used out. The server starts with keys 0 to N-1 in it (the hottest keys of a Zipf
            /// load: a cache warmed by hours of traffic); a live change empties it, as a cache node
            /// that failed and came back does.
            cache_entries: usize = 0;
                $crate::value::Bounds::Count { min: 0, max: 1 << 24 }; live; world; "cache";
            /// With `cache_entries`: whether the service reaches the cache. While it does not,
            /// every read misses and no fill goes in; when it does again, every entry the cache
            /// kept is stale (it missed the invalidations sent meanwhile), and a read of a stale
            /// entry is a miss unless `stale_reads = serve`.
            cache_reachable: bool = true;
                $crate::value::Bounds::Any; live; world; "cache";
            /// With `cache_entries`: `per-request` (each miss fills for itself) or `coalesced` (one
            /// fill per key in flight, the other misses wait on it).
            cache_fills: $crate::settings::CacheFills = $crate::settings::CacheFills::PerRequest;
                $crate::value::Bounds::Any; live; service; "cache";
            /// With `cache_entries`: what a fill does when its request's client has gone: `discard`
            /// (gives up its wait for the store; a read already begun is thrown away) or `keep`
            /// (runs to the end and fills the cache).
            abandoned_fills: $crate::settings::AbandonedFills =
                $crate::settings::AbandonedFills::Discard;
                $crate::value::Bounds::Any; live; service; "cache";
            /// With `cache_entries`: fills in flight at once; a miss that finds this many gets 503
            /// at once (cache-fill-refuse) instead of a fill (0 = no limit).
            fill_limit: usize = 0;
                $crate::value::Bounds::Count { min: 0, max: 1 << 20 }; live; service; "cache";
            /// With `cache_entries`: what a read does with a stale entry (`cache_reachable`): `miss`
            /// (fills it as any miss) or `serve` (answers with it at once, and one refresh per key
            /// runs to its end in the background, unless `fill_limit` fills are in flight).
            stale_reads: $crate::settings::StaleReads = $crate::settings::StaleReads::Miss;
                $crate::value::Bounds::Any; live; service; "cache";
            /// Write every element to DIR/<id>.bin instead of simulating the store (real I/O; files
            /// are kept).
            persist_dir: Option<std::path::PathBuf> = None;
                $crate::value::Bounds::Any; restart; world; "durability";
            /// With `persist_dir`: fsync each file before the persist counts as done.
            persist_fsync: bool = false;
                $crate::value::Bounds::Any; restart; world; "durability";
            /// With `persist_dir`: reply only once the element is fsync'd, so a crash loses no
            /// acknowledged element.
            durable: bool = false;
                $crate::value::Bounds::Any; restart; service; "durability";
        }
    };
}

/// One setting, as the table and the flags describe it.
#[derive(Debug, Clone, Copy)]
pub struct SettingInfo {
    /// The TOML and JSON key; the flag is the same with `-` for `_`.
    pub key: &'static str,
    pub help: &'static str,
    pub value_name: &'static str,
    pub bounds: Bounds,
    /// Changeable through `PUT /admin/config` while the server runs.
    pub live: bool,
    /// Part of the world a ticket takes as given (the store, the network, the
    /// work's cost), not of the service a fix may change.
    pub world: bool,
    pub section: &'static str,
    /// A flag that takes no value.
    pub switch: bool,
    /// The default, as the flag would take it.
    pub default_text: fn() -> String,
    /// The values allowed, in words.
    pub allowed: fn() -> String,
}

impl SettingInfo {
    pub fn flag(&self) -> String {
        self.key.replace('_', "-")
    }

    /// `ISIM_ADMIN_TOKEN` for `admin_token`: where secrets may also come from.
    pub fn env_var(&self) -> String {
        format!("ISIM_{}", self.key.to_ascii_uppercase())
    }
}

/// Why a configuration cannot be used; the message names the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    #[error("{key} must be {allowed}, got {value}")]
    OutOfRange {
        key: &'static str,
        allowed: String,
        value: String,
    },
    #[error(
        "{} cannot change while the server runs: restart it with the new value (`serve --{}`)",
        .0.join(", "),
        .0[0].replace('_', "-")
    )]
    NeedsRestart(Vec<&'static str>),
    #[error("durable needs persist_dir: only files can be on disk before the reply")]
    DurableWithoutDir,
    #[error(
        "hedge_after needs the simulated store: two writers of one file could leave a partial one \
         behind"
    )]
    HedgingFiles,
    #[error(
        "part_bytes needs the simulated store: the file store writes each element as one file"
    )]
    PartsFiles,
    #[error("{0}")]
    Other(String),
}

macro_rules! is_world {
    (world) => {
        true
    };
    (service) => {
        false
    };
}

macro_rules! is_live {
    (live) => {
        true
    };
    (restart) => {
        false
    };
}

macro_rules! define_settings {
    ($( $(#[doc = $doc:literal])+ $name:ident : $ty:ty = $default:expr ; $bounds:expr ; $live:ident ; $kind:ident ; $section:literal ; )*) => {
        /// The whole configuration in force. Every field is always present: a file,
        /// a scenario or the flags are [`SettingsUpdate`]s laid over the defaults.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Settings {
            $( $(#[doc = $doc])+ #[serde(with = "crate::value::field")] pub $name: $ty, )*
        }

        impl Default for Settings {
            /// The original simulator.
            fn default() -> Self {
                Self { $( $name: $default, )* }
            }
        }

        /// Some settings: a TOML file, a scenario's `config`, the flags given, or a
        /// `PUT /admin/config` body. Unknown keys are refused; absent keys keep
        /// their value.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct SettingsUpdate {
            $(
                #[serde(with = "crate::value::optional_field", skip_serializing_if = "Option::is_none")]
                pub $name: Option<$ty>,
            )*
        }

        /// Every setting, in declaration order.
        pub static SETTINGS: &[SettingInfo] = &[
            $(
                SettingInfo {
                    key: stringify!($name),
                    help: concat!($($doc),+),
                    value_name: <$ty as SettingValue>::VALUE_NAME,
                    bounds: $bounds,
                    live: is_live!($live),
                    world: is_world!($kind),
                    section: $section,
                    switch: <$ty as SettingValue>::IS_SWITCH,
                    allowed: {
                        fn allowed() -> String {
                            <$ty as SettingValue>::allowed(&$bounds)
                        }
                        allowed
                    },
                    default_text: {
                        fn default_text() -> String {
                            SettingValue::to_text(&Settings::default().$name)
                        }
                        default_text
                    },
                },
            )*
        ];

        impl Settings {
            /// Checks every value against its bounds, then the rules between settings.
            pub fn validate(&self) -> Result<(), SettingsError> {
                $(
                    SettingValue::check(&self.$name, &$bounds).map_err(|allowed| {
                        SettingsError::OutOfRange {
                            key: stringify!($name),
                            allowed,
                            value: SettingValue::to_text(&self.$name),
                        }
                    })?;
                )*
                self.validate_together()
            }

            /// These settings with `update` laid over them (nothing checked here).
            pub fn with(mut self, update: &SettingsUpdate) -> Self {
                $( if let Some(v) = &update.$name { self.$name = v.clone(); } )*
                self
            }

            /// The world settings (see [`with_settings!`]) whose value here differs from
            /// `scenario`'s: (key, scenario's value, this value), as the flag would take them.
            pub fn world_changes(&self, scenario: &Settings) -> Vec<(&'static str, String, String)> {
                let mut moved = Vec::new();
                $(
                    if is_world!($kind) && self.$name != scenario.$name {
                        moved.push((
                            stringify!($name),
                            SettingValue::to_text(&scenario.$name),
                            SettingValue::to_text(&self.$name),
                        ));
                    }
                )*
                moved
            }

            /// Each setting's value as the flag would take it, in declaration order.
            pub fn texts(&self) -> Vec<(&'static str, String)> {
                vec![ $( (stringify!($name), SettingValue::to_text(&self.$name)), )* ]
            }
        }

        impl SettingsUpdate {
            /// The keys this update names.
            pub fn keys(&self) -> Vec<&'static str> {
                let mut keys = Vec::new();
                $( if self.$name.is_some() { keys.push(stringify!($name)); } )*
                keys
            }

            /// The keys that would change a setting that cannot change while running.
            fn restart_keys(&self, current: &Settings) -> Vec<&'static str> {
                let mut keys = Vec::new();
                $(
                    if !is_live!($live) && self.$name.as_ref().is_some_and(|v| *v != current.$name) {
                        keys.push(stringify!($name));
                    }
                )*
                keys
            }

            /// An update setting every live setting to its value in `settings`, so
            /// laying it over any configuration gives `settings`' live part.
            pub fn live_part_of(settings: &Settings) -> Self {
                let mut update = SettingsUpdate::default();
                $( if is_live!($live) { update.$name = Some(settings.$name.clone()); } )*
                update
            }

            /// This update with only the settings `keys` names.
            pub fn only(&self, keys: &[&str]) -> Self {
                let mut update = SettingsUpdate::default();
                $( if keys.contains(&stringify!($name)) { update.$name = self.$name.clone(); } )*
                update
            }

            /// `other`'s keys laid over this update's.
            pub fn and(mut self, other: &SettingsUpdate) -> Self {
                $( if other.$name.is_some() { self.$name = other.$name.clone(); } )*
                self
            }
        }
    };
}

with_settings!(define_settings);

impl Settings {
    fn validate_together(&self) -> Result<(), SettingsError> {
        if self.durable && self.persist_dir.is_none() {
            return Err(SettingsError::DurableWithoutDir);
        }
        if !self.hedge_after.is_zero() && self.persist_dir.is_some() {
            return Err(SettingsError::HedgingFiles);
        }
        if self.part_bytes > 0 && self.persist_dir.is_some() {
            return Err(SettingsError::PartsFiles);
        }
        if self.cpu_period < MIN_CPU_PERIOD {
            return Err(SettingsError::Other(format!(
                "cpu_period {} is under the kernel's least, 1ms",
                crate::value::text_of(self.cpu_period)
            )));
        }
        if !self.cpu_quota.is_zero() && self.cpu_quota < MIN_CPU_PERIOD {
            return Err(SettingsError::Other(format!(
                "cpu_quota {} is under the kernel's least, 1ms (0 = no limit)",
                crate::value::text_of(self.cpu_quota)
            )));
        }
        Ok(())
    }

    /// The settings a live change would install: all of `update` or, on any
    /// invalid value or any setting that needs a restart, an error and nothing.
    pub fn changed_live(&self, update: &SettingsUpdate) -> Result<Settings, SettingsError> {
        let restart = update.restart_keys(self);
        if !restart.is_empty() {
            return Err(SettingsError::NeedsRestart(restart));
        }
        let next = self.clone().with(update);
        next.validate()?;
        Ok(next)
    }

    /// The admin token, when one is set.
    pub fn admin_token(&self) -> Option<&str> {
        self.admin_token.expose()
    }

    /// The store the settings select: `files` with `persist_dir`, else `simulated`.
    pub fn store_name(&self) -> &'static str {
        if self.persist_dir.is_some() {
            "files"
        } else {
            "simulated"
        }
    }
}

impl SettingsUpdate {
    pub fn is_empty(&self) -> bool {
        self.keys().is_empty()
    }
}

/// Looks a setting up by key.
pub fn info(key: &str) -> Option<&'static SettingInfo> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// The settings tables of `docs/limits.md`: one per part of the server, a row per
/// setting. `system-simulator settings --markdown` prints them.
pub fn markdown_table() -> String {
    let mut sections: Vec<&str> = Vec::new();
    for s in SETTINGS {
        if !sections.contains(&s.section) {
            sections.push(s.section);
        }
    }
    let mut out = String::new();
    for section in sections {
        out.push_str(&format!(
            "\n### {section}\n\n\
             | setting (TOML / JSON key) | flag | default | allowed | live | world or service | what it does |\n\
             | --- | --- | --- | --- | --- | --- | --- |\n"
        ));
        for s in SETTINGS.iter().filter(|s| s.section == section) {
            let default = (s.default_text)();
            let default = if default.is_empty() {
                "unset".to_owned()
            } else {
                format!("`{default}`")
            };
            let flag = if s.switch {
                format!("`--{}`", s.flag())
            } else {
                format!("`--{} {}`", s.flag(), s.value_name)
            };
            out.push_str(&format!(
                "| `{}` | {flag} | {default} | {} | {} | {} | {} |\n",
                s.key,
                (s.allowed)(),
                if s.live { "yes" } else { "restart" },
                if s.world { "world" } else { "service" },
                s.help.trim().replace('|', "\\|"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_original_simulator_and_valid() {
        let s = Settings::default();
        s.validate().unwrap();
        assert_eq!(s.permits, 8);
        assert_eq!(s.persist_latency.to_string(), "50ms + normal(10ms, 5ms)");
        assert_eq!(s.network_delay.to_string(), "500us + normal(1ms, 100us)");
        assert!(s.listen.ip().is_loopback());
    }

    #[test]
    fn the_admin_listener_follows_the_data_port_on_loopback() {
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        let auto = AdminListen::Auto;
        assert_eq!(auto.address(at("0.0.0.0:7878")), Some(at("127.0.0.1:7879")));
        assert_eq!(auto.address(at("127.0.0.1:0")), Some(at("127.0.0.1:0")));
        assert_eq!(auto.address(at("127.0.0.1:65535")), Some(at("127.0.0.1:0")));
        assert_eq!(AdminListen::Off.address(at("127.0.0.1:1")), None);
        for text in ["auto", "off", "127.0.0.2:9000"] {
            assert_eq!(AdminListen::parse_text(text).unwrap().to_text(), text);
        }
        assert!(AdminListen::parse_text("sometimes").is_err());
    }

    #[test]
    fn every_setting_is_in_the_table_once() {
        let table = markdown_table();
        for s in SETTINGS {
            assert_eq!(
                table.matches(&format!("| `{}` |", s.key)).count(),
                1,
                "{}",
                s.key
            );
        }
        assert_eq!(SETTINGS.len(), Settings::default().texts().len());
    }

    #[test]
    fn toml_overrides_only_what_it_names_and_refuses_unknown_keys() {
        let update: SettingsUpdate = toml::from_str(
            "permits = 64\nnetwork_delay = \"0\"\ndrain_timeout = \"3s\"\nmax_body_bytes = \"64k\"",
        )
        .unwrap();
        let s = Settings::default().with(&update);
        assert_eq!(s.permits, 64);
        assert_eq!(s.network_delay, Delay::fixed(Duration::ZERO));
        assert_eq!(s.drain_timeout, Duration::from_secs(3));
        assert_eq!(s.max_body_bytes, 64 << 10);
        assert_eq!(s.persist_latency, default_persist_latency());
        assert!(toml::from_str::<SettingsUpdate>("permitz = 3").is_err());
        assert!(toml::from_str::<SettingsUpdate>("persist_latency = \"soon\"").is_err());
        assert!(toml::from_str::<SettingsUpdate>("persistence = \"magic\"").is_err());
    }

    #[test]
    fn a_bad_or_restart_only_live_change_changes_nothing() {
        let current = Settings::default();
        let bad = SettingsUpdate {
            network_delay: Some(Delay::fixed(Duration::ZERO)),
            persist_error_rate: Some(f64::NAN),
            ..SettingsUpdate::default()
        };
        let err = current.changed_live(&bad).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("persist_error_rate must be between 0 and 1"),
            "{err}"
        );
        let zero = SettingsUpdate {
            permits: Some(0),
            ..SettingsUpdate::default()
        };
        assert!(current
            .changed_live(&zero)
            .unwrap_err()
            .to_string()
            .contains("permits must be between 1"));
        let listen = SettingsUpdate {
            listen: Some("127.0.0.1:1".parse().unwrap()),
            permits: Some(9),
            ..SettingsUpdate::default()
        };
        assert_eq!(
            current.changed_live(&listen),
            Err(SettingsError::NeedsRestart(vec!["listen"]))
        );
        let same_listen = SettingsUpdate {
            listen: Some(current.listen),
            permits: Some(9),
            ..SettingsUpdate::default()
        };
        assert_eq!(current.changed_live(&same_listen).unwrap().permits, 9);
    }

    #[test]
    fn settings_round_trip_through_json_but_the_token_never_shows() {
        let s = Settings {
            admin_token: crate::value::Secret::new(Some("hunter2".into())),
            ..Settings::default()
        };
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("hunter2"), "{json}");
        let back: Settings = serde_json::from_str(&json).unwrap();
        assert_eq!(back.permits, s.permits);
        // A field missing from /stats is an error, not a silent default.
        let mut value: serde_json::Value = serde_json::to_value(&s).unwrap();
        value.as_object_mut().unwrap().remove("permits");
        assert!(serde_json::from_value::<Settings>(value).is_err());
    }
}
