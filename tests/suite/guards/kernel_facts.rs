//! The facts about Linux that the pages state hold on the kernel the tests run
//! on, and name the version they hold from.
//!
//! A SYN the server's full accept queue dropped is sent again by the client's
//! kernel: since Linux 6.5 the first `net.ipv4.tcp_syn_linear_timeouts` (4 by
//! default) retransmits come 1 s apart (connects of 1 s, 2 s, 3 s), before 6.5
//! each wait doubled (1 s, 3 s, 7 s). Exercise 9's page said "1 s and 3 s" while
//! its own figures showed a connect p99 of 2,031 ms: this test reads the sysctl
//! (absent before 6.5) and holds the pages to what this kernel does.

use crate::common;
use common::figures::{block_of, page_text, tables};
use simulator_service::scenario::Scenario;

/// `net.ipv4.tcp_syn_linear_timeouts` on this kernel: 0 where it has none
/// (before Linux 6.5, when every wait doubled).
fn linear_syn_timeouts_here() -> u64 {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_syn_linear_timeouts")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The seconds from the first SYN to a connect whose SYN was dropped once,
/// twice, three times, with `linear` linear timeouts: the first wait is the
/// initial retransmission timeout, 1 s; after each retransmit the kernel keeps
/// the wait while the SYN's retransmits so far are at most `linear`, and
/// doubles it after.
fn connects_after_drops(linear: u64) -> [u64; 3] {
    let mut connect = [0; 3];
    let (mut wait, mut total) = (1, 0);
    for (retransmits, at) in (0u64..).zip(connect.iter_mut()) {
        if retransmits > linear {
            wait *= 2;
        }
        total += wait;
        *at = total;
    }
    connect
}

/// `text` around byte `at`, `reach` bytes each way, cut at characters.
fn around(text: &str, at: usize, reach: usize) -> &str {
    let mut start = at.saturating_sub(reach);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + reach).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    &text[start..end]
}

#[test]
fn the_accept_queue_page_states_this_kernels_syn_retransmits() {
    let linear = linear_syn_timeouts_here() > 0;
    let [once, twice, thrice] = connects_after_drops(linear_syn_timeouts_here());
    let scenario = Scenario::load("accept-queue").unwrap();
    let page = page_text(&scenario);
    // As it reads, whatever the lines' ends.
    let words = page.split_whitespace().collect::<Vec<_>>().join(" ");
    let modes = format!("{once} s, {twice} s and {thrice} s");
    assert!(
        words.contains(&format!("connects of exactly {modes}"))
            || words.contains(&format!("connects of {modes}")),
        "docs/workshop/09-whole-second-delays.md does not say that a dropped SYN connects after {modes} on this kernel (tcp_syn_linear_timeouts {})",
        if linear { "set" } else { "absent: before Linux 6.5" }
    );
    for version in ["Linux 6.5", "tcp_syn_linear_timeouts", "Before 6.5"] {
        assert!(words.contains(version), "the page does not name {version}");
    }
    // The page's own figures came from a kernel of linear retransmits (it says
    // so): on such a kernel its connect p99 before the fix is a SYN dropped
    // once, twice or thrice, a handshake's milliseconds over.
    if !linear {
        eprintln!(
            "a kernel before 6.5: the page's figures (measured on 6.18) are not this kernel's"
        );
        return;
    }
    let figures = tables(block_of(&page));
    let connect = figures[0]
        .rows
        .iter()
        .find(|r| r.label.starts_with("connect p99"))
        .expect("a connect p99 row");
    let p99_s = connect.before.0 / 1e3;
    assert!(
        [once, twice, thrice]
            .iter()
            .any(|&mode| (p99_s - mode as f64).abs() < 0.1),
        "the page's connect p99 before a fix, {p99_s} s, is none of this kernel's retransmits ({modes})"
    );
}

#[test]
fn no_page_states_the_old_syn_retransmits_without_their_version() {
    let old = [
        "1 s and 3 s",
        "1 s, then 3 s",
        "then after 2 s more",
        "1 s or 3 s",
    ];
    let mut found = Vec::new();
    let pages = common::repo_files(
        &["README.md"],
        &["docs", "docs/workshop", "scenarios"],
        &[".md", ".toml"],
    );
    for (name, text) in pages {
        for phrase in old {
            for (at, _) in text.match_indices(phrase) {
                let near = around(&text, at, 300);
                if !near.contains("6.5") {
                    found.push(format!(
                        "{name}: `{phrase}` without the kernel version (6.5)"
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_retransmits_are_linear_then_doubling() {
    assert_eq!(connects_after_drops(0), [1, 3, 7], "before Linux 6.5");
    assert_eq!(
        connects_after_drops(4),
        [1, 2, 3],
        "6.5 and later, the default"
    );
    assert_eq!(connects_after_drops(1), [1, 2, 4]);
}
