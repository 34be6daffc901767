//! The kinds of value only settings take: each choice between named ways
//! (`choice!`), a pool's size, and where the operator's routes listen.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use serde::Deserialize;

use crate::value::{Bounds, SettingValue};

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
    /// What the journal does with a persist's entry when the persist fails.
    JournalOnError {
        /// Keeps the entry's file open in a list of entries to retry later,
        /// so a retry could append its outcome (nothing retries them).
        Keep = "keep",
        /// Appends the failure to the entry and closes its file, as every
        /// persist that succeeds does; entries kept before are closed too.
        Close = "close",
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
