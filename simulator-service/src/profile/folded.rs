//! Folded stacks: one line a distinct stack, `thread;outermost;...;innermost
//! COUNT`, as Brendan Gregg's `stackcollapse` tools write them and inferno
//! draws them; and the reading of them a lesson needs (which share of the
//! request path's samples a function holds).

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Samples by stack, each stack its frames joined by `;`, outermost first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folded {
    pub stacks: BTreeMap<String, u64>,
}

/// Why folded text could not be read.
#[derive(Debug, thiserror::Error)]
#[error("line {line} of the folded stacks is not `frame;frame;... COUNT`: {text:?}")]
pub struct FoldedError {
    pub line: usize,
    pub text: String,
}

impl Folded {
    /// The sampler's stacks, folded: the thread's name, then its frames from
    /// the outermost in, each symbol by name without its hash.
    pub fn from_samples(stacks: &[crate::platform::stack_sampler::SampledStack]) -> Self {
        let mut folded = Folded::default();
        for sampled in stacks {
            let mut stack = sampled.thread.clone();
            for symbol in &sampled.symbols {
                stack.push(';');
                stack.push_str(&frame_name(symbol));
            }
            folded.add(stack, sampled.count);
        }
        folded
    }

    /// Adds `count` samples of `stack`.
    pub fn add(&mut self, stack: String, count: u64) {
        if count > 0 {
            *self.stacks.entry(stack).or_default() += count;
        }
    }

    /// Reads folded text (blank lines skipped).
    pub fn parse(text: &str) -> Result<Self, FoldedError> {
        let mut folded = Folded::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let bad = || FoldedError {
                line: i + 1,
                text: line.chars().take(200).collect(),
            };
            let (stack, count) = line.rsplit_once(' ').ok_or_else(bad)?;
            let count = count.parse().map_err(|_| bad())?;
            folded.add(stack.to_owned(), count);
        }
        Ok(folded)
    }

    /// The folded text, a stack a line.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (stack, count) in &self.stacks {
            let _ = writeln!(out, "{stack} {count}");
        }
        out
    }

    /// Samples in all.
    pub fn total(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// Samples whose stack has a frame whose name contains `part`.
    pub fn samples_in(&self, part: &str) -> u64 {
        self.stacks
            .iter()
            .filter(|(stack, _)| stack.split(';').any(|frame| frame.contains(part)))
            .map(|(_, count)| count)
            .sum()
    }

    /// Of the samples with a frame containing `within`, the share that also have
    /// one containing `function` (0 when none are `within`).
    pub fn share_within(&self, function: &str, within: &str) -> f64 {
        let (mut inside, mut both) = (0u64, 0u64);
        for (stack, count) in &self.stacks {
            let frames = || stack.split(';');
            if frames().any(|f| f.contains(within)) {
                inside += count;
                if frames().any(|f| f.contains(function)) {
                    both += count;
                }
            }
        }
        match inside {
            0 => 0.0,
            _ => both as f64 / inside as f64,
        }
    }

    /// The stacks of threads that are waiting for work, not for anything a
    /// request needs (see [`IDLE`]), taken out: what is left, and the total
    /// taken out.
    pub fn without_idle(&self) -> (Folded, u64) {
        let mut busy = Folded::default();
        let mut idle = 0;
        for (stack, count) in &self.stacks {
            match IDLE.iter().any(|marker| stack.contains(marker)) {
                true => idle += count,
                false => busy.add(stack.clone(), *count),
            }
        }
        (busy, idle)
    }

    /// The flame graph, as an SVG: inferno's, titled `title`. An empty profile
    /// (an idle server) draws inferno's "no stack counts" picture.
    pub fn svg(&self, title: &str) -> Vec<u8> {
        self.svg_counting(title, "samples")
    }

    /// The flame graph, its counts called `count_name` (`samples`, `us`).
    pub fn svg_counting(&self, title: &str, count_name: &str) -> Vec<u8> {
        let mut options = inferno::flamegraph::Options::default();
        title.clone_into(&mut options.title);
        options.count_name = count_name.into();
        let text = self.text();
        let mut svg = Vec::new();
        // Writing to memory, from lines this type wrote: inferno fails only on
        // an I/O error or no lines at all, and then the picture says so.
        if inferno::flamegraph::from_lines(&mut options, text.lines(), &mut svg).is_err() {
            svg.clear();
            svg.extend_from_slice(EMPTY_SVG.as_bytes());
        }
        svg
    }
}

/// Where a thread waits for work rather than for something a request needs:
/// a runtime worker parked with nothing to run (on its condvar or in the I/O
/// driver's epoll), a blocking-pool thread between tasks, the compactor between
/// compactions. An off-CPU profile of any server is mostly these; Brendan
/// Gregg's off-CPU flame graphs filter them the same way. Each is a frame, or
/// two adjacent frames, of a folded stack.
pub const IDLE: &[&str] = &[
    "tokio::runtime::scheduler::multi_thread::worker::Context::park_internal",
    "tokio::runtime::blocking::pool::Inner::run;std::sync::poison::condvar::Condvar::wait",
    "simulator_service::request_path::index::compactor::wait_for_next",
];

/// What an empty profile draws.
const EMPTY_SVG: &str = r#"<svg xmlns="http://www.w3.org/2000/svg" width="600" height="60"><text x="10" y="35" font-family="sans-serif" font-size="16">No samples: the server spent no CPU in user code while it was profiled.</text></svg>"#;

/// A frame's name as a reader wants it: a Rust symbol's hash (`::h0123...`)
/// dropped, and no `;` (the separator) left in it.
pub fn frame_name(name: &str) -> String {
    let name = match name.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            head
        }
        _ => name,
    };
    name.replace(';', ":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_text_reads_back_and_shares_are_counted_within_a_frame() {
        let text = "worker;a::request_path::run;a::request_path::trim 90\n\
                    worker;a::request_path::run 10\n\
                    worker;tokio::park 100\n";
        let folded = Folded::parse(text).unwrap();
        assert_eq!(folded.total(), 200);
        assert_eq!(folded.samples_in("request_path"), 100);
        assert!((folded.share_within("::trim", "request_path") - 0.9).abs() < 1e-9);
        assert_eq!(folded.share_within("x", "nowhere"), 0.0);
        assert_eq!(Folded::parse(&folded.text()).unwrap(), folded);
        let svg = String::from_utf8(folded.svg("t")).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("a::request_path::trim"),
            "{svg}"
        );
    }

    #[test]
    fn bad_lines_are_named() {
        let err = Folded::parse("a;b 3\nno count here\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(Folded::parse("a;b x").is_err());
        assert!(String::from_utf8(Folded::default().svg("t"))
            .unwrap()
            .contains("No samples"));
    }

    #[test]
    fn hashes_and_separators_leave_frame_names() {
        assert_eq!(frame_name("a::b::h0123456789abcdef"), "a::b");
        assert_eq!(frame_name("a::hello"), "a::hello");
        assert_eq!(frame_name("<T as a;b>::x"), "<T as a:b>::x");
    }
}
