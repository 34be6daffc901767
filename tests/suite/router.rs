//! The router in-process, for what a socket on loopback cannot show: a caller from
//! another address.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::connect_info::MockConnectInfo;
use axum::http::{Request, StatusCode};
use simulator_api::value::Secret;
use simulator_api::Settings;
use simulator_service::request_path::DataProcessor;
use simulator_service::scenario::Scenario;
use simulator_service::serving::http::app;
use simulator_service::serving::state::AppState;
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
    let mut request = Request::post("/admin/reset");
    if let Some(a) = auth {
        request = request.header("authorization", a);
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
