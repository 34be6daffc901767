//! Where a record's trailing whitespace begins, found two ways that always agree.
//!
//! `scan-forward` asks, at each position from the front, whether everything after
//! it is whitespace, as a backtracking regex engine matches `\s+$` (Stack
//! Overflow's 20 July 2016 outage: a post with ~20,000 spaces inside it).
//! A position in a run of whitespace that something else follows costs the rest
//! of that run, so a record with a run of n spaces inside it costs about n²/2
//! comparisons; a record without one costs its length. `scan-back` walks back
//! from the last byte: a record's length at most, whatever is in it.
//!
//! Both are kept out of line (`inline(never)`), so a profile names them as the
//! code does: what exercise 11 teaches is reading that name off a flame graph.

/// `text` without its trailing ASCII whitespace, found from the front.
#[inline(never)]
pub fn trim_end_scanning_forward(text: &[u8]) -> &[u8] {
    for start in 0..text.len() {
        if text[start..].iter().all(u8::is_ascii_whitespace) {
            return &text[..start];
        }
    }
    text
}

/// `text` without its trailing ASCII whitespace, found from the back.
#[inline(never)]
pub fn trim_end_scanning_back(text: &[u8]) -> &[u8] {
    text.trim_ascii_end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ways_agree() {
        let cases: [&[u8]; 8] = [
            b"",
            b"   ",
            b"a",
            b"a  ",
            b"  a",
            b"a \t\n b \r\n",
            b"a     b",
            b"\x0ca\x0c",
        ];
        for text in cases {
            assert_eq!(
                trim_end_scanning_forward(text),
                trim_end_scanning_back(text),
                "{text:?}"
            );
        }
    }
}
