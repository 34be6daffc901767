//! The list of every setting, and nothing else: a setting is one entry here.
//! What is made of the list is `derived.rs`'s.

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
            /// Largest synthetic element (`{"size": N}`) accepted (413 beyond); with `persist_dir`, which writes it whole, `max_body_bytes` too.
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
            /// and holds for the server to accept. When it is full, new SYNs are dropped (`nstat`
            /// `TcpExtListenOverflows`). Their clients retransmit after 1 s, and a second after
            /// each further drop (Linux 6.5 and later, `net.ipv4.tcp_syn_linear_timeouts`; before
            /// 6.5 after 1 s, then 3 s). The kernel caps it at `net.core.somaxconn` (4096 since
            /// Linux 5.4, 128 before); 128 is also mio's hard-coded backlog in some versions. A
            /// live change is a second `listen(2)` on the listening socket, which Linux takes as
            /// the new limit within a second.
            listen_backlog: usize = $crate::settings::DEFAULT_LISTEN_BACKLOG;
                $crate::value::Bounds::Count { min: 1, max: 65_535 }; live; service; "connections";
            /// CPU time a new connection costs the server before its first request, as a TLS
            /// handshake's (about 1 ms with an RSA-2048 key, 5 ms with RSA-4096). It is spent on
            /// the thread that runs it, measured in thread CPU time, so it costs the same CPU on
            /// any machine (0 = none).
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
            /// (`system-simulator neighbour`, a batch job on the same host). It has this many
            /// CPU-bound threads for each CPU the server may use, outside the server's own CPU
            /// limit. The server's threads then wait for a CPU while its own CPU use looks low (0 =
            /// none).
            neighbour_threads_per_cpu: usize = 0;
                $crate::value::Bounds::Count { min: 0, max: 16 }; restart; world; "machine";
            /// The container's soft limit on open files (`ulimit -n`, `RLIMIT_NOFILE`). The server
            /// sets it at start, as a container runtime or systemd's `LimitNOFILE=` does. Every
            /// connection and every open file takes one. Capped at the hard limit (0 = the server
            /// raises its soft limit to the hard one, up to 1,048,576).
            descriptor_limit: usize = 0;
                $crate::value::Bounds::Count { min: 0, max: 1 << 20 }; restart; world; "machine";
            /// The container's memory limit, e.g. `256MiB`. The server caps its own data memory at
            /// start (Linux's `RLIMIT_DATA`, what `prlimit --data` sets; its heap and every other
            /// private mapping count). An allocation past it fails and the process aborts, as a
            /// container's OOM kill ends it. macOS does not enforce it (0 = no limit).
            memory_limit: u64 = 0;
                $crate::value::Bounds::Count { min: 0, max: 1 << 40 }; restart; world; "machine";
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
            /// With `work = zstd`: the CPU time one work costs, e.g. `35ms`. The server measures
            /// once how many bytes of zstd take that long on this machine, in thread CPU time, not
            /// wall time. So the work costs the same CPU on a slow laptop and a fast one (0 =
            /// compress exactly `work_bytes` everywhere).
            work_cpu: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_WORK_CPU };
                live; world; "request path";
            /// Where the work runs: `async-worker` (inline, blocking the runtime), `blocking-pool`
            /// (spawn_blocking) or `rayon`.
            work_on: $crate::settings::WorkOn = $crate::settings::WorkOn::AsyncWorker;
                $crate::value::Bounds::Any; live; service; "request path";
            /// With `work_on = blocking-pool`: works running at once; the rest wait their turn (0 =
            /// no limit: up to tokio's 512 blocking threads). With `rayon`: the pool's threads (0 =
            /// one per core the process may use). `host-cpus` or `quota` size either from the
            /// machine.
            work_limit: $crate::settings::PoolSize = $crate::settings::PoolSize::Count(1);
                $crate::value::Bounds::Count { min: 0, max: 512 }; live; service; "request path";
            /// With `work_on = rayon`: the pieces each work is cut into and compressed in parallel
            /// on the pool, as a `par_iter` over the element would (1 = whole, on one thread).
            /// `host-cpus` or `quota` size it from the machine. The work's CPU is the same, spent
            /// faster.
            work_split: $crate::settings::PoolSize = $crate::settings::PoolSize::Count(1);
                $crate::value::Bounds::Count { min: 1, max: 512 }; live; service; "request path";
            /// Pace the CPU work to this share of the server's CPU quota. A work starts only while
            /// the works started in the last quota period, and it, come to at most this share of
            /// the quota (the period is `cpu.max`'s, read from the server's own cgroup). So the
            /// kernel never throttles the process for the work, and the rest of the server keeps
            /// running; the work waits its turn instead (0 = no pacing; no quota, no pacing).
            work_budget: f64 = 0.0;
                $crate::value::Bounds::Share; live; service; "request path";
            /// How the service normalises each element's record (trimmed, one space between fields)
            /// before admission, on tokio's blocking pool. `off`: replies carry no digest.
            /// `scan-forward` or `scan-back`: the same text, found another way; the reply carries
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
            /// map behind one `std::sync::Mutex`, taken on the async worker that runs the request.
            /// Each entry is kept 10 s. A compactor thread drops the expired entries and writes a
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
            /// What a request does when its client leaves before the reply. `detach`: it runs on to
            /// its end (the original). `cancel`: it stops at its next wait and gives back its
            /// permit or queue slot; work and persists under way finish.
            on_disconnect: $crate::settings::OnDisconnect = $crate::settings::OnDisconnect::Detach;
                $crate::value::Bounds::Any; live; service; "request path";
            /// Answer a client's retry once. A stored element that carries the client's key
            /// (`isim-request-key`) is remembered with its reply and a copy of its bytes; a retry
            /// with that key gets the same reply and is not stored again, and one with other bytes
            /// gets 422. A retry that comes while its first attempt still runs is stored again.
            answer_retries_once: bool = false;
                $crate::value::Bounds::Any; live; service; "request path";
            /// With `answer_retries_once`: how long a reply is remembered (0 = for ever). A client's
            /// retry after it is stored again.
            remember_replies_for: std::time::Duration = std::time::Duration::ZERO;
                $crate::value::Bounds::Span { zero: true, max: $crate::settings::MAX_REMEMBER_REPLIES };
                live; service; "request path";
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
            /// tick at or after its deadline. So did the original's: its tokio timer rounded every
            /// sleep up to its 1 ms tick, which kept clients released together in step (0 = delays
            /// last what they are configured to, on average).
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
            /// none). A request that carries a key (`{"size": N, "key": K}`) reads element K from
            /// the cache (cache-hit). On a miss, a fill reads the store and puts the element in the
            /// cache, least recently used out. The fill takes `persist_latency` and one of the
            /// store's `store_concurrency` slots; reads are simulated, with `persist_dir` too. The
            /// server starts with keys 0 to N-1 in it: the hottest keys of a Zipf load, a cache
            /// warmed by hours of traffic. A live change empties it, as a cache node that failed
            /// and came back does.
            cache_entries: usize = 0;
                $crate::value::Bounds::Count { min: 0, max: 1 << 24 }; live; world; "cache";
            /// With `cache_entries`: whether the service reaches the cache. While it does not,
            /// every read misses and no fill goes in. When it does again, every entry the cache
            /// kept is stale: it missed the invalidations sent meanwhile. A read of a stale entry
            /// is a miss unless `stale_reads = serve`.
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
            /// With `cache_entries`: what a read does with a stale entry (`cache_reachable`).
            /// `miss` fills it as any miss. `serve` answers with it at once, and one refresh per
            /// key runs to its end in the background, unless `fill_limit` fills are in flight.
            stale_reads: $crate::settings::StaleReads = $crate::settings::StaleReads::Miss;
                $crate::value::Bounds::Any; live; service; "cache";
            /// Write every element to DIR/<id>.bin instead of simulating the store (real I/O; files
            /// are kept).
            persist_dir: Option<std::path::PathBuf> = None;
                $crate::value::Bounds::Any; restart; world; "durability";
            /// With `persist_dir`: fsync each file before the persist counts as done.
            persist_fsync: bool = false;
                $crate::value::Bounds::Any; restart; world; "durability";
            /// Journal every persist. Its file is opened as the write starts, and the intent is
            /// appended. When the write ends, the outcome is appended and the file closed. The
            /// journal is `journal.log` in `persist_dir`, or `system-simulator-PID.journal` in the
            /// temp dir.
            journal: bool = false;
                $crate::value::Bounds::Any; live; service; "durability";
            /// With `journal`: what becomes of a failed persist's entry: `keep` (its file stays
            /// open in a list to retry later) or `close` (the failure appended, the file closed).
            journal_on_error: $crate::settings::JournalOnError =
                $crate::settings::JournalOnError::Keep;
                $crate::value::Bounds::Any; live; service; "durability";
            /// With `persist_dir`: reply only once the element is fsync'd, so a crash loses no
            /// acknowledged element.
            durable: bool = false;
                $crate::value::Bounds::Any; restart; service; "durability";
        }
    };
}
