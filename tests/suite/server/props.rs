//! Property tests of everything that parses outside input: request bodies, delay
//! expressions, admin config updates, whole HTTP requests through the router, and
//! raw bytes on a real socket. The properties: no input panics the server, every
//! refusal is a 4xx with a JSON body, a refused change changes nothing, and what is
//! accepted is within the documented limits.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::http::{HeaderValue, Request};
use bytes::Bytes;
use proptest::prelude::*;
use simulator_api::Delay;
use simulator_api::{Settings, SettingsUpdate};
use simulator_service::parts::app;
use simulator_service::parts::parse_element;
use simulator_service::parts::AppState;
use simulator_service::parts::DataProcessor;
use simulator_service::parts::Element;
use simulator_service::parts::MAX_PERMITS;
use simulator_service::scenario::Scenario;
use tower::ServiceExt;

/// JSON values of the kinds a person (or a fuzzer) would put in a config body.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (0u64..20).prop_map(|n| json!(n)),
        Just(json!(MAX_PERMITS)),
        Just(json!(MAX_PERMITS as u64 + 1)),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        (0.0f64..=1.0).prop_map(|f| json!(f)),
        delay_text().prop_map(Value::String),
        prop::sample::select(&["pool", "task-per-element", "semaphore", "127.0.0.1:1"][..])
            .prop_map(|s| json!(s)),
        ".{0,12}".prop_map(Value::String),
        Just(json!([1, 2])),
        Just(json!({"nested": 1})),
    ]
}

/// Strings near the delay grammar, valid or not.
fn delay_text() -> impl Strategy<Value = String> {
    let unit = prop_oneof![
        Just("ns"),
        Just("us"),
        Just("ms"),
        Just("s"),
        Just("m"),
        Just("h"),
        Just("d"),
        Just("")
    ];
    let amount = prop_oneof![
        (0u64..5000).prop_map(|n| n.to_string()),
        Just("-1".to_owned()),
        Just("99999999999999999999".to_owned()),
        Just("1.5".to_owned())
    ];
    let term = (amount, unit).prop_map(|(a, u)| format!("{a}{u}"));
    let shape = prop_oneof![
        term.clone(),
        (term.clone(), term.clone()).prop_map(|(m, s)| format!("normal({m}, {s})")),
        term.clone().prop_map(|m| format!("exp({m})")),
        (term.clone(), term.clone()).prop_map(|(l, h)| format!("uniform({l}, {h})")),
        (term.clone(), term.clone()).prop_map(|(l, h)| format!("uniform({l}, {h}")),
    ];
    prop::collection::vec(shape, 1..4).prop_map(|terms| terms.join(" + "))
}

const CONFIG_KEYS: [&str; 13] = [
    "permits",
    "persistence",
    "persist_workers",
    "persist_queue",
    "listen",
    "durable",
    "persist_latency",
    "network_delay",
    "persist_error_rate",
    "persist_stall_rate",
    "persist_timeout",
    "persist_cost_per_mib",
    "permitz",
];

fn config_body() -> impl Strategy<Value = String> {
    prop::collection::vec((prop::sample::select(&CONFIG_KEYS[..]), json_value()), 0..5).prop_map(
        |pairs| {
            let object: serde_json::Map<String, serde_json::Value> =
                pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            serde_json::Value::Object(object).to_string()
        },
    )
}

/// One runtime for the property tests that need a context to spawn in; nothing
/// drives it, as nothing there awaits.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    })
}

fn config_is_within_limits(t: &Settings) -> bool {
    t.validate().is_ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn delays_parse_or_refuse_and_what_parses_prints_back(text in prop_oneof![delay_text(), ".{0,40}"]) {
        if let Ok(delay) = text.parse::<Delay>() {
            let printed = delay.to_string();
            prop_assert_eq!(printed.parse::<Delay>(), Ok(delay), "{} printed as {}", text, printed);
        }
    }

    #[test]
    fn element_bodies_parse_or_are_refused_within_the_limit(
        content_type in prop::option::of(prop_oneof![
            Just("application/json".to_owned()),
            Just("application/JSON; charset=utf-8".to_owned()),
            Just("application/octet-stream".to_owned()),
            ".{0,30}",
        ]),
        body in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..64),
            any::<u64>().prop_map(|n| format!("{{\"size\": {n}}}").into_bytes()),
            json_value().prop_map(|v| serde_json::json!({"size": v}).to_string().into_bytes()),
        ],
        max in 1u64..1_000_000,
    ) {
        let content_type = content_type.as_deref().and_then(|c| HeaderValue::from_str(c).ok());
        match parse_element(content_type.as_ref(), Bytes::from(body.clone()), (max, "max_element_bytes")) {
            Ok((Element::Synthetic(n), _)) => prop_assert!(n <= max),
            Ok((Element::Bytes(b), key)) => {
                prop_assert_eq!(&b[..], &body[..]);
                prop_assert_eq!(key, None);
            }
            Err(_) => {}
        }
    }

    #[test]
    fn a_config_update_is_applied_whole_or_not_at_all(body in config_body()) {
        // A pool's workers are spawned on the runtime the update runs in.
        let _runtime = runtime().enter();
        let processor = DataProcessor::new(&Settings::default()).unwrap();
        let before = (processor.settings(), processor.admission().total());
        let applied = serde_json::from_str::<SettingsUpdate>(&body)
            .map_err(|e| e.to_string())
            .and_then(|update| processor.update(&update).map_err(|e| e.to_string()));
        match applied {
            Ok(settings) => {
                prop_assert!(config_is_within_limits(&settings));
                prop_assert!((1..=MAX_PERMITS).contains(&processor.admission().total()));
                prop_assert_eq!(processor.settings(), settings);
            }
            Err(_) => prop_assert_eq!((processor.settings(), processor.admission().total()), before),
        }
    }
}

