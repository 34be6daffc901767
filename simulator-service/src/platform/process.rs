//! The process's dealings with its kernel that differ by OS: a thread's id as
//! the kernel knows it (the profiler's per-thread CPU times) and the signal a
//! service manager stops it with, a thread's name as `ps` shows it, and
//! whether another process still runs.

/// The kernel's id of this thread (Linux's `gettid`; 0 elsewhere, where there
/// is no `/proc/self/task` to read either).
#[allow(unsafe_code)]
pub fn thread_id() -> u32 {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::gettid() } as u32;
    #[cfg(not(target_os = "linux"))]
    let tid = 0;
    tid
}

/// Completes on the first SIGTERM (Unix: `kill`, systemd, Kubernetes); never
/// elsewhere, where Ctrl-C is the only way (tokio's `ctrl_c` covers both).
pub async fn terminate_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(err) => {
                tracing::error!(%err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    }
    #[cfg(not(unix))]
    std::future::pending::<()>().await;
}

/// Names the calling thread as `ps`, `top` and `pgrep` show it (Linux's
/// `comm`, cut to 15 bytes): for the main thread, whose name the standard
/// library cannot set, this is the process's name too. Elsewhere a no-op.
#[allow(unsafe_code)]
pub fn name_this_thread(name: &str) {
    #[cfg(target_os = "linux")]
    {
        let mut bytes = [0u8; 16];
        let len = name.len().min(15);
        bytes[..len].copy_from_slice(&name.as_bytes()[..len]);
        // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16
        // bytes from the pointer; `bytes` is 16 bytes, the last always NUL.
        unsafe { libc::prctl(libc::PR_SET_NAME, bytes.as_ptr()) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = name;
}

/// Whether process `pid` still runs (Unix: `kill(pid, 0)`, which sends
/// nothing; a process of another user answers EPERM, and runs). Elsewhere
/// always yes: what asks must then leave its files alone.
#[allow(unsafe_code)]
pub fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: kill with signal 0 only checks that the process exists.
        let sent = unsafe { libc::kill(pid, 0) };
        sent == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_is_alive_and_a_finished_child_is_not() {
        assert!(super::alive(std::process::id()));
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--list")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        child.wait().unwrap();
        // Reaped: the pid is free (reuse within the test is vanishingly rare).
        #[cfg(unix)]
        assert!(!super::alive(pid));
        let _ = pid;
    }
}
