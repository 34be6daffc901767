//! The probe tap over HTTP (`GET /admin/tap`, `DELETE /admin/tap/{id}`), from a
//! raw socket as `curl -N` reads it: the lines a subscriber gets, the errors of
//! a bad ask, the admin guard, the end in order; and a subscriber that reads
//! nothing for 30 s under a flat-out load, which costs the server a bounded
//! amount of memory and is told what it lost.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

/// A raw tap subscription: the response's head has been read, so it is in force.
struct Tap {
    reader: BufReader<TcpStream>,
    id: u64,
}

impl Tap {
    fn open(url: &str, query: &str, token: Option<&str>) -> Result<Tap, String> {
        let authority = url.trim_start_matches("http://");
        let mut stream = TcpStream::connect(authority).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        write!(
            stream,
            "GET /admin/tap{query} HTTP/1.1\r\nHost: {authority}\r\n{auth}\r\n"
        )
        .unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let mut header = String::new();
        while reader.read_line(&mut header).unwrap() > 2 {
            header.clear();
        }
        if !status.contains(" 200 ") {
            let mut body = vec![0; 4096];
            let n = reader.read(&mut body).unwrap_or(0);
            return Err(format!(
                "{}{}",
                status.trim(),
                String::from_utf8_lossy(&body[..n])
            ));
        }
        let mut tap = Tap { reader, id: 0 };
        let head = tap.line().expect("the # head");
        let id = head
            .strip_prefix("# isim tap ")
            .and_then(|h| h.split(':').next());
        tap.id = id
            .and_then(|i| i.parse().ok())
            .unwrap_or_else(|| panic!("{head}"));
        Ok(tap)
    }

    /// The next line of the body (chunked: size lines are skipped), none at its end.
    fn line(&mut self) -> Option<String> {
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let line = line.trim_end().to_owned();
            let chunk_size = line.chars().all(|c| c.is_ascii_hexdigit()) && !line.is_empty();
            if line == "0" {
                return None;
            }
            if !chunk_size && !line.is_empty() {
                return Some(line);
            }
        }
    }
}

async fn delete(url: &str) -> Response {
    send(
        &client(),
        hyper::Method::DELETE,
        url,
        &[],
        bytes::Bytes::new(),
    )
    .await
}

#[tokio::test]
async fn a_subscriber_gets_the_events_it_asked_for_in_order_and_ends_in_order() {
    let server = Server::start(&FAST_SERVER);
    let url = server.url.clone();
    let mut tap = tokio::task::spawn_blocking(move || {
        Tap::open(&url, "?events=request-start,request-done", None).unwrap()
    })
    .await
    .unwrap();
    let reply = post_element(&client(), &server.url).await;
    let id = reply["id"].as_u64().unwrap();
    let ended = delete(&format!("{}/admin/tap/{}", server.url, tap.id)).await;
    assert_eq!(ended.status, 200, "{}", ended.body);
    let lines: Vec<String> =
        tokio::task::spawn_blocking(move || std::iter::from_fn(|| tap.line()).collect())
            .await
            .unwrap();
    // The canary and the persist fired too, and were not asked for.
    assert_eq!(lines.len(), 2, "{lines:?}");
    let start: Vec<&str> = lines[0].split(' ').collect();
    assert_eq!(start[1..3], ["request-start", &id.to_string()], "{lines:?}");
    assert_eq!(
        start.len(),
        5,
        "the stamp, the name and 3 arguments: {lines:?}"
    );
    assert_eq!(start[4], "0", "no client key: {lines:?}");
    let done: Vec<&str> = lines[1].split(' ').collect();
    assert_eq!(done[1..3], ["request-done", &id.to_string()], "{lines:?}");
    assert_eq!(
        done.len(),
        6,
        "the stamp, the name and 4 arguments: {lines:?}"
    );
    let (at_start, at_done): (u64, u64) = (start[0].parse().unwrap(), done[0].parse().unwrap());
    let lifetime: u64 = done[3].parse().unwrap();
    assert!(
        at_done > at_start && at_done - at_start >= lifetime / 2,
        "{lines:?}"
    );
    let again = delete(&format!("{}/admin/tap/{}", server.url, 999_999)).await;
    assert_eq!(again.status, 404, "{}", again.body);
}

#[tokio::test]
async fn a_bad_ask_is_refused_and_the_admin_guard_holds() {
    let server = Server::start(&["--admin-token", "s3cret"]);
    let url = server.url.clone();
    let refused = tokio::task::spawn_blocking(move || {
        let no_token = Tap::open(&url, "", None).err().unwrap();
        let unknown = Tap::open(&url, "?events=request-start,nope", Some("s3cret"))
            .err()
            .unwrap();
        let empty = Tap::open(&url, "?events=", Some("s3cret")).err().unwrap();
        let fine = Tap::open(&url, "?events=canary-tick", Some("s3cret")).map(|_| ());
        (no_token, unknown, empty, fine)
    })
    .await
    .unwrap();
    assert!(refused.0.contains(" 401 "), "{}", refused.0);
    assert!(
        refused.1.contains(" 400 ") && refused.1.contains("no event nope"),
        "{}",
        refused.1
    );
    assert!(
        refused.1.contains("canary-tick"),
        "the events are listed: {}",
        refused.1
    );
    assert!(refused.2.contains(" 400 "), "{}", refused.2);
    assert!(refused.3.is_ok(), "{:?}", refused.3);
}

/// The bound a reader that never reads costs: the shared ring (65,536 events of
/// a 64-byte cache line each: 4 MiB, allocated at the first subscription), one batch (32 KiB) and hyper's write buffer for it, with room
/// for the allocator's own: 16 MiB. Without the ring's bound the 30 s of
/// events here (about 100,000 a second) would take hundreds of MiB.
const STALLED_READER_BOUND_KIB: u64 = 16 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tier C: 35 s of a flat-out load with a subscriber that never reads"]
async fn a_subscriber_that_reads_nothing_for_30_s_costs_bounded_memory_and_is_told_its_losses() {
    let server = Server::start(&FAST_SERVER);
    let load = |seconds: &str| {
        let out = std::process::Command::new(BIN)
            .args([
                "clients",
                "--target",
                &server.url,
                "--n",
                "32",
                "--think-time",
                "0s",
            ])
            .args(["--duration", seconds])
            .output()
            .unwrap();
        stdout_of_success(&out)
    };
    // Warm: the connections, the runtime's threads and the allocator's arenas.
    load("3s");
    let before = common::rss_kib(server.pid);
    let url = server.url.clone();
    let mut tap = Tap::open(&url, "", None).unwrap();
    let started = Instant::now();
    let report = load("30s");
    assert!(started.elapsed() >= Duration::from_secs(30));
    let grown = common::rss_kib(server.pid).saturating_sub(before);
    assert!(
        grown <= STALLED_READER_BOUND_KIB,
        "the server grew {grown} KiB with a stalled tap reader (bound {STALLED_READER_BOUND_KIB} KiB)\n{report}"
    );
    // Reading again: what waited in the socket, then the losses, told.
    let lost: u64 = std::iter::from_fn(|| tap.line())
        .take(2_000_000)
        .find_map(|l| l.strip_prefix("lost ").and_then(|n| n.parse().ok()))
        .expect("a `lost N` line");
    assert!(
        lost > 100_000,
        "30 s of events cannot fit a ring of 65,536: lost {lost}"
    );
    eprintln!("grew {grown} KiB; the first loss told: {lost} events");
}
