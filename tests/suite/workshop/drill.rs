//! The drill (issue 99): nothing a drill's server shows names its draw.
//!
//! An attendee can read the complaint and the banner, `/stats`, `/scenarios`,
//! `/metrics`, the live view's hello, the process's arguments and environment,
//! and the files it writes. For three draws, no cause's name appears in any of
//! them, and no fix's name or cause word appears in one draw's but not in
//! another's: a word every server says (`remember_replies_for` is a setting of
//! all of them) tells nothing of the draw. The dressed settings of the draws
//! list many keys beside the fault's (`src/workshop/drill/dress.rs`).

use std::collections::BTreeSet;

use simulator_service::scenario;
use system_simulator::workshop::drill::draw::{seed_for, NOTHING};

use super::workshop_pages::stands_in;
use crate::common::*;

/// Everything an attendee of the drill `seed` reads from its server, without
/// root: one text.
async fn what_an_attendee_reads(seed: &str) -> String {
    let cwd = tempfile::tempdir().unwrap();
    let server = Server::start_drill(seed, cwd.path());
    let client = client();
    let mut read = Vec::new();
    for route in ["/stats", "/scenarios", "/metrics", "/healthz"] {
        let r = get(&client, &format!("{}{route}", server.url)).await;
        assert_eq!(r.status, 200, "{route}: {}", r.body);
        read.push(r.body);
    }
    let hello = live_hello(&server.url).await;
    let hello = hello.to_string();
    assert!(hello.contains(r#""name":"drill""#), "{hello}");
    read.push(hello);
    for file in ["cmdline", "environ"] {
        let bytes = std::fs::read(format!("/proc/{}/{file}", server.pid)).unwrap_or_default();
        read.push(String::from_utf8_lossy(&bytes).replace('\0', " "));
    }
    let (_, printed) = server.terminate(std::time::Duration::from_secs(20));
    read.push(printed);
    let written: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().collect();
    assert!(written.is_empty(), "the drill wrote {written:?}");
    read.join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_a_drills_server_shows_names_its_draw() {
    if !cfg!(target_os = "linux") {
        return skip_or_fail("reads the process's arguments and environment from /proc");
    }
    let drawn = ["noisy-neighbour", "remembered-replies", NOTHING];
    let mut surfaces = Vec::new();
    for answer in drawn {
        let seed = seed_for(answer).unwrap();
        let text = what_an_attendee_reads(&seed).await;
        assert!(text.contains("drill"), "{answer}: {text}");
        surfaces.push((answer, text));
    }
    let all = scenario::bundled().unwrap();
    let mut words = BTreeSet::new();
    for s in &all {
        words.extend(s.cause_words.iter().cloned());
        words.extend(s.fixes.iter().map(|f| f.name.clone()));
        words.insert(s.visible_name().to_owned());
    }
    let mut told = Vec::new();
    for s in &all {
        for (answer, text) in &surfaces {
            if stands_in(text, &s.name) {
                told.push(format!("{answer}'s server names the cause {}", s.name));
            }
        }
    }
    for word in &words {
        let saying: Vec<&str> = surfaces
            .iter()
            .filter(|(_, text)| stands_in(text, word))
            .map(|(answer, _)| *answer)
            .collect();
        if !saying.is_empty() && saying.len() < surfaces.len() {
            told.push(format!(
                "`{word}` is said by the servers of {saying:?} only"
            ));
        }
    }
    assert!(told.is_empty(), "{}", told.join("\n"));
}
