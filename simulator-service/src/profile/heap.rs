//! Heap profiles of the server, without root: where its live bytes were
//! allocated, as folded stacks and drawn as the CPU profile is (`folded.rs`,
//! inferno), each stack weighted by the bytes still allocated from it. What
//! the allocator sampled comes from `platform/heap.rs` (jemalloc's profiler,
//! Linux).

use super::Folded;
use crate::platform::heap;

/// The live heap now, by allocation site, in bytes; the reason where this
/// build has no heap profiler.
pub async fn live() -> Result<Folded, String> {
    let stacks = heap::live().await?;
    Ok(folded(&stacks))
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
}
