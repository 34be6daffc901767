//! The HTTP API: routes, the request endpoint and the read-only views.
//!
//! `app(state)` returns the whole router so tests can drive it without a socket.
//! Limits (see docs/limits.md): bodies are read by `body.rs` within
//! `max_body_bytes` and `body_read_timeout`; synthetic elements up to
//! `max_element_bytes`. The admin routes are in `admin.rs`. The data port serves
//! [`app`]; the operator's own listener serves [`operator_app`], the same routes
//! without `POST /requests`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, Method, Uri};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use simulator_api::{Reply, ScenarioInfo, Stats};

use super::admin;
use super::answers::{self, AnswersQuery};
use super::body::ElementBody;
use super::error::ApiError;
use super::live;
use super::state::AppState;
use crate::observe::metrics;
use crate::request_path::RequestError;
use crate::scenario;

/// The router of the whole API, as the data port serves it: the requests and
/// every operator route, so a single port is enough.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/requests", post(create_request))
        .merge(operator_routes(state.clone()))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// The operator's listener: everything but the requests, so a flood of the data
/// port cannot lock the operator out (`admin_listen`).
pub fn operator_app(state: AppState) -> Router {
    operator_routes(state.clone())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

fn operator_routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/stats", get(stats))
        .route("/metrics", get(prometheus))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/scenarios", get(scenarios))
        .merge(live::stream::routes())
        .merge(admin::routes(state.clone()))
        .route_layer(axum::middleware::from_fn_with_state(
            state,
            super::trail::routes::note_looks,
        ))
}

async fn create_request(
    State(state): State<AppState>,
    ElementBody {
        element,
        key,
        client_key,
    }: ElementBody,
) -> Result<Json<Reply>, ApiError> {
    let reply = match key {
        Some(key) => state.processor.submit_read(key, client_key).await,
        None => state.processor.submit(element, client_key).await,
    }
    .map_err(|e: RequestError| match e {
        RequestError::KeyReused(_) => ApiError::Unprocessable(e.to_string()),
        e => ApiError::Unavailable(e.to_string()),
    })?;
    Ok(Json(reply))
}

async fn stats(
    State(state): State<AppState>,
    ask: Result<Query<AnswersQuery>, QueryRejection>,
) -> Result<Json<Stats>, ApiError> {
    let stats = state.stats();
    Ok(Json(if state.answers.for_request(ask)? {
        stats
    } else {
        answers::hide_in_stats(stats, &state.scenario())
    }))
}

async fn scenarios(
    State(state): State<AppState>,
    ask: Result<Query<AnswersQuery>, QueryRejection>,
) -> Result<Json<Vec<ScenarioInfo>>, ApiError> {
    let show = state.answers.for_request(ask)?;
    let all = scenario::bundled().map_err(|e| ApiError::Internal(e.to_string()))?;
    let tell = if show {
        scenario::Scenario::info
    } else {
        answers::hide_in_scenario
    };
    Ok(Json(all.iter().map(tell).collect()))
}

async fn prometheus(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let handle = metrics::handle()
        .map_err(|e| ApiError::Internal(format!("metrics recorder unavailable: {e}")))?;
    let text = metrics::render(handle, &state.stats());
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text))
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound(uri.path().to_owned())
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed(format!("{method} {}", uri.path()))
}
