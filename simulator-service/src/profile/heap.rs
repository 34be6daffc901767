//! Heap profiles of the server, without root: where its live bytes were
//! allocated, as folded stacks and drawn as the CPU profile is (`folded.rs`,
//! inferno), each stack weighted by the bytes still allocated from it. What
//! the allocator sampled comes from `platform/heap.rs` (jemalloc's profiler,
//! Linux).

use super::Folded;
use crate::platform::heap;

/// The live heap now, by allocation site, in bytes, without the profiler's
/// own (and how many bytes those are); the reason where this build has no
/// heap profiler.
pub async fn live() -> Result<(Folded, u64), String> {
    let stacks = heap::live().await?;
    Ok(without_the_profiler(&folded(&stacks)))
}

/// The frame every allocation of the profiler itself is under: naming a
/// dump's frames reads the binary's DWARF into `backtrace`'s caches, which
/// stay for the next profile. Measured: a debug build's first profile left
/// 50 MiB of them, ten times the live heap it profiled, and the next profile
/// drew them as the heap's main growth.
const PROFILER: &str = "simulator_service::platform::heap::jemalloc::live";

/// `heap` without the stacks the profiler allocated, and their bytes.
pub fn without_the_profiler(heap: &Folded) -> (Folded, u64) {
    let mut kept = Folded::default();
    let mut own = 0;
    for (stack, bytes) in &heap.stacks {
        match stack.contains(PROFILER) {
            true => own += bytes,
            false => kept.add(stack.clone(), *bytes),
        }
    }
    (kept, own)
}

/// `stacks` folded, `outermost;...;innermost BYTES`, each frame by name
/// without its hash; a stack without a frame (none named) is left out.
pub fn folded(stacks: &[heap::HeapStack]) -> Folded {
    let mut folded = Folded::default();
    for stack in stacks.iter().filter(|s| !s.frames.is_empty()) {
        let frames: Vec<String> = stack
            .frames
            .iter()
            .map(|f| super::folded::frame_name(f))
            .collect();
        folded.add(frames.join(";"), stack.bytes.round() as u64);
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_fold_by_their_frames_and_add_up() {
        let stack = |frames: &[&str], bytes| heap::HeapStack {
            frames: frames.iter().map(|f| f.to_string()).collect(),
            bytes,
        };
        let folded = folded(&[
            stack(&["main", "remember", "malloc"], 1000.4),
            stack(&["main", "remember", "malloc"], 24.0),
            stack(&["main", "read"], 10.0),
            stack(&[], 99.0),
        ]);
        assert_eq!(folded.total(), 1034);
        assert_eq!(folded.samples_in("remember"), 1024);
    }

    #[test]
    fn the_profilers_own_caches_are_left_out_and_counted() {
        let heap = Folded::parse(&format!(
            "main;remember 1000\nmain;{PROFILER}::{{{{closure}}}};gimli::read 5000\n"
        ))
        .unwrap();
        let (kept, own) = without_the_profiler(&heap);
        assert_eq!((kept.total(), own), (1000, 5000));
        assert_eq!(kept.samples_in("gimli"), 0);
    }
}
