//! The HTTP API: routes, the request endpoint and the read-only views.
//!
//! `app(state)` returns the whole router so tests can drive it without a socket.
//! Limits (see docs/limits.md): raw bodies up to `max_body_bytes` (16 MiB by
//! default), synthetic elements up to `max_element_bytes` (1 GiB by default), both
//! refused with 413 beyond that; a body must arrive whole within
//! `body_read_timeout` (30 s by default), or the answer is 408 and the connection
//! closes. A route that reads a body takes a [`TimedBody`], read in full before
//! the handler runs, so a handler never waits on a slow client; a route that reads
//! none leaves it unread, and hyper closes that connection after the reply.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{header, HeaderMap, Method, Uri};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::admin;
use crate::config::{ServerConfig, Tunables};
use crate::connections::{ConnectionCounts, ConnectionStats};
use crate::error::{bad_json, ApiError};
use crate::metrics;
use crate::persist::Element;
use crate::processor::{DataProcessor, Reply, RequestError};
use crate::stats::Counts;

/// Everything the handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    pub processor: DataProcessor,
    pub config: ServerConfig,
    pub connections: Arc<ConnectionStats>,
}

/// The router of the whole API.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/requests", post(create_request))
        .route("/stats", get(stats))
        .route("/metrics", get(prometheus))
        .route("/healthz", get(|| async { "ok\n" }))
        .merge(admin::routes(state.clone()))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// A request body read in full within `body_read_timeout` and `max_body_bytes`, so
/// a client that sends half a body and stalls is answered 408 and let go. The
/// routes that read a body take this instead of `Bytes`.
#[derive(Debug)]
pub struct TimedBody(pub Bytes);

impl FromRequest<AppState> for TimedBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let limit = state.config.max_body_bytes;
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit) {
            return Err(too_large(limit));
        }
        let body = request.into_body();
        let read = axum::body::to_bytes(body, usize::try_from(limit).unwrap_or(usize::MAX));
        let timeout = state.config.body_read_timeout;
        match tokio::time::timeout(timeout, read).await {
            Ok(Ok(bytes)) => Ok(TimedBody(bytes)),
            Ok(Err(err)) if is_over_limit(&err) => Err(too_large(limit)),
            Ok(Err(err)) => Err(ApiError::BadRequest(format!(
                "could not read the request body: {err}"
            ))),
            Err(_) => Err(ApiError::RequestTimeout(format!(
                "the request body did not arrive within {} (body_read_timeout)",
                humantime::format_duration(timeout)
            ))),
        }
    }
}

fn too_large(limit: u64) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "request bodies may be at most {limit} bytes (max_body_bytes)"
    ))
}

fn is_over_limit(err: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// `{"size": N}`: a synthetic element of N bytes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SyntheticElement {
    size: u64,
}

async fn create_request(
    State(state): State<AppState>,
    headers: HeaderMap,
    TimedBody(body): TimedBody,
) -> Result<Json<Reply>, ApiError> {
    let element = parse_element(&headers, body, state.config.max_element_bytes)?;
    let reply = state
        .processor
        .submit(element)
        .await
        .map_err(|e: RequestError| ApiError::Unavailable(e.to_string()))?;
    Ok(Json(reply))
}

/// Turns a request body into an element, by content type.
pub fn parse_element(
    headers: &HeaderMap,
    body: Bytes,
    max_element_bytes: u64,
) -> Result<Element, ApiError> {
    let content_type = match headers.get(header::CONTENT_TYPE) {
        None => None,
        Some(value) => Some(value.to_str().map_err(|_| {
            ApiError::BadRequest("the content-type header is not valid text".into())
        })?),
    };
    let essence = content_type.map(|ct| {
        ct.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    });
    match essence.as_deref() {
        None | Some("application/octet-stream") => Ok(Element::Bytes(body)),
        Some("application/json") => {
            let synthetic: SyntheticElement = serde_json::from_slice(&body).map_err(bad_json)?;
            if synthetic.size > max_element_bytes {
                return Err(ApiError::PayloadTooLarge(format!(
                    "a synthetic element may be at most {max_element_bytes} bytes, asked for {}",
                    synthetic.size
                )));
            }
            Ok(Element::Synthetic(synthetic.size))
        }
        Some(other) => Err(ApiError::UnsupportedMediaType(format!(
            "content-type {other} is not supported: send application/octet-stream (the element) or application/json ({{\"size\": N}})"
        ))),
    }
}

/// The body of `GET /stats`.
#[derive(Debug, Serialize)]
pub struct StatsBody {
    #[serde(flatten)]
    pub counts: Counts,
    pub requests_in_flight: u64,
    pub persists_in_flight: u64,
    pub permits_available: usize,
    pub permits_total: usize,
    pub connections: ConnectionCounts,
    /// CPU the server process has used since it started (null where the OS will not say).
    pub process_cpu_ns: Option<u64>,
    pub config: EffectiveConfig,
}

/// The configuration in force now, live changes included.
#[derive(Debug, Serialize)]
pub struct EffectiveConfig {
    pub permits: usize,
    #[serde(flatten)]
    pub tunables: Tunables,
    /// The mean of `persist_latency`, for Little's law: capacity = permits / mean.
    pub persist_latency_mean_ns: u64,
    /// The mean of one network traverse; a request makes two.
    pub network_delay_mean_ns: u64,
    pub store: &'static str,
    pub durable: bool,
    pub max_body_bytes: u64,
    pub max_element_bytes: u64,
    pub max_connections: usize,
    #[serde(with = "humantime_serde")]
    pub header_read_timeout: std::time::Duration,
    #[serde(with = "humantime_serde")]
    pub body_read_timeout: std::time::Duration,
}

pub fn stats_body(state: &AppState) -> StatsBody {
    let p = &state.processor;
    let counts = p.counts();
    let tunables = p.tunables();
    StatsBody {
        counts,
        requests_in_flight: counts.requests_in_flight(),
        persists_in_flight: counts.persists_in_flight(),
        permits_available: p.gate().available(),
        permits_total: p.gate().total(),
        connections: state.connections.snapshot(),
        process_cpu_ns: crate::process::cpu_ns(),
        config: EffectiveConfig {
            permits: p.gate().total(),
            persist_latency_mean_ns: crate::events::nanos(tunables.persist_latency.mean()),
            network_delay_mean_ns: crate::events::nanos(tunables.network_delay.mean()),
            tunables,
            store: if state.config.persist_dir.is_some() {
                "files"
            } else {
                "simulated"
            },
            durable: state.config.durable,
            max_body_bytes: state.config.max_body_bytes,
            max_element_bytes: state.config.max_element_bytes,
            max_connections: state.config.max_connections,
            header_read_timeout: state.config.header_read_timeout,
            body_read_timeout: state.config.body_read_timeout,
        },
    }
}

async fn stats(State(state): State<AppState>) -> Json<StatsBody> {
    Json(stats_body(&state))
}

async fn prometheus(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let handle = metrics::handle()
        .map_err(|e| ApiError::Internal(format!("metrics recorder unavailable: {e}")))?;
    let p = &state.processor;
    let text = metrics::render(handle, &p.counts(), p.gate().available(), p.gate().total());
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text))
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound(uri.path().to_owned())
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed(format!("{method} {}", uri.path()))
}
