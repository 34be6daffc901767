//! The defaults and limits the list of settings names (`defs.rs`), as
//! constants the server and the docs read too.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::delay::Delay;

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

/// The longest `remember_replies_for`: a day, as Stripe keeps an idempotency key.
pub const MAX_REMEMBER_REPLIES: Duration = Duration::from_secs(24 * 3600);
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
