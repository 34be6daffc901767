//! The standard process metrics' figures (memory, descriptors, start time,
//! threads) as each OS gives them, for `/metrics` (`observe/process.rs`).
//!
//! The `metrics-process` crate reads them on Linux (`/proc`), Windows and the
//! BSDs. On macOS it reads them through libproc's bindings, which that crate
//! generates with bindgen from Apple's SDK headers at build time, so a Mac
//! build made on Linux could not compile at all. So on macOS they come from
//! the `libc` crate's own bindings of the same calls: `proc_pidinfo` (task
//! info: memory and threads; BSD info: the start time), `getrlimit` and the
//! entries of `/dev/fd`. Type-checked here for both Mac targets
//! (`tools/check-platforms`); never run on a Mac by this project.

/// One reading; `None` where the OS does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    pub resident_memory_bytes: Option<u64>,
    pub virtual_memory_bytes: Option<u64>,
    pub virtual_memory_max_bytes: Option<u64>,
    pub open_fds: Option<u64>,
    pub max_fds: Option<u64>,
    pub start_time_seconds: Option<u64>,
    pub threads: Option<u64>,
}

#[cfg(not(target_os = "macos"))]
pub fn read() -> Figures {
    let m = metrics_process::collector::collect();
    Figures {
        resident_memory_bytes: m.resident_memory_bytes,
        virtual_memory_bytes: m.virtual_memory_bytes,
        virtual_memory_max_bytes: m.virtual_memory_max_bytes,
        open_fds: m.open_fds,
        max_fds: m.max_fds,
        start_time_seconds: m.start_time_seconds,
        threads: m.threads,
    }
}

#[cfg(target_os = "macos")]
pub fn read() -> Figures {
    let task = mac::task_info();
    Figures {
        resident_memory_bytes: task.map(|t| t.pti_resident_size),
        virtual_memory_bytes: task.map(|t| t.pti_virtual_size),
        // macOS sets no limit on a process's address space by default.
        virtual_memory_max_bytes: None,
        open_fds: std::fs::read_dir("/dev/fd")
            .ok()
            .map(|entries| entries.count().saturating_sub(1) as u64),
        max_fds: rlimit::Resource::NOFILE.get().ok().map(|(soft, _)| soft),
        start_time_seconds: mac::bsd_info().map(|b| b.pbi_start_tvsec),
        threads: task.and_then(|t| u64::try_from(t.pti_threadnum).ok()),
    }
}

#[cfg(target_os = "macos")]
#[allow(unsafe_code)]
mod mac {
    use std::mem::{size_of, MaybeUninit};

    /// `proc_pidinfo(getpid(), FLAVOR, 0, &out, size_of(out))`: the call fills
    /// the whole struct or returns less than its size, which is refused.
    fn pidinfo<T: Copy>(flavor: libc::c_int) -> Option<T> {
        let mut out = MaybeUninit::<T>::zeroed();
        let size = libc::c_int::try_from(size_of::<T>()).ok()?;
        // SAFETY: the buffer is `size` bytes of writable memory we own, and the
        // kernel writes at most that many; both structs are plain integers, for
        // which all-zero bytes are a valid value.
        let written =
            unsafe { libc::proc_pidinfo(libc::getpid(), flavor, 0, out.as_mut_ptr().cast(), size) };
        // SAFETY: a full-size write initialised every byte (zeroed before).
        (written == size).then(|| unsafe { out.assume_init() })
    }

    pub fn task_info() -> Option<libc::proc_taskinfo> {
        pidinfo(libc::PROC_PIDTASKINFO)
    }

    pub fn bsd_info() -> Option<libc::proc_bsdinfo> {
        pidinfo(libc::PROC_PIDTBSDINFO)
    }
}
