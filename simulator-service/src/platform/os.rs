//! Which OS this is, and what of the kernel's figures it gives: the answers the
//! rest of the crate asks instead of naming an OS itself. `/stats.machine`
//! carries them ([`simulator_api::OsFeature`]), so `workshop check` judges by the
//! server's OS and `workshop list`/`start` by their own.

use simulator_api::OsFeature;

/// The OS as Rust names it (`linux`, `macos`, `windows`, `illumos`...).
pub const NAME: &str = std::env::consts::OS;

/// The OSes whose differences the crate's words need to tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    MacOs,
    Other,
}

/// This one.
pub const THIS: Os = if cfg!(target_os = "linux") {
    Os::Linux
} else if cfg!(target_os = "macos") {
    Os::MacOs
} else {
    Os::Other
};

/// CPU cgroups (`/sys/fs/cgroup`): a world's CPU quota and the workshop's
/// confinement of a measured server.
pub const HAS_CGROUPS: bool = cfg!(target_os = "linux");

/// What this OS's kernel does not give the server (empty on Linux).
pub fn lacks() -> Vec<OsFeature> {
    if cfg!(target_os = "linux") {
        Vec::new()
    } else {
        vec![
            OsFeature::Cgroups,
            OsFeature::ListenerDrops,
            OsFeature::TcpCounters,
            OsFeature::RunQueueWait,
        ]
    }
}
