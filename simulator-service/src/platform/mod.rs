//! What differs from one operating system to another, kept here so the rest of
//! the crate names no OS (`tests/suite/guards/platform.rs` holds it to that): which OS
//! this is and which of the kernel's figures it gives (`os.rs`); the CPU
//! cgroups of a world's quota and of the workshop's confinement (`cgroup.rs`,
//! Linux's); the data port's listening socket as the kernel holds it
//! (`listener.rs`: its accept queue, limit and drops, which Linux gives for one
//! socket and other systems do not), read through an owned duplicate of the
//! socket ([`SocketHandle`], a descriptor on Unix and a socket handle on
//! Windows); the network namespace's TCP counters (`netstat.rs`, Linux's
//! `/proc`); the threads' run-queue wait (`schedstat.rs`, Linux's `/proc`); the server's own stack sampler (`stack_sampler.rs`: a SIGPROF
//! timer, Unix only); a thread's kernel id and the stop signal (`process.rs`);
//! the standard process metrics' figures (`process_figures.rs`);
//! files only their owner reads (`files.rs`); listings that a closed pipe ends
//! (`stdout.rs`); the descriptor limit, raised at start, and the count open
//! (`descriptors.rs`); a few descriptors kept in reserve for the operator's
//! listener (`descriptor_reserve.rs`); the world's memory limit, set at start
//! (`memory_limit.rs`); the heap by allocation site, where
//! jemalloc's profiler is built in (`heap.rs`, Linux).
//! Where an OS lacks a figure the
//! answer is `None`, which `/stats` shows as null, and `/stats.machine.os_lacks`
//! names it, so `workshop list`, `start` and `check` say up front which
//! exercise cannot run there; where it lacks a tool, the error says so.

pub mod cgroup;
pub mod descriptor_reserve;
pub mod descriptors;
pub mod files;
pub mod heap;
pub mod listener;
pub mod memory_limit;
pub mod netstat;
pub mod os;
pub mod process;
pub mod process_figures;
pub mod schedstat;
pub mod stack_sampler;
pub mod stdout;

/// An owned duplicate of a socket: the same kernel object, read while another
/// part owns the original.
#[cfg(unix)]
pub type SocketHandle = std::os::fd::OwnedFd;
#[cfg(windows)]
pub type SocketHandle = std::os::windows::io::OwnedSocket;

/// A duplicate of `listener`'s socket.
pub fn duplicate(listener: &tokio::net::TcpListener) -> std::io::Result<SocketHandle> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        listener.as_fd().try_clone_to_owned()
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsSocket;
        listener.as_socket().try_clone_to_owned()
    }
}
