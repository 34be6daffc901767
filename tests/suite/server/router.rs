//! The router in-process, for what a socket on loopback cannot show: a caller from
//! another address.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::connect_info::MockConnectInfo;
use axum::http::{Request, StatusCode};
use simulator_api::value::Secret;
use simulator_api::Settings;
use simulator_service::parts::app;
use simulator_service::parts::AppState;
use simulator_service::parts::DataProcessor;
use simulator_service::scenario::Scenario;
use tower::ServiceExt;

fn router(peer: &str, token: Option<&str>) -> axum::Router {
    let config = Settings {
        admin_token: Secret::new(token.map(str::to_owned)),
        ..Settings::default()
    };
    let processor = DataProcessor::new(&config).unwrap();
    app(AppState::new(processor, Scenario::original()))
        .layer(MockConnectInfo(peer.parse::<SocketAddr>().unwrap()))
}

async fn reset_status(router: axum::Router, auth: Option<&str>) -> StatusCode {
    reset_with(router, auth, &[("host", "127.0.0.1:7879")]).await
}

async fn reset_with(
    router: axum::Router,
    auth: Option<&str>,
    headers: &[(&str, &str)],
) -> StatusCode {
    let mut request = Request::post("/admin/reset");
    if let Some(a) = auth {
        request = request.header("authorization", a);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    router
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn admin_is_loopback_only_without_a_token() {
    assert_eq!(
        reset_status(router("127.0.0.1:5000", None), None).await,
        StatusCode::OK
    );
    assert_eq!(
        reset_status(router("[::1]:5000", None), None).await,
        StatusCode::OK
    );
    assert_eq!(
        reset_status(router("192.0.2.7:5000", None), None).await,
        StatusCode::FORBIDDEN
    );
}

/// A page in the attendee's browser (its Origin) or a name rebound to
/// 127.0.0.1 (its Host) reaches the admin routes over loopback too: refused,
/// and nothing is reset; this machine's own names pass, and a token passes
/// whatever the Host (a proxy or a port-forward with one).
#[tokio::test]
async fn a_foreign_host_or_origin_on_loopback_is_refused_and_changes_nothing() {
    let loopback = || router("127.0.0.1:5000", None);
    for headers in [
        &[("host", "evil.example:7879")][..],
        &[
            ("host", "127.0.0.1:7879"),
            ("origin", "https://evil.example"),
        ],
        &[("host", "127.0.0.1:7879"), ("origin", "null")],
    ] {
        let app = loopback();
        let posted = app
            .clone()
            .oneshot(
                Request::post("/requests")
                    .header("host", "127.0.0.1:7878")
                    .header("content-type", "application/json")
                    .body(Body::from(r#"{"size": 16}"#))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert!(posted.status().is_success(), "{}", posted.status());
        assert_eq!(
            reset_with(app.clone(), None, headers).await,
            StatusCode::FORBIDDEN,
            "{headers:?}"
        );
        let stats = app
            .oneshot(Request::get("/stats").body(Body::empty()).unwrap())
            .await
            .unwrap();
        let body = axum::body::to_bytes(stats.into_body(), usize::MAX)
            .await
            .unwrap();
        let stats: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(stats["requests_started"], 1, "not reset: {headers:?}");
    }
    for headers in [
        &[("host", "localhost:7878")][..],
        &[("host", "[::1]:7879"), ("origin", "http://localhost:7879")],
        &[
            ("host", "127.0.0.1:7879"),
            ("origin", "http://127.0.0.1:7879"),
        ],
    ] {
        assert_eq!(
            reset_with(loopback(), None, headers).await,
            StatusCode::OK,
            "{headers:?}"
        );
    }
    let with_token = router("127.0.0.1:5000", Some("tok"));
    assert_eq!(
        reset_with(with_token, Some("Bearer tok"), &[("host", "evil.example")]).await,
        StatusCode::OK,
        "the token path is unchanged"
    );
}

#[tokio::test]
async fn with_a_token_any_address_may_administer_but_must_present_it() {
    let r = || router("192.0.2.7:5000", Some("tok"));
    assert_eq!(reset_status(r(), None).await, StatusCode::UNAUTHORIZED);
    assert_eq!(reset_status(r(), Some("Bearer tok")).await, StatusCode::OK);
}

#[tokio::test]
async fn reading_routes_are_open_to_everyone() {
    let response = router("192.0.2.7:5000", None)
        .oneshot(Request::get("/stats").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

/// `isim-request-key`: a whole number is taken (request-start carries it); any
/// other value is refused with 400 and its reason, and nothing is started.
#[tokio::test]
async fn a_request_key_that_is_not_a_whole_number_is_refused_and_starts_nothing() {
    let post = |key: &'static str| {
        Request::post("/requests")
            .header("content-type", "application/json")
            .header(simulator_api::bodies::REQUEST_KEY_HEADER, key)
            .body(Body::from(r#"{"size": 16}"#))
            .unwrap()
    };
    let processor = DataProcessor::new(&Settings::default()).unwrap();
    let state = AppState::new(processor, Scenario::original());
    let router = app(state.clone()).layer(MockConnectInfo(
        "127.0.0.1:5000".parse::<SocketAddr>().unwrap(),
    ));
    let taken = router
        .clone()
        .oneshot(post("18446744073709551615"))
        .await
        .unwrap();
    assert_eq!(taken.status(), StatusCode::OK);
    for bad in ["-1", "twelve", "18446744073709551616", ""] {
        let refused = router.clone().oneshot(post(bad)).await.unwrap();
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{bad:?}");
        let body = axum::body::to_bytes(refused.into_body(), 4096)
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("isim-request-key"), "{bad:?}: {text}");
    }
    assert_eq!(state.stats().counts.requests_started, 1);
}
