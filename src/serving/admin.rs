//! Admin routes: change the configuration live and reset the counters.
//!
//! `PUT /admin/config` is how a workshop applies the seed's fix (more permits) while
//! scripts are attached. Access: without a token only loopback clients may call
//! these routes (403 otherwise); with `--admin-token` (or `ISIM_ADMIN_TOKEN`) every
//! caller must send `Authorization: Bearer <token>` (401 otherwise).

use std::net::SocketAddr;

use axum::extract::rejection::ExtensionRejection;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{post, put};
use axum::{Json, Router};

use simulator_api::{Settings, SettingsUpdate, Stats};

use super::body::TimedBody;
use super::error::{bad_json, ApiError};
use super::state::AppState;

pub fn routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/admin/config", put(update_config))
        .route("/admin/reset", post(reset))
        .route_layer(middleware::from_fn_with_state(state, guard))
}

async fn guard(
    State(state): State<AppState>,
    peer: Result<ConnectInfo<SocketAddr>, ExtensionRejection>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    match state.processor.settings().admin_token() {
        Some(token) => {
            let presented = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            match presented {
                Some(p) if constant_time_eq(p.as_bytes(), token.as_bytes()) => {}
                _ => {
                    return Err(ApiError::Unauthorized(
                        "admin routes need Authorization: Bearer <admin token>",
                    ))
                }
            }
        }
        None => {
            // A router served without connect info cannot tell who calls: refuse.
            if !peer.is_ok_and(|ConnectInfo(p)| p.ip().is_loopback()) {
                return Err(ApiError::Forbidden(
                    "admin routes answer loopback clients only; configure an admin token to allow others",
                ));
            }
        }
    }
    Ok(next.run(request).await)
}

/// Compares without an early exit, so the time taken does not reveal how much of a
/// guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn update_config(
    State(state): State<AppState>,
    headers: HeaderMap,
    TimedBody(body): TimedBody,
) -> Result<Json<Settings>, ApiError> {
    require_json(&headers)?;
    let update: SettingsUpdate = serde_json::from_slice(&body).map_err(bad_json)?;
    let now = state
        .processor
        .update(&update)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    // The values in force, never the request body as sent.
    let changed: Vec<String> = now
        .texts()
        .into_iter()
        .filter(|(key, _)| update.keys().contains(key))
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    tracing::info!(changed = %changed.join(" "), "configuration changed");
    Ok(Json((*now).clone()))
}

/// A config body is JSON; a missing content type is taken as JSON too, so a bare
/// `curl -X PUT --data-binary` works, but a form or text body is refused.
fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = value
        .to_str()
        .ok()
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    match essence.as_deref() {
        Some("application/json") => Ok(()),
        _ => Err(ApiError::UnsupportedMediaType(format!(
            "admin bodies are JSON: send content-type application/json (curl --json '{{...}}'), not {:?}",
            String::from_utf8_lossy(value.as_bytes())
        ))),
    }
}

async fn reset(State(state): State<AppState>) -> Json<Stats> {
    state.processor.events().stats().reset();
    tracing::info!("counters reset");
    Json(state.stats())
}
