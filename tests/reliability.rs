//! The real server under the abuse a workshop room gives it: half-sent requests,
//! too many connections, malformed HTTP, injected faults, shutdown mid-load,
//! `kill -9` in durable mode, and secrets that must not reach the log.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use hyper::{Method, StatusCode};

/// Sends `bytes` on a fresh connection and reads until the server closes it or
/// `within` passes. Returns what was read and whether the server closed.
fn exchange(addr: &str, bytes: &[u8], within: Duration) -> (String, bool) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(bytes).expect("send");
    read_until_closed(&mut stream, within)
}

fn read_until_closed(stream: &mut TcpStream, within: Duration) -> (String, bool) {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (String::from_utf8_lossy(&got).into_owned(), false);
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return (String::from_utf8_lossy(&got).into_owned(), true)
            }
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
        }
    }
}

/// The JSON body of a raw HTTP/1.1 response.
fn json_body(response: &str) -> serde_json::Value {
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {response}"))
}

async fn wait_for(
    client: &HttpClient,
    url: &str,
    what: &str,
    ok: impl Fn(&serde_json::Value) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = stats(client, url).await;
        if ok(&s) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {s}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_half_sent_head_is_closed_after_the_header_timeout() {
    let server = Server::start(&["--header-read-timeout", "300ms"]);
    let started = Instant::now();
    let (answer, closed) = tokio::task::spawn_blocking({
        let addr = server.addr();
        move || {
            exchange(
                &addr,
                b"POST /requests HTTP/1.1\r\nHost: x\r\nContent-Le",
                Duration::from_secs(10),
            )
        }
    })
    .await
    .unwrap();
    assert!(closed, "still open after 10 s: {answer:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // A connection that sends nothing at all is closed the same way.
    let (_, closed) = tokio::task::spawn_blocking({
        let addr = server.addr();
        move || exchange(&addr, b"", Duration::from_secs(10))
    })
    .await
    .unwrap();
    assert!(closed);
    // Asked on a connection of its own, so the only one open is the asking one
    // once the server has counted the closes (a moment after the client sees them).
    let s = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (answer, _) = exchange(
                &server.addr(),
                b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                Duration::from_secs(10),
            );
            let s = json_body(&answer);
            if s["connections"]["open"] == 1 || Instant::now() > deadline {
                return s;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(
        s["connections"]["open"], 1,
        "the stalled connections gave their slots back: {s}"
    );
    assert!(s["connections"]["accepted"].as_u64().unwrap() >= 3, "{s}");
    assert_eq!(s["requests_started"], 0);
}
