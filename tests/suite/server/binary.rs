//! The real binary on 127.0.0.1:0: counts, metrics, admin validation, bad input
//! and graceful shutdown, each checked against what was actually sent.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::*;
use hyper::{Method, StatusCode};

#[tokio::test]
async fn stats_count_every_request_and_balance() {
    let server = Server::start(&["--persist-latency", "20ms"]);
    let client = client();
    let mut blocked_replies = 0;
    for _ in 0..3 {
        blocked_replies += burst(&client, &server.url, 40).await;
    }
    let s = settled_stats(&client, &server.url).await;
    assert_eq!(s["requests_started"], 120);
    assert_eq!(s["requests_done"], 120);
    assert_eq!(s["persists_started"], 120);
    assert_eq!(s["persists_done"], 120);
    assert_eq!(
        s["requests_blocked"], blocked_replies,
        "server and replies agree"
    );
    assert!(
        blocked_replies > 0,
        "40 at once through 8 permits must block"
    );
    assert_eq!(
        s["requests_blocked"].as_u64().unwrap() + s["requests_nonblocked"].as_u64().unwrap(),
        120
    );
    assert_eq!(s["permits_available"], s["permits_total"]);
    assert_eq!(s["config"]["persist_latency"], "20ms");
}

/// One sample of a metric without labels in a Prometheus exposition.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{text}"))
}

#[tokio::test]
async fn process_metrics_move_under_load() {
    let server = Server::start(&[
        "--persist-latency",
        "1ms",
        "--network-delay",
        "0",
        "--permits",
        "1000",
    ]);
    let client = client();
    let metrics = format!("{}/metrics", server.url);
    let before = get(&client, &metrics).await.body;
    burst(&client, &server.url, 3000).await;
    let after = get(&client, &metrics).await.body;
    let cpu = |t: &str| sample(t, "process_cpu_seconds_total");
    assert!(
        cpu(&after) > cpu(&before),
        "CPU {} -> {}",
        cpu(&before),
        cpu(&after)
    );
    assert!(sample(&after, "process_resident_memory_bytes") > 1e6);
    assert!(sample(&after, "process_open_fds") >= 3.0);
    let started = sample(&after, "process_start_time_seconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        (now - started).abs() < 120.0,
        "started {started}, now {now}"
    );
}

/// Elements answered before their write, as the real server counts them: six
/// requests into a store of three slots whose writes take two seconds are all
/// answered at once, and for two seconds nothing is written, so `/stats`
/// and `/metrics` read the same six, which are the store's own persists in
/// flight; once written, none is owed.
#[tokio::test]
async fn answered_unwritten_elements_are_the_writes_the_store_owes() {
    let server = Server::start(&[
        "--persist-latency",
        "2s",
        "--store-concurrency",
        "3",
        "--network-delay",
        "0",
    ]);
    let client = client();
    let answered_at = std::time::Instant::now();
    burst(&client, &server.url, 6).await;
    let s = stats(&client, &server.url).await;
    let text = get(&client, &format!("{}/metrics", server.url)).await.body;
    assert!(
        answered_at.elapsed() < Duration::from_millis(1900),
        "the replies and reads took {:?}: no write may have ended yet",
        answered_at.elapsed()
    );
    assert_eq!(s["acked_unwritten"], 6, "{s}");
    assert_eq!(s["acked_unwritten"], s["persists_in_flight"], "{s}");
    assert_eq!(s["acked_unwritten_peak"], 6, "{s}");
    assert_eq!(sample(&text, "isim_acked_unwritten"), 6.0);
    assert_eq!(sample(&text, "isim_acked_unwritten_peak"), 6.0);
    let settled = settled_stats(&client, &server.url).await;
    assert_eq!(settled["acked_unwritten"], 0, "{settled}");
    assert_eq!(settled["persists_done"], 6, "{settled}");
}