/// For runners outside the `proptest!` macro, which has no source file to keep
/// failing cases in; a failure prints its minimal case instead.
fn runner_config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// One request through the whole router; `None` when the parts do not make a
/// request at all (hyper would have refused it before the router).
fn router_request(
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Option<Request<Body>> {
    let mut builder = Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        builder = builder.header("content-type", ct);
    }
    builder.body(Body::from(body)).ok()
}

#[test]
fn any_request_gets_an_answer_and_every_refusal_is_json() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = Settings {
        network_delay: Delay::fixed(Duration::ZERO),
        persist_latency: Delay::fixed(Duration::from_micros(10)),
        max_body_bytes: 256,
        ..Settings::default()
    };
    let router = app(AppState::new(
        DataProcessor::new(&config).unwrap(),
        Scenario::original(),
    ))
    .layer(axum::extract::connect_info::MockConnectInfo(
        std::net::SocketAddr::from(([127, 0, 0, 1], 9)),
    ));
    let strategy = (
        prop::sample::select(&["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"][..]),
        prop_oneof![
            prop::sample::select(
                &[
                    "/requests",
                    "/stats",
                    "/metrics",
                    "/healthz",
                    "/admin/config",
                    "/admin/reset",
                    "/requests/",
                    "/admin",
                    "//requests",
                    "/requests?size=5",
                ][..]
            )
            .prop_map(str::to_owned),
            "/[a-z%0-9/]{0,20}",
        ],
        prop::option::of(prop::sample::select(
            &[
                "application/json",
                "application/octet-stream",
                "text/plain",
                "application/x-www-form-urlencoded",
            ][..],
        )),
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..300),
            config_body().prop_map(String::into_bytes),
            Just(b"{\"size\": 12}".to_vec()),
        ],
    );
    let mut runner = proptest::test_runner::TestRunner::new(runner_config(512));
    runner
        .run(&strategy, |(method, path, content_type, body)| {
            let Some(request) = router_request(method, &path, content_type, body) else {
                return Ok(());
            };
            let (status, bytes) = runtime.block_on(async {
                let response = router.clone().oneshot(request).await.unwrap();
                let status = response.status();
                (
                    status,
                    to_bytes(response.into_body(), usize::MAX).await.unwrap(),
                )
            });
            prop_assert!(!status.is_server_error(), "{method} {path}: {status}");
            // A HEAD answer never carries a body, by HTTP's own rules.
            if status.is_client_error() && method != "HEAD" {
                let error: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
                    TestCaseError::fail(format!("{method} {path}: {status}, not JSON: {e}"))
                })?;
                prop_assert!(error["error"].is_string() && error["message"].is_string());
            }
            Ok(())
        })
        .unwrap();
}

/// Whether a read to the end of a connection ended: the peer closed it, after an
/// answer or without one (`Ok`), or closed it with bytes of ours unread, which
/// the kernel answers with a reset. A read that timed out did not: the peer
/// still holds the connection open, saying nothing.
fn answered_or_closed(read: &std::io::Result<usize>) -> bool {
    match read {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

/// A peer that accepts and then says nothing (a hung server) fails the check the
/// raw-bytes property holds the server to.
#[test]
fn a_peer_that_holds_the_connection_silent_is_not_taken_for_one_that_closed() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut stream = TcpStream::connect(silent.local_addr().unwrap()).unwrap();
    let (_held, _) = silent.accept().unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    stream.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let read = stream.read_to_end(&mut Vec::new());
    assert!(!answered_or_closed(&read), "{read:?}");
}

/// Raw bytes on a real socket: requests cut anywhere, corrupted, or random. The
/// server answers each with a complete status line or closes; none crashes it.
#[test]
fn raw_bytes_on_the_socket_never_break_the_server() {
    let server = common::Server::start(&[
        "--header-read-timeout",
        "200ms",
        "--body-read-timeout",
        "200ms",
        "--network-delay",
        "0",
        "--persist-latency",
        "0",
    ]);
    let valid: &[u8] = b"POST /requests HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"size\": 12}";
    let strategy = prop_oneof![
        (0..valid.len()).prop_map(move |cut| valid[..cut].to_vec()),
        (0..valid.len(), any::<u8>()).prop_map(move |(at, byte)| {
            let mut v = valid.to_vec();
            v[at] = byte;
            v
        }),
        prop::collection::vec(any::<u8>(), 0..200),
    ];
    let addr = server.addr();
    let mut runner = proptest::test_runner::TestRunner::new(runner_config(96));
    runner
        .run(&strategy, |bytes| {
            let mut stream = TcpStream::connect(&addr).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            // The server may close before it has read everything: that is fine.
            let _ = stream.write_all(&bytes);
            let _ = stream.shutdown(std::net::Shutdown::Write);
            let mut answer = Vec::new();
            let read = stream.read_to_end(&mut answer);
            prop_assert!(
                answered_or_closed(&read),
                "the server neither answered nor closed within 10 s: {read:?}"
            );
            if let Some(line) = answer
                .split(|&b| b == b'\r')
                .next()
                .filter(|l| !l.is_empty())
            {
                let line = String::from_utf8_lossy(line);
                prop_assert!(line.starts_with("HTTP/1.1 "), "{}", line);
                let status: u16 = line[9..12].parse().unwrap();
                prop_assert!(status < 500, "{}", line);
            }
            Ok(())
        })
        .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = common::client();
        let s = common::settled_stats(&client, &server.url).await;
        assert_eq!(s["requests_started"], s["requests_done"]);
        common::post_element(&client, &server.url).await;
    });
}
