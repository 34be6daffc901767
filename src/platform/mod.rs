//! What differs from one operating system to another, kept here so the rest of
//! the crate names no OS. Today: the data port's listening socket as the kernel
//! holds it (`listener.rs`: its accept queue, limit and drops, which Linux gives
//! for one socket and other systems do not), read through an owned duplicate of
//! the socket ([`SocketHandle`], a descriptor on Unix and a socket handle on
//! Windows); and the server's own stack sampler (`stack_sampler.rs`: a SIGPROF
//! timer, Unix only). Where an OS lacks a figure the answer is `None`, which
//! `/stats` shows as null and a check that needs it reads as a failed
//! condition; where it lacks a tool, the error says so.
//!
//! Still elsewhere, each behind its own `cfg` (issue 55 moves them here): the
//! cgroup's CPU quota (`cgroup.rs`), the namespace's TCP counters
//! (`observe/netstat.rs`), and the clients' socket options (simulator-clients).

pub mod listener;
pub mod stack_sampler;

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
