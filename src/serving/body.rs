//! Request bodies: read whole within a deadline and a size limit, and turned into
//! the element a request carries.
//!
//! A route that reads a body takes a [`TimedBody`], read in full before the
//! handler runs, so a handler never waits on a slow client: a body that is late
//! gets 408 (`body_read_timeout`), one over `max_body_bytes` 413. A route that
//! reads none leaves it unread, and hyper closes that connection after the reply.
//! An extractor, not a middleware: buffering every request in a middleware cost
//! 20 % of peak throughput (`scripts/bench/server-builds.py`).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap};
use serde::Deserialize;

use super::error::{bad_json, ApiError};
use super::state::AppState;
use crate::request_path::Element;

/// A request body read in full within `body_read_timeout` and `max_body_bytes`, so
/// a client that sends half a body and stalls is answered 408 and let go. The
/// routes that read a body take this instead of `Bytes`.
#[derive(Debug)]
pub struct TimedBody(pub Bytes);

impl FromRequest<AppState> for TimedBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let settings = state.processor.settings();
        let limit = settings.max_body_bytes;
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit) {
            return Err(too_large(limit));
        }
        let body = request.into_body();
        let read = axum::body::to_bytes(body, usize::try_from(limit).unwrap_or(usize::MAX));
        let timeout = settings.body_read_timeout;
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

/// `{"size": N}`: a synthetic element of N bytes; with `"key": K`, a read of
/// the element of key K instead (`request_path/cache/`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SyntheticElement {
    size: u64,
    #[serde(default)]
    key: Option<u64>,
}

/// Turns a request body into an element, by content type, and the key it
/// reads if it is a read (`{"size": N, "key": K}`).
pub fn parse_element(
    headers: &HeaderMap,
    body: Bytes,
    max_element_bytes: u64,
) -> Result<(Element, Option<u64>), ApiError> {
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
        None | Some("application/octet-stream") => Ok((Element::Bytes(body), None)),
        Some("application/json") => {
            // serde's derive also takes a struct from an array (`[1, 2]` as
            // size 1, key 2): only an object names its fields.
            if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
                return Err(ApiError::BadRequest(
                    "invalid JSON body: write an object, {\"size\": N} or {\"size\": N, \"key\": K}".into(),
                ));
            }
            let synthetic: SyntheticElement = serde_json::from_slice(&body).map_err(bad_json)?;
            if synthetic.size > max_element_bytes {
                return Err(ApiError::PayloadTooLarge(format!(
                    "a synthetic element may be at most {max_element_bytes} bytes, asked for {}",
                    synthetic.size
                )));
            }
            Ok((Element::Synthetic(synthetic.size), synthetic.key))
        }
        Some(other) => Err(ApiError::UnsupportedMediaType(format!(
            "content-type {other} is not supported: send application/octet-stream (the element) or application/json ({{\"size\": N}})"
        ))),
    }
}
