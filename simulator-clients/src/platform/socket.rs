//! Socket options the load driver sets where the OS has them.

use tokio::net::TcpSocket;

/// Binding to an address with port 0 makes the kernel choose the port there and
/// then, unique on that address whatever the destination: with many connections
/// and an earlier run's sockets in TIME_WAIT, that search cost seconds of system
/// CPU (19,000 connects from 4 addresses: 0.9 s of system time, 5.8 s with
/// 38,000 sockets in TIME_WAIT) and runs out at one port range per address.
/// `IP_BIND_ADDRESS_NO_PORT` leaves the choice to connect, which picks by the
/// whole address pair and may reuse TIME_WAIT ports on loopback, as a connect
/// without bind does. Neither rustix nor socket2 wraps the option, hence libc.
/// Best effort: where it is refused, bind chooses as before; where the OS has no
/// such option, it does nothing.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub fn choose_port_at_connect(socket: &TcpSocket) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor we own, and a pointer to an int that lives
    // across the call with its exact size; the kernel only reads it.
    let _ = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            std::ptr::from_ref(&on).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

#[cfg(not(target_os = "linux"))]
pub fn choose_port_at_connect(_socket: &TcpSocket) {}
