//! The kernel's profiles of the server, folded: what `scripts/profile.bt` and
//! `scripts/profile.d` print (each distinct user stack, innermost frame first,
//! and how many samples caught it), read into [`Folded`] so they draw as the
//! server's own profile does and a test reads them the same way.
//!
//! Written here rather than with inferno's collapsers: inferno folds DTrace's
//! layout but not bpftrace's, and both need the same clean-up of a frame (the
//! offset dropped, a mangled Rust name demangled, its hash dropped), which
//! this does once for both.

use super::folded::{frame_name, Folded};
use super::symbols::Symbolizer;

/// The root frame every folded stack gets: the tracers print no thread names.
const ROOT: &str = "system-simulator";

/// Why a tracer's output could not be folded.
#[derive(Debug, thiserror::Error)]
pub enum StacksError {
    #[error("line {line}: a stack's count is not a whole number: {text:?}")]
    BadCount { line: usize, text: String },
    #[error("no stacks in this output: is it what scripts/profile.bt or scripts/profile.d printed (a stack a block, its count after it)?")]
    Empty,
}

/// Folds bpftrace's `@[\n frames\n]: COUNT` blocks or DTrace's blocks of
/// frames followed by a count, whichever `text` holds; other lines (the
/// scripts' own banner, bpftrace's "Attaching") are skipped. A frame printed
/// as a bare address is named by `names` (the traced process's symbols), when
/// given and when they know it.
pub fn fold(text: &str, mut names: Option<&mut Symbolizer>) -> Result<Folded, StacksError> {
    let mut folded = Folded::default();
    let mut frames: Vec<String> = Vec::new();
    let mut in_block = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line == "@[" {
            frames.clear();
            in_block = true;
        } else if let Some(count) = line.strip_prefix("]:") {
            add(&mut folded, &frames, count.trim(), i)?;
            frames.clear();
            in_block = false;
        } else if in_block {
            frames.push(clean(line, names.as_deref_mut()));
        } else if line.is_empty() {
            frames.clear();
        } else if raw.starts_with(char::is_whitespace) {
            // DTrace: a frame, or the count that ends the block.
            match line.bytes().all(|b| b.is_ascii_digit()) && !frames.is_empty() {
                true => {
                    add(&mut folded, &frames, line, i)?;
                    frames.clear();
                }
                false => frames.push(clean(line, names.as_deref_mut())),
            }
        }
    }
    match folded.total() {
        0 => Err(StacksError::Empty),
        _ => Ok(folded),
    }
}

/// Adds one block: `frames` innermost first, folded outermost first.
fn add(
    folded: &mut Folded,
    frames: &[String],
    count: &str,
    line: usize,
) -> Result<(), StacksError> {
    let count: u64 = count.parse().map_err(|_| StacksError::BadCount {
        line: line + 1,
        text: count.to_owned(),
    })?;
    let mut stack = ROOT.to_owned();
    for frame in frames.iter().rev() {
        stack.push(';');
        stack.push_str(frame);
    }
    folded.add(stack, count);
    Ok(())
}

/// One frame as the tracers print it (`module\`symbol+0x3e`, `symbol+62`,
/// `0x5614db8455a0`), as a reader wants it: the symbol alone, demangled,
/// without its offset or hash.
fn clean(frame: &str, names: Option<&mut Symbolizer>) -> String {
    let named = frame
        .strip_prefix("0x")
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .zip(names)
        .and_then(|(address, names)| names.name(address));
    let frame = named.as_deref().unwrap_or(frame);
    let symbol = frame.rsplit_once('`').map_or(frame, |(_, s)| s);
    let symbol = match symbol.rsplit_once('+') {
        Some((name, offset)) if is_offset(offset) => name,
        _ => symbol,
    };
    let demangled = rustc_demangle::try_demangle(symbol)
        .map_or_else(|_| unescape(symbol), |d| format!("{d:#}"));
    frame_name(&demangled)
}

/// A Rust legacy symbol that a C++ demangler took apart (bpftrace's): the `::`
/// are there, but rustc's escapes for the characters a C++ name may not hold
/// (`$LT$`, `$u7b$`, `..`) are not undone.
fn unescape(name: &str) -> String {
    const ESCAPES: [(&str, &str); 15] = [
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$C$", ","),
        ("$RF$", "&"),
        ("$BP$", "*"),
        ("$SP$", "@"),
        ("$LP$", "("),
        ("$RP$", ")"),
        ("$u20$", " "),
        ("$u27$", "'"),
        ("$u5b$", "["),
        ("$u5d$", "]"),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$u7e$", "~"),
    ];
    if !name.contains('$') {
        return name.to_owned();
    }
    let mut text = name
        .strip_prefix('_')
        .filter(|r| r.starts_with("$LT$"))
        .unwrap_or(name)
        .to_owned();
    for (escape, character) in ESCAPES {
        text = text.replace(escape, character);
    }
    text.replace("..", "::")
}

