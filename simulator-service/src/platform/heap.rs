//! The server's heap by allocation site, where the build has a heap profiler:
//! on Linux with the `heap-profile` feature, jemalloc is the global allocator
//! with its sampling profiler on from the first allocation, and [`live`] dumps
//! what it sampled (`jemalloc_pprof`, the Polar Signals and Materialize crate
//! made for it), reads the dump (`pprof_util`) and names each frame in this
//! process (`backtrace`, which reads the binary's symbols and its DWARF lines,
//! inlined frames too). Elsewhere [`live`] says why there is none.
//!
//! jemalloc samples one allocation about every [`SAMPLE_EVERY_BYTES`] bytes
//! allocated (`lg_prof_sample:19`), each with its stack, and keeps the samples
//! of what is still allocated; the dump scales each stack's bytes up by the
//! sampling's odds, as jeprof does. So a profile is the live heap as it is
//! now, at any moment, without being started first: what it costs the serving
//! path is in docs/performance.md (tools/bench/heap_profile.py). The
//! profiler's settings are read once, at jemalloc's start, from the
//! `_rjem_malloc_conf` symbol below (the one `unsafe` here: a C library reads
//! a symbol by that name).

/// One allocation site's live bytes: its frames by name, outermost first.
#[derive(Debug, Clone, PartialEq)]
pub struct HeapStack {
    pub frames: Vec<String>,
    pub bytes: f64,
}

/// About how many bytes allocated per sample.
pub const SAMPLE_EVERY_BYTES: u64 = 1 << 19;

#[cfg(all(target_os = "linux", feature = "heap-profile"))]
mod jemalloc {
    use std::collections::HashMap;
    use std::io::BufReader;

    use super::HeapStack;

    #[global_allocator]
    static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

    /// jemalloc's options, read at its start: the profiler compiled in and
    /// active, a sample about every 2^19 bytes (jemalloc's default).
    #[allow(unsafe_code, non_upper_case_globals)]
    #[export_name = "_rjem_malloc_conf"]
    pub static malloc_conf: &[u8] = b"prof:true,prof_active:true,lg_prof_sample:19\0";

    pub async fn live() -> Result<Vec<HeapStack>, String> {
        let ctl = jemalloc_pprof::PROF_CTL
            .as_ref()
            .ok_or("jemalloc's profiler is not on in this process")?;
        let dump = ctl.lock().await.dump().map_err(|e| e.to_string())?;
        // Reading the dump and naming its frames reads files: off the runtime.
        tokio::task::spawn_blocking(move || {
            let profile = pprof_util::parse_jeheap(BufReader::new(dump), None)
                .map_err(|e| format!("jemalloc's dump could not be read: {e}"))?;
            let mut names: HashMap<usize, Vec<String>> = HashMap::new();
            let stacks = profile
                .iter()
                .map(|(stack, _)| HeapStack {
                    frames: stack
                        .addrs
                        .iter()
                        .flat_map(|&addr| names.entry(addr).or_insert_with(|| name(addr)).clone())
                        .collect(),
                    bytes: stack.weight,
                })
                .collect();
            Ok(stacks)
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// The symbols at return address `addr`, outermost first (an inlined
    /// function inside the one it was inlined into); the address where none.
    fn name(addr: usize) -> Vec<String> {
        let mut names = Vec::new();
        // A return address points after its call: the call is one byte before.
        backtrace::resolve(addr.saturating_sub(1) as *mut std::ffi::c_void, |symbol| {
            if let Some(name) = symbol.name() {
                names.push(format!("{name:#}"));
            }
        });
        if names.is_empty() {
            names.push(format!("{addr:#x}"));
        }
        names.reverse();
        names
    }
}

/// The live heap by allocation site, as jemalloc sampled it.
pub async fn live() -> Result<Vec<HeapStack>, String> {
    #[cfg(all(target_os = "linux", feature = "heap-profile"))]
    {
        jemalloc::live().await
    }
    #[cfg(not(all(target_os = "linux", feature = "heap-profile")))]
    {
        Err(WHY_NONE.to_owned())
    }
}

/// Why this build has no heap profile.
#[cfg(not(all(target_os = "linux", feature = "heap-profile")))]
const WHY_NONE: &str = "heap profiles need jemalloc's profiler, which this project builds on Linux only (the heap-profile feature); on a Mac, run the server in its Linux VM";
