//! What the kernel holds for the data port's listening socket: its accept
//! queue now and its limit, and the SYNs and completed connections it dropped.
//!
//! Linux answers for one socket, so the figures are the server's own, whatever
//! else the machine (or a test beside it) does: `TCP_INFO` on a listener gives
//! the accept queue's length (`tcpi_unacked`, what `ss -lnt` shows as Recv-Q)
//! and its limit (`tcpi_sacked`, Send-Q: `listen_backlog` capped by
//! `net.core.somaxconn`); `SO_MEMINFO`'s drops count the packets the listener
//! dropped: SYNs at a full accept queue and the handshakes' last ACKs (and the
//! requests behind them) it could not take, which `nstat` counts machine-wide as
//! `TcpExtListenOverflows` (an ACK dropped so counts twice on the socket, once in
//! `tcp_listendrop` and once as it is freed). Neither rustix nor socket2 wraps either option, hence
//! this module's two getsockopt calls through libc; elsewhere than Linux the
//! figures are `None`, and `/stats` says null.
//!
//! And, on every Unix, whether a connection waits to be accepted at all
//! ([`pending`], `poll(2)` through rustix): out of descriptors, Linux's
//! accept(2) fails with EMFILE before it looks at the queue, so the accept
//! loop asks this first rather than count a failure for an empty queue.

use super::SocketHandle;

/// The listener's figures at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ListenerFigures {
    /// Connections completed and waiting to be accepted.
    pub queued: u32,
    /// The accept queue's limit, as the kernel applies it.
    pub backlog: u32,
    /// SYNs and completed connections the listener dropped since it opened.
    pub drops: u64,
}

/// The listener's figures, or `None` where the kernel does not give them.
pub fn figures(listener: &SocketHandle) -> Option<ListenerFigures> {
    #[cfg(target_os = "linux")]
    {
        linux::figures(listener)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = listener;
        None
    }
}

/// The accept queue's length now (one `getsockopt`), or `None` where the kernel
/// does not give it.
pub fn queued(listener: &SocketHandle) -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        linux::tcp_info(listener).map(|info| info.tcpi_unacked)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = listener;
        None
    }
}

/// Whether a connection waits in `listener`'s accept queue now (`poll` with
/// no wait); `None` where it cannot be asked (Windows).
pub fn pending(listener: &tokio::net::TcpListener) -> Option<bool> {
    #[cfg(unix)]
    {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        use std::os::fd::AsFd;
        let now = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let fd = listener.as_fd();
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        poll(&mut fds, Some(&now)).ok().map(|ready| ready > 0)
    }
    #[cfg(not(unix))]
    {
        let _ = listener;
        None
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod linux {
    use std::os::fd::{AsFd, AsRawFd};

    use super::ListenerFigures;

    /// `SO_MEMINFO` (asm-generic/socket.h: the same on x86-64 and arm64), which
    /// the libc crate does not name; it fills `SK_MEMINFO_VARS` u32s.
    const SO_MEMINFO: libc::c_int = 55;
    const SK_MEMINFO_VARS: usize = libc::SK_MEMINFO_DROPS as usize + 1;

    pub fn tcp_info(listener: impl AsFd) -> Option<libc::tcp_info> {
        let fd = listener.as_fd().as_raw_fd();
        // SAFETY: tcp_info is plain integers, for which all zeroes is valid.
        let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        // SAFETY: a socket we own, a buffer of `len` bytes that outlives the call;
        // the kernel writes at most `len` bytes and says how many.
        let got = unsafe {
            libc::getsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                std::ptr::from_mut(&mut info).cast(),
                &mut len,
            )
        };
        (got == 0).then_some(info)
    }

    pub fn figures(listener: impl AsFd) -> Option<ListenerFigures> {
        let info = tcp_info(listener.as_fd())?;
        let fd = listener.as_fd().as_raw_fd();
        let mut meminfo = [0u32; SK_MEMINFO_VARS];
        let mut len = std::mem::size_of_val(&meminfo) as libc::socklen_t;
        // SAFETY: a socket we own, a buffer of `len` bytes that outlives the call.
        let got = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                SO_MEMINFO,
                meminfo.as_mut_ptr().cast(),
                &mut len,
            )
        };
        let drops = (got == 0).then(|| u64::from(meminfo[libc::SK_MEMINFO_DROPS as usize]));
        Some(ListenerFigures {
            queued: info.tcpi_unacked,
            backlog: info.tcpi_sacked,
            drops: drops.unwrap_or(0),
        })
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A backlog of 1 queues two connections (Linux allows one over); the third
    /// SYN is dropped, and the drop is counted on this socket.
    #[tokio::test]
    async fn the_queue_its_limit_and_its_drops_are_this_listeners() {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(1).unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = crate::platform::duplicate(&listener).unwrap();
        assert_eq!(
            figures(&handle),
            Some(ListenerFigures {
                queued: 0,
                backlog: 1,
                drops: 0
            })
        );
        let mut held = Vec::new();
        for _ in 0..2 {
            held.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        let third = tokio::time::timeout(
            std::time::Duration::from_millis(300),
            tokio::net::TcpStream::connect(addr),
        )
        .await;
        assert!(third.is_err(), "the third connect waits for a retransmit");
        let now = figures(&handle).unwrap();
        assert_eq!((now.queued, now.backlog), (2, 1));
        assert!(now.drops >= 1, "{now:?}");
    }
}