/// `0x3e` or `62`.
fn is_offset(text: &str) -> bool {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOT: &str = "simulator_service::request_path::normalise::trim::trim_end_scanning_forward";

    #[test]
    fn bpftrace_blocks_fold_outermost_first() {
        let text = "Attaching 4 probes...\nprofile.bt: sampling pid 1 at 99 Hz for 5 s\n\n\n\
            @[\n    simulator_service::request_path::normalise::trim::trim_end_scanning_forward::hef744039bf64868b+37\n    simulator_service::request_path::normalise::digest_of::h0123456789abcdef+30\n]: 4\n\
            @[\n    simulator_service::request_path::normalise::trim::trim_end_scanning_forward::hef744039bf64868b+55\n    simulator_service::request_path::normalise::digest_of::h0123456789abcdef+30\n]: 2\n\
            @[\n    epoll_wait+86\n    0x5614db8455a0\n]: 1\n";
        let folded = fold(text, None).unwrap();
        assert_eq!(folded.total(), 7);
        let widest = folded.stacks.iter().max_by_key(|(_, c)| **c).unwrap();
        assert_eq!(
            widest.0,
            &format!(
                "system-simulator;simulator_service::request_path::normalise::digest_of;{HOT}"
            )
        );
        assert_eq!(*widest.1, 6);
        assert!((folded.share_within(HOT, "request_path") - 1.0).abs() < 1e-9);
    }

    #[test]
    fn dtrace_blocks_fold_with_names_demangled() {
        let text = "profile.d: sampling pid 1 at 99 Hz for 5 s\n\n\n\
            \x20             libc.so.6`epoll_wait+0x56\n              0x5614db8455a0\n                1\n\n\
            \x20             system-simulator`_ZN17simulator_service12request_path9normalise4trim25trim_end_scanning_forward17hef744039bf64868bE+0x3e\n\
            \x20             system-simulator`_ZN17simulator_service12request_path9normalise9digest_of17h0123456789abcdefE+0x1e\n\
            \x20              231\n";
        let folded = fold(text, None).unwrap();
        assert_eq!(folded.total(), 232);
        assert_eq!(folded.samples_in(HOT), 231);
        assert_eq!(folded.samples_in("epoll_wait"), 1);
    }

    fn clean_alone(frame: &str) -> String {
        clean(frame, None)
    }

    #[test]
    fn an_address_is_named_from_the_process_symbols() {
        let address = an_address_is_named_from_the_process_symbols as *const () as u64 + 2;
        let mut names = Symbolizer::of_process(std::process::id()).unwrap();
        let text = format!("@[\n    0x{address:x}\n    0x8\n]: 3\n");
        let folded = fold(&text, Some(&mut names)).unwrap();
        let (stack, _) = folded.stacks.iter().next().unwrap();
        assert!(
            stack.ends_with("stacks::tests::an_address_is_named_from_the_process_symbols"),
            "{stack}"
        );
        assert!(stack.starts_with("system-simulator;0x8;"), "{stack}");
    }

    #[test]
    fn escapes_a_cpp_demangler_left_are_undone() {
        assert_eq!(
            clean_alone("_$LT$tokio..runtime..blocking..task..BlockingTask$LT$T$GT$$u20$as$u20$core..future..future..Future$GT$::poll::h0123456789abcdef+12"),
            "<tokio::runtime::blocking::task::BlockingTask<T> as core::future::future::Future>::poll"
        );
        assert_eq!(
            clean_alone("core::ops::function::FnOnce::call_once$u7b$$u7b$vtable.shim$u7d$$u7d$+3"),
            "core::ops::function::FnOnce::call_once{{vtable.shim}}"
        );
    }

    #[test]
    fn output_without_stacks_is_refused() {
        assert!(matches!(
            fold("Attaching 2 probes...\n", None),
            Err(StacksError::Empty)
        ));
        assert!(matches!(
            fold("@[\n    f+1\n]: many\n", None),
            Err(StacksError::BadCount { line: 3, .. })
        ));
    }
}
