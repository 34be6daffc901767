//! The real server under the abuse a workshop room gives it: half-sent requests,
//! too many connections, malformed HTTP, injected faults, shutdown mid-load,
//! `kill -9` in durable mode, and secrets that must not reach the log.

use crate::common;

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

/// [`exchange`] on a blocking thread, for the async tests.
async fn exchange_off_thread(addr: String, bytes: &[u8], within: Duration) -> (String, bool) {
    let bytes = bytes.to_vec();
    tokio::task::spawn_blocking(move || exchange(&addr, &bytes, within))
        .await
        .unwrap()
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
    let (answer, closed) = exchange_off_thread(
        server.addr(),
        b"POST /requests HTTP/1.1\r\nHost: x\r\nContent-Le",
        Duration::from_secs(10),
    )
    .await;
    assert!(closed, "still open after 10 s: {answer:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // A connection that sends nothing at all is closed the same way.
    let (_, closed) = exchange_off_thread(server.addr(), b"", Duration::from_secs(10)).await;
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

/// The header timeout counts from a reply's end, not its start: a stream (the
/// live view's events) that outlasts it is not cut.
#[tokio::test]
async fn a_reply_that_streams_longer_than_the_header_timeout_is_not_cut() {
    let server = Server::start(&["--header-read-timeout", "300ms"]);
    let (answer, closed) = exchange_off_thread(
        server.addr(),
        b"GET /live/events HTTP/1.1\r\nHost: x\r\n\r\n",
        Duration::from_millis(1500),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(!closed, "the stream was cut within 1.5 s: {answer}");
}

#[tokio::test]
async fn a_stalled_body_gets_a_408_and_never_reaches_the_processor() {
    let server = Server::start(&["--body-read-timeout", "300ms"]);
    let started = Instant::now();
    let (answer, closed) = exchange_off_thread(
        server.addr(),
        b"POST /requests HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly ten..",
        Duration::from_secs(10),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(closed, "the connection closes after a 408");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(json_body(&answer)["error"], "request_timeout");
    assert_eq!(stats(&client(), &server.url).await["requests_started"], 0);
    // A route that reads no body answers at once and closes, leaving the rest unread.
    let (answer, closed) = exchange_off_thread(
        server.addr(),
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly ten..",
        Duration::from_secs(2),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200") && closed, "{answer}");
}

#[tokio::test]
async fn connections_over_the_limit_get_a_503_and_the_slot_comes_back() {
    let server = Server::start(&["--max-connections", "2"]);
    let addr = server.addr();
    let first = TcpStream::connect(&addr).unwrap();
    let second = TcpStream::connect(&addr).unwrap();
    let (answer, closed) = exchange_off_thread(
        addr.clone(),
        b"GET /stats HTTP/1.1\r\nHost: x\r\n\r\n",
        Duration::from_secs(10),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(closed);
    let error = json_body(&answer);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("max_connections"),
        "{error}"
    );
    drop((first, second));
    // Both slots come back; a new connection is served and sees every refusal
    // counted: the first, and any retry here that came before the slots were back.
    let (answer, refused_retries) = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut refused = 0;
        loop {
            let (answer, _) = exchange(
                &addr,
                b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                Duration::from_secs(5),
            );
            if answer.starts_with("HTTP/1.1 200") || Instant::now() > deadline {
                return (answer, refused);
            }
            refused += u64::from(answer.starts_with("HTTP/1.1 503"));
        }
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(
        json_body(&answer)["connections"]["refused"],
        1 + refused_retries
    );
}

#[tokio::test]
async fn malformed_http_is_refused_and_the_server_carries_on() {
    let server = Server::start(&[]);
    let huge_header = format!(
        "GET /stats HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(512 * 1024)
    );
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"HELLO THERE\r\n\r\n".to_vec(), "HTTP/1.1 400"),
        (b"GET /stats HTTP/9.9\r\n\r\n".to_vec(), "HTTP/1.1 "),
        (
            b"POST /requests HTTP/1.1\r\nContent-Length: x\r\n\r\n".to_vec(),
            "HTTP/1.1 400",
        ),
        (
            b"POST /requests HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab".to_vec(),
            "HTTP/1.1 400",
        ),
        (
            b"POST /requests HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec(),
            "HTTP/1.1 400",
        ),
        (b"\x00\x01\x02\x03\r\n\r\n".to_vec(), "HTTP/1.1 400"),
        (huge_header.into_bytes(), "HTTP/1.1 431"),
    ];
    for (bytes, want) in cases {
        let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(60)]).into_owned();
        let (answer, closed) =
            exchange_off_thread(server.addr(), &bytes, Duration::from_secs(10)).await;
        assert!(answer.starts_with(want), "{shown:?} -> {answer:?}");
        let status: u16 = answer[9..12].parse().unwrap();
        assert!((400..500).contains(&status), "{shown:?} -> {answer:?}");
        assert!(closed, "{shown:?}: the connection closes");
    }
    let client = client();
    let s = stats(&client, &server.url).await;
    assert_eq!(s["requests_started"], 0, "{s}");
    post_element(&client, &server.url).await;
}

#[tokio::test]
async fn admin_bodies_must_be_json() {
    let server = Server::start(&[]);
    let client = client();
    let url = format!("{}/admin/config", server.url);
    for content_type in [
        "application/x-www-form-urlencoded",
        "text/plain",
        "multipart/form-data",
    ] {
        let r = send(
            &client,
            Method::PUT,
            &url,
            &[("content-type", content_type)],
            r#"{"permits": 9}"#,
        )
        .await;
        assert_eq!(
            r.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type}"
        );
        assert_eq!(r.json()["error"], "unsupported_media_type");
    }
    let r = send(&client, Method::PUT, &url, &[], r#"{"permits": 9}"#).await;
    assert_eq!(r.status, StatusCode::OK, "no content type is taken as JSON");
    assert_eq!(stats(&client, &server.url).await["permits_total"], 9);
}

/// Failures, stalls and a slow network at once under real load: the books balance
/// and every permit comes back once the load stops.
#[tokio::test]
async fn under_every_fault_the_permits_come_back() {
    let server = Server::start(&[
        "--permits",
        "4",
        "--persist-latency",
        "20ms",
        "--persist-error-rate",
        "0.3",
        "--persist-stall-rate",
        "0.2",
        "--persist-timeout",
        "200ms",
        "--network-delay",
        "20ms + exp(10ms)",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = tokio::process::Command::new(BIN)
        .args([
            "clients",
            "--target",
            &server.url,
            "--n",
            "40",
            "--duration",
            "3s",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .await
        .unwrap();
    stdout_of_success(&out);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let client = client();
    let s = settled_stats(&client, &server.url).await;
    assert_eq!(s["permits_available"], s["permits_total"], "{s}");
    assert_eq!(s["requests_started"], s["requests_done"]);
    assert_eq!(s["persists_started"], s["persists_done"]);
    assert!(s["persists_timed_out"].as_u64().unwrap() > 0, "{s}");
    assert!(
        s["persists_failed"].as_u64().unwrap() > s["persists_timed_out"].as_u64().unwrap(),
        "{s}"
    );
    // Persistence fails behind the reply, as in the original: every client got its 200.
    assert_eq!(report["errors"], 0, "{report}");
    assert_eq!(report["requests_completed"], s["requests_done"], "{report}");
}

#[tokio::test]
async fn shutdown_answers_every_request_and_balances_the_books() {
    let server = Server::start(&[
        "--permits",
        "1",
        "--persist-latency",
        "30s",
        "--drain-timeout",
        "500ms",
    ]);
    let client = client();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..5 {
        let (client, url) = (client.clone(), format!("{}/requests", server.url));
        set.spawn(async move { send(&client, Method::POST, &url, &[], "x").await });
    }
    wait_for(&client, &server.url, "all five started", |s| {
        s["requests_started"] == 5
    })
    .await;
    let stopped = Instant::now();
    let (status, report) =
        tokio::task::spawn_blocking(move || server.terminate(Duration::from_secs(20)))
            .await
            .unwrap();
    assert!(status.success(), "{report}");
    assert!(
        stopped.elapsed() < Duration::from_secs(8),
        "{:?}",
        stopped.elapsed()
    );
    let replies = set.join_all().await;
    assert_eq!(
        replies
            .iter()
            .filter(|r| r.status == StatusCode::OK)
            .count(),
        1
    );
    for r in replies.iter().filter(|r| r.status != StatusCode::OK) {
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
        assert!(r.json()["message"]
            .as_str()
            .unwrap()
            .contains("shutting down"));
    }
    let count = |label| Server::final_count(&report, label);
    assert_eq!((count("requests started"), count("requests done")), (5, 5));
    assert_eq!(count("requests cut short at shutdown (503)"), 4);
    assert_eq!(count("persistent writes started"), 1);
    assert_eq!(
        count("persistent writes started"),
        count("persistent writes done") + count("persistent writes abandoned at shutdown")
    );
}

/// A client that hangs up while its request waits for a permit does not take the
/// request with it: the request still gets its permit, hands its element on and
/// fires request-done (the server runs the rest of it on a task of its own).
#[tokio::test]
async fn a_request_whose_client_hangs_up_still_runs_to_its_end() {
    let server = Server::start(&["--permits", "1", "--persist-latency", "1500ms"]);
    let client = client();
    // The first request's persist holds the only permit for 1.5 s.
    let first = send(
        &client,
        Method::POST,
        &format!("{}/requests", server.url),
        &[],
        "x",
    )
    .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    // The second waits for it, and its client gives up after 200 ms.
    let (answer, _) = exchange_off_thread(
        server.addr(),
        b"POST /requests HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx",
        Duration::from_millis(200),
    )
    .await;
    assert!(
        answer.is_empty(),
        "answered while the permit was held: {answer}"
    );
    wait_for(
        &client,
        &server.url,
        "the second request's connection closed",
        |s| s["connections"]["open"].as_u64() <= Some(1),
    )
    .await;
    wait_for(
        &client,
        &server.url,
        "the abandoned request ran to its end",
        |s| s["requests_done"] == 2 && s["persists_started"] == 2,
    )
    .await;
}

/// With `--durable`, a reply means the element is on disk: after `kill -9` in the
/// middle of a load, every acknowledged element is there, whole.
#[tokio::test]
async fn kill_9_loses_no_acknowledged_element_in_durable_mode() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&[
        "--persist-dir",
        dir.path().to_str().unwrap(),
        "--durable",
        "--permits",
        "64",
        "--network-delay",
        "0",
    ]);
    let client = client();
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(u64, String)>::new()));
    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..16 {
        let (client, url, acked) = (
            client.clone(),
            format!("{}/requests", server.url),
            acked.clone(),
        );
        writers.spawn(async move {
            for n in 0.. {
                let body = format!("writer {writer} element {n} ").repeat(100);
                let request = hyper::Request::post(&url)
                    .body(http_body_util::Full::new(bytes::Bytes::from(body.clone())))
                    .unwrap();
                // The kill ends this loop: the connection fails or the reply is cut.
                let Ok(response) = client.request(request).await else {
                    return;
                };
                if response.status() != StatusCode::OK {
                    return;
                }
                let Ok(collected) = http_body_util::BodyExt::collect(response.into_body()).await
                else {
                    return;
                };
                let reply: serde_json::Value =
                    serde_json::from_slice(&collected.to_bytes()).unwrap();
                acked
                    .lock()
                    .unwrap()
                    .push((reply["id"].as_u64().unwrap(), body));
            }
        });
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked.lock().unwrap().len() < 300 {
        assert!(
            Instant::now() < deadline,
            "too few acknowledgements to test anything"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.signal("KILL");
    tokio::time::timeout(Duration::from_secs(30), writers.join_all())
        .await
        .unwrap();
    drop(server);
    let acked = acked.lock().unwrap();
    for (id, body) in acked.iter() {
        let stored = std::fs::read(dir.path().join(format!("{id}.bin")))
            .unwrap_or_else(|e| panic!("acknowledged element {id} is missing: {e}"));
        assert!(stored == body.as_bytes(), "element {id} is not whole");
    }
    eprintln!(
        "{} acknowledged elements all on disk after kill -9",
        acked.len()
    );
}

#[tokio::test]
async fn request_content_never_reaches_the_default_log() {
    const SECRET: &str = "SeCrEt-7f3a9";
    let server = Server::start_logging(&["--max-body-bytes", "64"]);
    let client = client();
    let requests = format!("{}/requests", server.url);
    let json = [("content-type", "application/json")];
    send(
        &client,
        Method::POST,
        &requests,
        &[("x-note", SECRET)],
        SECRET,
    )
    .await;
    send(
        &client,
        Method::POST,
        &requests,
        &json,
        format!("{{\"{SECRET}\": 1}}"),
    )
    .await;
    send(
        &client,
        Method::POST,
        &requests,
        &[("content-type", SECRET)],
        "x",
    )
    .await;
    send(&client, Method::POST, &requests, &[], SECRET.repeat(10)).await;
    send(
        &client,
        Method::GET,
        &format!("{}/{SECRET}", server.url),
        &[],
        "",
    )
    .await;
    put_json(
        &client,
        &format!("{}/admin/config", server.url),
        &format!("{{\"{SECRET}\": 1}}"),
    )
    .await;
    put_json(
        &client,
        &format!("{}/admin/config", server.url),
        r#"{"permits": 9}"#,
    )
    .await;
    let stderr = server.stderr.as_ref().unwrap();
    let mut log = Vec::new();
    // The accepted config change is logged; once it is there, so is anything before it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !log
        .iter()
        .any(|l: &String| l.contains("configuration changed"))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        log.push(
            stderr
                .recv_timeout(left)
                .expect("the config change is logged at info"),
        );
    }
    let (status, printed) = tokio::task::spawn_blocking(move || {
        let stderr = server.stderr.as_ref().unwrap();
        let rest: Vec<String> =
            std::iter::from_fn(|| stderr.recv_timeout(Duration::from_millis(200)).ok()).collect();
        let (status, printed) = server.terminate(Duration::from_secs(20));
        (status, format!("{printed}\n{}", rest.join("\n")))
    })
    .await
    .unwrap();
    assert!(status.success());
    let log = log.join("\n");
    assert!(
        !log.contains(SECRET) && !printed.contains(SECRET),
        "{log}\n{printed}"
    );
    assert!(!log.contains("panicked"), "{log}");
}

/// The operator's own listener answers while the data port is full: a flood of
/// the data port cannot blind the person who has to look at it.
#[tokio::test]
async fn the_operator_listener_answers_while_the_data_port_is_full() {
    let server = Server::start(&["--max-connections", "40"]);
    let operator = server
        .operator_url
        .clone()
        .expect("an operator listener by default");
    let addr = server.addr();
    let held: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // The data port is full: the next connection is refused...
    let (answer, _) = exchange_off_thread(
        addr.clone(),
        b"GET /stats HTTP/1.1\r\nHost: x\r\n\r\n",
        Duration::from_secs(10),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    // ...and the operator's routes answer at once on their own listener.
    let client = client();
    for path in ["/stats", "/metrics"] {
        let started = Instant::now();
        let response = get(&client, &format!("{operator}{path}")).await;
        let took = started.elapsed();
        assert_eq!(response.status, StatusCode::OK, "{path}: {}", response.body);
        assert!(took < Duration::from_millis(100), "{path} took {took:?}");
    }
    let stats = get(&client, &format!("{operator}/stats")).await.json();
    assert_eq!(
        stats["connections"]["open"], 40,
        "the data port's connections"
    );
    // It serves no requests: those belong to the data port.
    let refused = send(
        &client,
        Method::POST,
        &format!("{operator}/requests"),
        &[],
        bytes::Bytes::from_static(b"element"),
    )
    .await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND, "{}", refused.body);
    drop(held);
}

/// `--admin-listen off` keeps the single port: every route on the data port.
#[tokio::test]
async fn with_the_operator_listener_off_one_port_serves_everything() {
    let server = Server::start(&["--admin-listen", "off"]);
    assert_eq!(server.operator_url, None);
    let client = client();
    post_element(&client, &server.url).await;
    assert_eq!(stats(&client, &server.url).await["requests_started"], 1);
}

/// A client that hangs up while its request waits at the gate: request-abandoned
/// fires once for it, and the request still runs to its request-done (every
/// request-start has its request-done), its element persisted: a write nobody
/// waits for, counted as wasted (the first request's is not).
#[tokio::test]
async fn a_client_that_hangs_up_is_counted_and_its_request_runs_to_its_end() {
    let server = Server::start(&["--permits", "1", "--persist-latency", "400ms"]);
    let client = client();
    // The first request takes the only permit for its 400 ms persist.
    post_element(&client, &server.url).await;
    let hung_up = waiting_at_the_gate(&client, &server).await;
    assert_eq!(stats(&client, &server.url).await["requests_abandoned"], 0);
    drop(hung_up);
    wait_for(&client, &server.url, "the hang-up is counted", |s| {
        s["requests_abandoned"] == 1
    })
    .await;
    let gone = stats(&client, &server.url).await;
    assert_eq!(gone["requests_done"], 1, "abandoned, not yet ended: {gone}");
    let settled = settled_stats(&client, &server.url).await;
    for (field, want) in [
        ("requests_started", 2),
        ("requests_done", 2),
        ("requests_abandoned", 1),
        ("persists_done", 2),
        ("persists_wasted", 1),
    ] {
        assert_eq!(settled[field], want, "{field}: {settled}");
    }
}

/// With `on_disconnect = cancel` the same hang-up ends the request at the gate:
/// request-done fires with cancelled = 1 (every request-start still has its
/// request-done), no permit is taken for it and nothing is persisted for nobody.
#[tokio::test]
async fn with_cancel_a_client_that_hangs_up_gives_its_place_back_and_nothing_is_wasted() {
    let server = Server::start(&[
        "--permits",
        "1",
        "--persist-latency",
        "400ms",
        "--on-disconnect",
        "cancel",
    ]);
    let client = client();
    post_element(&client, &server.url).await;
    let hung_up = waiting_at_the_gate(&client, &server).await;
    drop(hung_up);
    // Cancelled at once, while the first persist still holds the permit.
    wait_for(&client, &server.url, "the hang-up ends its request", |s| {
        s["requests_done"] == 2
    })
    .await;
    let gone = stats(&client, &server.url).await;
    assert_eq!(gone["requests_cancelled"], 1, "{gone}");
    assert_eq!(gone["permits_waiting"], 0, "no longer waiting: {gone}");
    assert_eq!(
        gone["persists_started"], 1,
        "nothing started for the gone client: {gone}"
    );
    let settled = settled_stats(&client, &server.url).await;
    for (field, want) in [
        ("requests_started", 2),
        ("requests_done", 2),
        ("requests_abandoned", 1),
        ("requests_cancelled", 1),
        ("persists_done", 1),
        ("persists_wasted", 0),
        ("permits_available", 1),
    ] {
        assert_eq!(settled[field], want, "{field}: {settled}");
    }
}

/// `permit_wait_limit`: a request that has waited that long for a permit gets a
/// 503 saying so (request-shed), and the permit's holder is untouched.
#[tokio::test]
async fn a_request_that_waits_past_the_permit_wait_limit_is_refused() {
    let server = Server::start(&[
        "--permits",
        "1",
        "--persist-latency",
        "2s",
        "--permit-wait-limit",
        "200ms",
    ]);
    let client = client();
    post_element(&client, &server.url).await;
    let started = Instant::now();
    let refused = send(
        &client,
        Method::POST,
        &format!("{}/requests", server.url),
        &[],
        bytes::Bytes::new(),
    )
    .await;
    let waited = started.elapsed();
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        refused.body
    );
    assert!(
        refused.body.contains("permit_wait_limit"),
        "{}",
        refused.body
    );
    assert!(
        waited >= Duration::from_millis(200),
        "refused after {waited:?}, before the limit"
    );
    assert!(
        waited < Duration::from_millis(1500),
        "refused after {waited:?}, long after the limit"
    );
    let s = stats(&client, &server.url).await;
    assert_eq!(s["requests_shed"], 1, "{s}");
    assert_eq!(s["requests_done"], 2, "{s}");
    assert_eq!(s["persists_started"], 1, "{s}");
}

/// A raw request whose connection the caller holds (drop it to hang up), sent
/// to a server whose only permit is taken: it waits at the gate.
async fn waiting_at_the_gate(client: &HttpClient, server: &Server) -> TcpStream {
    let addr = server.addr();
    let stream = tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(&addr).expect("connect");
        stream
            .write_all(b"POST /requests HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
            .expect("send");
        stream
    })
    .await
    .unwrap();
    wait_for(
        client,
        &server.url,
        "the second request waits at the gate, counted as waiting",
        |s| s["requests_blocked"] == 1 && s["permits_waiting"] == 1,
    )
    .await;
    stream
}

/// What 48 viewers that never read may grow the server by: each holds the
/// shared history (one copy for all), its place in the 4-second backlog (also
/// shared) and hyper's buffer of what its socket would not take, at most one
/// second's event (~3 KiB) once the kernel's buffers fill. 16 MiB leaves the
/// allocator room; measured growth is 5.5 MiB with 200 such pages (2-vCPU VM, debug build).
const STALLED_VIEWERS_BOUND_KIB: u64 = 16 * 1024;

/// Pages that open the live view's stream and never read it hold their
/// connections; past the live view's own limit they are refused and closed,
/// so the operator's own requests keep the rest of its listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn viewers_that_never_read_leave_the_operator_its_own_requests() {
    let server = Server::start(&[]);
    let operator = server.operator_url.clone().expect("an operator listener");
    let addr = operator.trim_start_matches("http://").to_owned();
    let before = common::rss_kib(server.pid);
    let mut admitted = 0;
    let mut refused = 0;
    let mut held = Vec::new();
    for _ in 0..200 {
        let mut viewer = TcpStream::connect(&addr).unwrap();
        viewer
            .write_all(b"GET /live/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        // The status line only; after it the viewer never reads again.
        viewer
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut head = [0u8; 12];
        viewer.read_exact(&mut head).unwrap();
        match &head {
            b"HTTP/1.1 200" => admitted += 1,
            b"HTTP/1.1 503" => refused += 1,
            other => panic!("{}", String::from_utf8_lossy(other)),
        }
        held.push(viewer);
    }
    assert_eq!((admitted, refused), (48, 152), "the live view's 48 viewers");
    // A few seconds of events that nobody reads.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let grown = common::rss_kib(server.pid).saturating_sub(before);
    eprintln!("200 viewers that never read: the server grew {grown} KiB");
    assert!(
        grown <= STALLED_VIEWERS_BOUND_KIB,
        "the server grew {grown} KiB (bound {STALLED_VIEWERS_BOUND_KIB} KiB)"
    );
    let client = client();
    let mut slowest = Duration::ZERO;
    for _ in 0..3 {
        let asked = Instant::now();
        let reset = send(
            &client,
            Method::POST,
            &format!("{operator}/admin/reset"),
            &[],
            bytes::Bytes::new(),
        )
        .await;
        let took = asked.elapsed();
        slowest = slowest.max(took);
        assert_eq!(reset.status, StatusCode::OK, "{}", reset.body);
        // The issue's bound. Measured on a 2-vCPU VM, debug build: at worst
        // 3.6 ms, and 3.9 ms on one core (taskset -c 0): 250x under it, so
        // it holds on a machine 2.5x slower too.
        assert!(took < Duration::from_secs(1), "/admin/reset took {took:?}");
    }
    eprintln!("/admin/reset beside 200 stalled viewers: at worst {slowest:?}");
    drop(held);
}
