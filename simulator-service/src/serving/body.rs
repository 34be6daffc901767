//! Request bodies: read whole within a deadline and a size limit, and turned into
//! the element a request carries.
//!
//! A route that reads a body takes a [`TimedBody`] (`POST /requests` an
//! [`ElementBody`], the element made of it), read in full before the
//! handler runs, so a handler never waits on a slow client: a body that is late
//! gets 408 (`body_read_timeout`), one over `max_body_bytes` 413. A route that
//! reads none leaves it unread, and hyper closes that connection after the reply.
//! An extractor, not a middleware: buffering every request in a middleware cost
//! 20 % of peak throughput (`tools/bench/server-builds.py`).

use axum::body::HttpBody as _;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderValue};
use axum::BoxError;
use bytes::BytesMut;
use http_body_util::{BodyExt, Limited};
use serde::Deserialize;

use super::error::{bad_json, ApiError};
use super::state::AppState;
use crate::request_path::{delay, Element};
use simulator_api::bodies::REQUEST_KEY_HEADER;
use simulator_api::Settings;

/// A request body read in full within `body_read_timeout` and `max_body_bytes`, so
/// a client that sends half a body and stalls is answered 408 and let go. The
/// routes that read a body take this instead of `Bytes`.
#[derive(Debug)]
pub struct TimedBody(pub Bytes);

impl FromRequest<AppState> for TimedBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let settings = state.processor.settings();
        Ok(TimedBody(read_timed(request, &settings).await?))
    }
}

/// `POST /requests`' body: the element it carries and the key it reads, if it
/// is a read, read as [`TimedBody`] and made by [`parse_element`].
#[derive(Debug)]
pub struct ElementBody {
    pub element: Element,
    pub key: Option<u64>,
    /// The client's key for the request ([`REQUEST_KEY_HEADER`]; 0: none).
    pub client_key: u64,
}

impl FromRequest<AppState> for ElementBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let settings = state.processor.settings();
        // Only its content type is needed of the head: taken alone, not the
        // whole header map copied as a `HeaderMap` extractor would (issue 62).
        let content_type = request.headers().get(header::CONTENT_TYPE).cloned();
        let client_key = client_key(request.headers().get(REQUEST_KEY_HEADER))?;
        let body = read_timed(request, &settings).await?;
        let (element, key) = parse_element(content_type.as_ref(), body, settings.element_limit())?;
        Ok(ElementBody {
            element,
            key,
            client_key,
        })
    }
}

/// The client's key for the request: 0 without the header, a refusal for one
/// that is not a whole number.
fn client_key(value: Option<&HeaderValue>) -> Result<u64, ApiError> {
    let Some(value) = value else { return Ok(0) };
    value
        .to_str()
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .ok_or_else(|| {
            ApiError::BadRequest(format!(
                "{REQUEST_KEY_HEADER}: {value:?} is not a whole number from 0 to {}",
                u64::MAX
            ))
        })
}

/// The body in full within `body_read_timeout` and `max_body_bytes`.
async fn read_timed(request: Request, settings: &Settings) -> Result<Bytes, ApiError> {
    let limit = settings.max_body_bytes;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large(limit));
    }
    // Most bodies are whole at their first look (they came in the head's
    // packets): `within` arms no timer for those.
    let timeout = settings.body_read_timeout;
    let outcome = delay::within(timeout, read_whole(request.into_body(), limit))
        .await
        .map_err(|_| {
            ApiError::RequestTimeout(format!(
                "the request body did not arrive within {} (body_read_timeout)",
                humantime::format_duration(timeout)
            ))
        })?;
    outcome.map_err(|err| {
        if is_over_limit(&*err) {
            too_large(limit)
        } else {
            ApiError::BadRequest(format!("could not read the request body: {err}"))
        }
    })
}

/// The whole body, at most `limit` bytes. Ends at the last byte its
/// content-length declares, without waiting for hyper to say the stream has
/// ended: `axum::body::to_bytes` waits for that, one poll more, so a body
/// already in hand would not be done at its first poll and would arm the timer.
async fn read_whole(body: Body, limit: u64) -> Result<Bytes, BoxError> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut body = Limited::new(body, limit);
    let mut whole = BytesMut::new();
    let mut only: Option<Bytes> = None;
    while !body.is_end_stream() {
        let Some(frame) = body.frame().await.transpose()? else {
            break;
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers: not part of the body
        };
        // One chunk (the usual case) is kept as it came, without a copy.
        match only.take() {
            None if whole.is_empty() => only = Some(data),
            None => whole.extend_from_slice(&data),
            Some(first) => {
                whole.extend_from_slice(&first);
                whole.extend_from_slice(&data);
            }
        }
    }
    Ok(only.unwrap_or_else(|| whole.freeze()))
}

fn too_large(limit: u64) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "request bodies may be at most {limit} bytes (max_body_bytes)"
    ))
}

fn is_over_limit(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(err);
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
    content_type: Option<&HeaderValue>,
    body: Bytes,
    (max_element_bytes, limited_by): (u64, &str),
) -> Result<(Element, Option<u64>), ApiError> {
    let content_type = match content_type {
        None => None,
        Some(value) => Some(value.to_str().map_err(|_| {
            ApiError::BadRequest("the content-type header is not valid text".into())
        })?),
    };
    // The media type without its parameters; compared ignoring case, without
    // a lowercased copy a request.
    let essence = content_type.map(|ct| ct.split(';').next().unwrap_or("").trim());
    let is = |name: &str| essence.is_some_and(|e| e.eq_ignore_ascii_case(name));
    match essence {
        None => Ok((Element::Bytes(body), None)),
        Some(_) if is("application/octet-stream") => Ok((Element::Bytes(body), None)),
        Some(_) if is("application/json") => {
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
                    "a synthetic element may be at most {max_element_bytes} bytes ({limited_by}), asked for {}",
                    synthetic.size
                )));
            }
            Ok((Element::Synthetic(synthetic.size), synthetic.key))
        }
        Some(other) => Err(ApiError::UnsupportedMediaType(format!(
            "content-type {} is not supported: send application/octet-stream (the element) or application/json ({{\"size\": N}})",
            other.to_ascii_lowercase()
        ))),
    }
}