#[tokio::test]
async fn metrics_agree_with_stats_and_pass_promtool() {
    let server = Server::start(&["--persist-latency", "5ms"]);
    let client = client();
    burst(&client, &server.url, 30).await;
    let s = settled_stats(&client, &server.url).await;
    let text = get(&client, &format!("{}/metrics", server.url)).await.body;

    let value = |name: &str| sample(&text, name) as u64;
    assert_eq!(value("isim_requests_started_total"), 30);
    assert_eq!(value("isim_requests_done_total"), 30);
    assert_eq!(
        value("isim_requests_blocked_total"),
        s["requests_blocked"].as_u64().unwrap()
    );
    assert_eq!(value("isim_persists_done_total"), 30);
    assert_eq!(value("isim_request_lifetime_seconds_count"), 30);
    assert_eq!(value("isim_persist_latency_seconds_count"), 30);
    assert_eq!(value("isim_permits_available"), 8);
    assert_eq!(value("isim_persists_in_flight"), 0);

    if !have("promtool") {
        skip_or_fail("promtool not installed (Debian package prometheus)");
        return;
    }
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run promtool");
    use std::io::Write;
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool rejected /metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn admin_rejects_bad_values_and_changes_nothing() {
    let server = Server::start(&[]);
    let client = client();
    let url = format!("{}/admin/config", server.url);
    let before = stats(&client, &server.url).await["config"].clone();
    for body in [
        r#"{"permits": 0}"#,
        r#"{"permits": 2305843009213693952}"#,
        r#"{"permits": 99999999999999999999999}"#,
        r#"{"permits": -3}"#,
        r#"{"permits": "eight"}"#,
        r#"{"permits": 8.5}"#,
        r#"{"permitz": 8}"#,
        r#"{"permits": 16, "persist_error_rate": 2}"#,
        r#"{"persist_latency": "forever"}"#,
        r#"{"network_delay": "-1ms"}"#,
        r#"{"persist_latency": "5h"}"#,
        r#"{"persist_latency": "1ms + 2h"}"#,
        r#"{"persist_timeout": "0s"}"#,
        r#"{"persist_timeout": "2h"}"#,
        r#"{"persist_timeout": -5}"#,
        r#"{"persist_stall_rate": -0.1}"#,
        r#"{"persist_stall_rate": 1.01}"#,
        r#"{"persist_cost_per_mib": "9999h"}"#,
        r#"{"permits": 16"#,
        "not json",
    ] {
        let r = put_json(&client, &url, body).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body} -> {}", r.body);
        let error = r.json();
        assert_eq!(error["error"], "bad_request", "{body}");
        assert!(!error["message"].as_str().unwrap().is_empty());
    }
    assert_eq!(
        stats(&client, &server.url).await["config"],
        before,
        "nothing changed"
    );

    let r = put_json(
        &client,
        &url,
        r#"{"permits": 1080, "persist_latency": "exp(30ms)"}"#,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let s = stats(&client, &server.url).await;
    assert_eq!(
        (s["permits_total"].clone(), s["permits_available"].clone()),
        (1080.into(), 1080.into())
    );
    assert_eq!(s["config"]["persist_latency"], "exp(30ms)");

    burst(&client, &server.url, 5).await;
    let reset = send(
        &client,
        Method::POST,
        &format!("{}/admin/reset", server.url),
        &[],
        "",
    )
    .await;
    assert_eq!(reset.status, StatusCode::OK);
    let s = settled_stats(&client, &server.url).await;
    assert_eq!(
        (s["requests_started"].clone(), s["requests_done"].clone()),
        (0.into(), 0.into())
    );
}

#[tokio::test]
async fn admin_needs_the_bearer_token_when_one_is_configured() {
    let server = Server::start_with_env(&[], &[("ISIM_ADMIN_TOKEN", "s3cret")]);
    let client = client();
    let url = format!("{}/admin/reset", server.url);
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("s3cret"),
        Some("Bearer s3cret2"),
    ] {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
        let r = send(&client, Method::POST, &url, &headers, "").await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{auth:?}");
        assert_eq!(r.json()["error"], "unauthorized");
    }
    let r = send(
        &client,
        Method::POST,
        &url,
        &[("authorization", "Bearer s3cret")],
        "",
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test]
async fn bad_input_gets_a_clear_error_and_counts_nothing() {
    let server = Server::start(&["--max-body-bytes", "1k", "--max-element-bytes", "1M"]);
    let client = client();
    let requests = format!("{}/requests", server.url);
    let json = [("content-type", "application/json")];
    type Case<'a> = (Method, String, Vec<(&'a str, &'a str)>, Vec<u8>, StatusCode);
    let cases: Vec<Case> = vec![
        (
            Method::GET,
            format!("{}/nowhere", server.url),
            vec![],
            vec![],
            StatusCode::NOT_FOUND,
        ),
        (
            Method::GET,
            requests.clone(),
            vec![],
            vec![],
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            Method::DELETE,
            format!("{}/stats", server.url),
            vec![],
            vec![],
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            Method::POST,
            requests.clone(),
            vec![("content-type", "text/plain")],
            b"x".to_vec(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            Method::POST,
            requests.clone(),
            json.to_vec(),
            b"{\"size\": ".to_vec(),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::POST,
            requests.clone(),
            json.to_vec(),
            b"{\"size\": -1}".to_vec(),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::POST,
            requests.clone(),
            json.to_vec(),
            b"{\"size\": 1, \"extra\": 2}".to_vec(),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::POST,
            requests.clone(),
            json.to_vec(),
            b"[1,2]".to_vec(),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::POST,
            requests.clone(),
            json.to_vec(),
            b"{\"size\": 2000000}".to_vec(),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            Method::POST,
            requests.clone(),
            vec![],
            vec![0u8; 2048],
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
    ];
    for (method, url, headers, body, want) in cases {
        let r = send(&client, method.clone(), &url, &headers, body).await;
        assert_eq!(r.status, want, "{method} {url}: {}", r.body);
        let e = r.json();
        assert!(e["error"].is_string() && e["message"].is_string(), "{e}");
    }
    let s = stats(&client, &server.url).await;
    assert_eq!(
        s["requests_started"], 0,
        "no bad request reached the processor"
    );

    // The limits are inclusive, and a JSON content type with parameters is JSON.
    let ok = send(
        &client,
        Method::POST,
        &requests,
        &[("content-type", "application/json; charset=utf-8")],
        "{\"size\": 1048576}",
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    let ok = send(
        &client,
        Method::POST,
        &requests,
        &[("content-type", "application/octet-stream")],
        vec![1u8; 1024],
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
}

#[tokio::test]
async fn the_file_store_writes_each_element() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&["--persist-dir", dir.path().to_str().unwrap()]);
    let client = client();
    let reply = post_element(&client, &server.url).await;
    let r = send(
        &client,
        Method::POST,
        &format!("{}/requests", server.url),
        &[("content-type", "application/json")],
        "{\"size\": 200000}",
    )
    .await;
    let synthetic_id = r.json()["id"].as_u64().unwrap();
    settled_stats(&client, &server.url).await;
    let id = reply["id"].as_u64().unwrap();
    assert_eq!(
        std::fs::read(dir.path().join(format!("{id}.bin"))).unwrap(),
        b"element"
    );
    let synthetic = std::fs::metadata(dir.path().join(format!("{synthetic_id}.bin"))).unwrap();
    assert_eq!(synthetic.len(), 200_000);
    assert_eq!(stats(&client, &server.url).await["store"], "files");
}

#[tokio::test]
async fn graceful_shutdown_finishes_what_it_started_and_reports_it() {
    let server = Server::start(&["--permits", "2", "--persist-latency", "50ms"]);
    let client = client();
    // 30 requests through 2 permits need ~750 ms; stop the server in the middle.
    let load = tokio::spawn({
        let (client, url) = (client.clone(), server.url.clone());
        async move { burst(&client, &url, 30).await }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while stats(&client, &server.url).await["requests_done"]
        .as_u64()
        .unwrap()
        < 4
    {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, report) =
        tokio::task::spawn_blocking(move || server.terminate(Duration::from_secs(20)))
            .await
            .unwrap();
    assert!(status.success(), "exit {status}: {report}");
    load.await.expect("every request in flight got its reply");

    let count = |label: &str| -> u64 {
        report
            .lines()
            .find_map(|l| l.trim_start().strip_prefix(label)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{label}` in:\n{report}"))
    };
    assert_eq!(count("requests started"), 30);
    assert_eq!(count("requests done"), 30);
    assert_eq!(count("persistent writes started"), 30);
    assert_eq!(count("persistent writes done"), 30);
    assert_eq!(count("persistent writes abandoned at shutdown"), 0);
}

#[tokio::test]
async fn shutdown_reports_persists_the_deadline_abandoned() {
    let server = Server::start(&["--persist-latency", "1h", "--drain-timeout", "300ms"]);
    let client = client();
    post_element(&client, &server.url).await;
    let (status, report) =
        tokio::task::spawn_blocking(move || server.terminate(Duration::from_secs(20)))
            .await
            .unwrap();
    assert!(status.success());
    assert!(
        report
            .lines()
            .any(|l| l.contains("persistent writes abandoned at shutdown")
                && l.trim_end().ends_with(" 1")),
        "{report}"
    );
}

#[test]
fn invalid_settings_stop_the_server_at_start_with_the_reason() {
    for (args, needle) in [
        (vec!["--permits", "0"], "permits must be between 1"),
        (vec!["--persist-error-rate", "1.5"], "persist_error_rate"),
        (vec!["--network-delay", "soon"], "soon"),
        (vec!["--durable"], "durable needs persist_dir"),
        (vec!["--max-connections", "0"], "max_connections"),
        (vec!["--header-read-timeout", "0s"], "header_read_timeout"),
        (vec!["--body-read-timeout", "2h"], "body_read_timeout"),
        (vec!["--persist-stall-rate", "2"], "persist_stall_rate"),
        (vec!["--persist-timeout", "0s"], "persist_timeout"),
        (
            vec!["--config", "/nonexistent/sim.toml"],
            "cannot read config file",
        ),
    ] {
        let out = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} started");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

#[tokio::test]
async fn a_scenario_switch_applies_live_all_or_nothing() {
    let server = Server::start(&[]);
    let client = client();
    let url = format!("{}/admin/config", server.url);
    let bad = put_json(&client, &url, r#"{"scenario": "no-such", "permits": 9}"#).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
    assert!(
        bad.body.contains("sequential-persist"),
        "names the bundled ones: {}",
        bad.body
    );
    let s = stats(&client, &server.url).await;
    assert_eq!(
        (s["scenario"].clone(), s["config"]["permits"].clone()),
        ("semaphore-starvation".into(), 8.into())
    );

    let ok = put_json(
        &client,
        &url,
        r#"{"scenario": "sequential-persist", "persist_workers": 4}"#,
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    let s = stats(&client, &server.url).await;
    assert_eq!(s["scenario"], "sequential-persist");
    assert_eq!(s["config"]["persistence"], "pool");
    assert_eq!(s["config"]["permits"], 10000);
    assert_eq!(
        s["config"]["persist_workers"], 4,
        "the rest of the body over the scenario"
    );
    assert_eq!(s["fixes"][0]["name"], "bounded-parallel");
    let capacity = s["model"]["capacity_per_s"].as_f64().unwrap();
    assert!((capacity - 4.0 / 0.060).abs() < 0.01, "{capacity}");
    post_element(&client, &server.url).await;
    let s = settled_stats(&client, &server.url).await;
    assert_eq!(
        (s["queue_enqueued"].clone(), s["persists_done"].clone()),
        (1.into(), 1.into())
    );
}

/// `PUT /admin/incident` begins the scenario's incident: its settings in force
/// and in `/stats.incident`; a second while it lasts is refused (409), and a
/// scenario without one says so (400).
#[tokio::test]
async fn an_incident_begins_on_demand_once_at_a_time() {
    let client = client();
    let plain = Server::start(&["--admin-listen", "off"]);
    let none = put_json(&client, &format!("{}/admin/incident", plain.url), "").await;
    assert_eq!(none.status, 400, "{}", none.body);
    assert!(none.body.contains("declares no incident"), "{}", none.body);

    let server = Server::start(&["--scenario", "retry-storm", "--admin-listen", "off"]);
    let url = format!("{}/admin/incident", server.url);
    let begun = put_json(&client, &url, "").await;
    assert_eq!(begun.status, 200, "{}", begun.body);
    assert_eq!(begun.json()["seq"], 1);
    assert_eq!(begun.json()["lasts_ms"], 10_000);
    let again = put_json(&client, &url, "").await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert!(again.body.contains("one at a time"), "{}", again.body);
    let s = stats(&client, &server.url).await;
    assert_eq!(s["incident"]["seq"], 1, "{s}");
    assert_eq!(s["config"]["persist_latency"], "100ms");
    assert_eq!(s["incidents_started"], 1);
    assert_eq!(s["incidents"][0]["lasts"], "10s");
}
