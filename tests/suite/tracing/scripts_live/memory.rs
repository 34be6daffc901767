//! memory.bt and memory.d on exercise 15's server, which keeps a copy of every
//! stored element it answers a retry for, under 3 s of its ticket's load: the
//! stacks their summaries print through `AnsweredOnce::remember` hold (bpftrace,
//! what is still allocated) or allocated (DTrace, what was asked for) the bytes
//! the server says it remembered meanwhile (`/stats.remembered_bytes`).

use super::*;

/// The bytes of the summary's stacks that have a frame naming `frame`:
/// bpftrace's `@held[` frames `]: N`, DTrace's frames then a line of `N`.
fn bytes_through(tool: Tool, output: &str, frame: &str) -> u64 {
    let section = output.split_once("by user stack").map_or("", |(_, s)| s);
    let (mut total, mut through) = (0, false);
    for line in section.lines().skip(1).map(str::trim) {
        let count = match tool {
            Tool::Bpftrace => line.strip_prefix("]: ").and_then(|n| n.parse::<u64>().ok()),
            Tool::DTrace => line.parse::<u64>().ok(),
        };
        match count {
            Some(n) => {
                total += if through { n } else { 0 };
                through = false;
            }
            None => through |= line.contains(frame),
        }
    }
    total
}

async fn the_stacks_hold_what_the_server_remembered(tool: Tool) {
    if !tool.available() {
        return;
    }
    let server = Server::start(&["--scenario", "remembered-replies", "--admin-listen", "off"]);
    let pid = server.pid;
    let http = client();
    let traced =
        tokio::task::spawn_blocking(move || Traced::start_until_begin(tool, "memory", pid, &[]))
            .await
            .unwrap();
    let remembered = |s: serde_json::Value| s["remembered_bytes"].as_u64().unwrap();
    let before = remembered(stats(&http, &server.url).await);
    let load = simulator_service::scenario::Scenario::load("remembered-replies")
        .unwrap()
        .load
        .with_duration(Duration::from_secs(3));
    let words: Vec<&str> = load.words().iter().map(String::as_str).collect();
    let server = run_load_aside(server, &words).await;
    let kept = remembered(settled_stats(&http, &server.url).await) - before;
    let output = tokio::task::spawn_blocking(move || traced.interrupt())
        .await
        .unwrap();
    drop(server);
    // Named as each tool prints a Rust frame: bpftrace demangled, DTrace not.
    let frame = match tool {
        Tool::Bpftrace => "AnsweredOnce::remember",
        Tool::DTrace => "AnsweredOnce8remember",
    };
    let stacks = bytes_through(tool, &output, frame);
    eprintln!("{tool:?}: the server remembered {kept} bytes, the stacks through {frame} {stacks}");
    assert!(
        kept >= 4 << 20,
        "3 s of 200 elements of 16 KiB a second: {kept}\n{output}"
    );
    assert!(
        stacks.abs_diff(kept) as f64 <= 0.2 * kept as f64,
        "{tool:?}: the stacks through {frame} hold {stacks}, the server remembered {kept}\n{output}"
    );
}

both_tools! {
    memory_names_the_stacks_that_hold_what_the_server_kept: the_stacks_hold_what_the_server_remembered;
}
