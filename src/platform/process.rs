//! The process's dealings with its kernel that differ by OS: a thread's id as
//! the kernel knows it (the profiler's per-thread CPU times) and the signal a
//! service manager stops it with.

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
