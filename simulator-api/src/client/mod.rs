//! The server's API as a typed client (feature `client`): `/stats`, the admin
//! routes, the probe tap, and any other exchange with a server of this project
//! (the workshop's room too). Both sides of the API use it: the load driver
//! reads `/stats` around a run and applies fixes; the workshop's commands
//! (`trace`, `workshop check`, the demo, `profile`, `doctor`, a room's seat)
//! speak to a running server. Bodies are the typed ones of this crate: a field
//! the server does not send is an error, never a silent 0. Each call is one
//! HTTP/1 request on a connection of its own; hyper's client, since a request a
//! second needs no pool.

mod target;

pub use target::{resolve, TargetError};

use std::net::SocketAddr;
use std::time::Duration;

use crate::{Settings, SettingsUpdate, Stats};
use bytes::Bytes;
use hyper::Method;
use serde::de::DeserializeOwned;

/// Why talking to the server's endpoints failed.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("{0}: {1}")]
    Http(String, String),
    /// The server answered with a status other than 2xx: its words, and the
    /// status for a caller that acts on it (a room's 401 sends a seat to join again).
    #[error("{what}: {status}: {message}")]
    Refused {
        what: String,
        status: hyper::StatusCode,
        message: String,
    },
}

impl EndpointError {
    /// The status the server refused with, if it answered.
    pub fn status(&self) -> Option<hyper::StatusCode> {
        match self {
            EndpointError::Refused { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// The command this process is, as the server's trail notes its requests
/// (`trace permit-wait`, `clients`, `workshop check`); none until named.
static CALLER: std::sync::RwLock<Option<String>> = std::sync::RwLock::new(None);

/// Names this process to the servers it calls ([`crate::trail::CALLER_HEADER`]):
/// the trail tells the attendee's looks from the load and the judge. Only
/// printable ASCII is sent.
pub fn name_caller(name: &str) {
    let clean: String = name
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(crate::trail::TRAIL_TEXT_MAX)
        .collect();
    *CALLER.write().unwrap_or_else(|p| p.into_inner()) = Some(clean);
}

fn caller() -> Option<String> {
    CALLER.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// `GET /stats`.
pub async fn stats(target: &str) -> Result<Stats, EndpointError> {
    call(target, Method::GET, "/stats", Bytes::new()).await
}

/// `POST /admin/reset`.
pub async fn reset(target: &str) -> Result<Stats, EndpointError> {
    call(target, Method::POST, "/admin/reset", Bytes::new()).await
}

/// `PUT /admin/config`: applies `update` live; returns the settings now in force.
pub async fn configure(target: &str, update: &SettingsUpdate) -> Result<Settings, EndpointError> {
    let body = serde_json::to_vec(update)
        .map_err(|e| EndpointError::Http(format!("PUT {target}/admin/config"), e.to_string()))?;
    call(target, Method::PUT, "/admin/config", Bytes::from(body)).await
}

/// `PUT /admin/config {"scenario": NAME}`: switches the server to a bundled
/// scenario live; returns the settings now in force.
pub async fn switch_scenario(target: &str, name: &str) -> Result<Settings, EndpointError> {
    let body = serde_json::json!({ "scenario": name }).to_string();
    call(target, Method::PUT, "/admin/config", Bytes::from(body)).await
}

/// `PUT /admin/check`: tells the server's live view how a `workshop check` of it
/// goes; returns what the server took. `token`: the server's admin token, when
/// it has one.
pub async fn report_check(
    target: &str,
    progress: &crate::live::CheckProgress,
    token: Option<&str>,
) -> Result<crate::live::CheckProgress, EndpointError> {
    let body = serde_json::to_vec(progress)
        .map_err(|e| EndpointError::Http(format!("PUT {target}/admin/check"), e.to_string()))?;
    let text = exchange(
        target,
        Method::PUT,
        "/admin/check",
        Bytes::from(body),
        token,
    )
    .await?;
    parse(target, &Method::PUT, "/admin/check", &text)
}

/// `PUT /admin/stage`: tells the server a load's stage begins, for its
/// charts and its trail. `token` as for [`report_check`].
pub async fn report_stage(
    target: &str,
    stage: &crate::live::LoadStage,
    token: Option<&str>,
) -> Result<crate::live::LoadStage, EndpointError> {
    let body = serde_json::to_vec(stage)
        .map_err(|e| EndpointError::Http(format!("PUT {target}/admin/stage"), e.to_string()))?;
    let text = exchange(
        target,
        Method::PUT,
        "/admin/stage",
        Bytes::from(body),
        token,
    )
    .await?;
    parse(target, &Method::PUT, "/admin/stage", &text)
}

/// `PUT /admin/incident`: begins the scenario's incident now; returns it as in
/// force. Refused (409) while one is, (400) where the scenario has none.
/// `token` as for [`report_check`].
pub async fn begin_incident(
    target: &str,
    token: Option<&str>,
) -> Result<crate::IncidentStatus, EndpointError> {
    let text = exchange(target, Method::PUT, "/admin/incident", Bytes::new(), token).await?;
    parse(target, &Method::PUT, "/admin/incident", &text)
}

/// `GET /admin/tap?events=...`: subscribes to the server's probe tap and returns
/// the stream's body once the server has answered, which is when the
/// subscription is in force (docs/api.md has its lines). `token`: the server's
/// admin token, when it has one.
pub async fn tap(
    target: &str,
    events: &[&str],
    token: Option<&str>,
) -> Result<hyper::body::Incoming, EndpointError> {
    tap_gathered(target, events, None, token).await
}

/// [`tap`], its batches gathered for up to `gather_ms` (the server's default
/// when `None`): fewer writes and wake-ups for a reader that wants no event soon.
pub async fn tap_gathered(
    target: &str,
    events: &[&str],
    gather_ms: Option<u64>,
    token: Option<&str>,
) -> Result<hyper::body::Incoming, EndpointError> {
    let mut path = format!("/admin/tap?events={}", events.join(","));
    if let Some(ms) = gather_ms {
        path.push_str(&format!("&gather_ms={ms}"));
    }
    let what = format!("GET {target}{path}");
    let fail = |e: &dyn std::fmt::Display| EndpointError::Http(what.clone(), e.to_string());
    let subscribe = async {
        let response = send(
            target,
            Method::GET,
            &path,
            Bytes::new(),
            Head::json(token),
            &fail,
        )
        .await?;
        let status = response.status();
        if status.is_success() {
            return Ok(response.into_body());
        }
        let text = text_of(response.into_body(), &fail).await?;
        Err(fail(&format!("{status}: {text}")))
    };
    tokio::time::timeout(Duration::from_secs(10), subscribe)
        .await
        .map_err(|_| fail(&"no answer within 10 s"))?
}

/// `DELETE /admin/tap/{id}`: ends tap subscription `id` after every event sent
/// so far; its stream then ends.
pub async fn end_tap(target: &str, id: u64, token: Option<&str>) -> Result<(), EndpointError> {
    let path = format!("/admin/tap/{id}");
    exchange(target, Method::DELETE, &path, Bytes::new(), token)
        .await
        .map(drop)
}

async fn call<T: DeserializeOwned>(
    target: &str,
    method: Method,
    path: &str,
    body: Bytes,
) -> Result<T, EndpointError> {
    let text = exchange(target, method.clone(), path, body, None).await?;
    parse(target, &method, path, &text)
}

/// An answer's JSON as the typed body `simulator-api` declares.
fn parse<T: DeserializeOwned>(
    target: &str,
    method: &Method,
    path: &str,
    text: &str,
) -> Result<T, EndpointError> {
    serde_json::from_str(text).map_err(|e| {
        EndpointError::Http(
            format!("{method} {target}{path}"),
            format!("{e}; is the target a system-simulator of the same version?"),
        )
    })
}

/// One request and its whole answer as text; a status other than 2xx is an
/// error that carries the server's words. `token` goes as `Authorization:
/// Bearer`. The workshop's room (`system-simulator room`) is spoken to with it too.
pub async fn exchange(
    target: &str,
    method: Method,
    path: &str,
    body: Bytes,
    token: Option<&str>,
) -> Result<String, EndpointError> {
    exchange_within(target, method, path, body, token, Duration::from_secs(10)).await
}

/// [`exchange`], for a route that takes a while to answer (a profile's
/// seconds): the whole exchange gets `within`.
pub async fn exchange_within(
    target: &str,
    method: Method,
    path: &str,
    body: Bytes,
    token: Option<&str>,
    within: Duration,
) -> Result<String, EndpointError> {
    let what = format!("{method} {target}{path}");
    let fail = |e: &dyn std::fmt::Display| EndpointError::Http(what.clone(), e.to_string());
    let exchange = async {
        let head = Head::json(token);
        let response = send(target, method.clone(), path, body, head, &fail).await?;
        answered(response, &what, &fail).await
    };
    tokio::time::timeout(within, exchange).await.map_err(|_| {
        fail(&format!(
            "no answer within {}",
            humantime::format_duration(within)
        ))
    })?
}

/// What a request's head carries besides its method, path and host.
struct Head<'a> {
    content_type: &'static str,
    token: Option<&'a str>,
    request_key: Option<u64>,
}

impl<'a> Head<'a> {
    /// A JSON body (empty or not), and the admin token where there is one.
    fn json(token: Option<&'a str>) -> Self {
        Head {
            content_type: "application/json",
            token,
            request_key: None,
        }
    }
}

/// One request on a connection of its own, answered with its head and its body
/// still to read; `fail` words what went wrong.
async fn send(
    target: &str,
    method: Method,
    path: &str,
    body: Bytes,
    head: Head<'_>,
    fail: &impl Fn(&dyn std::fmt::Display) -> EndpointError,
) -> Result<hyper::Response<hyper::body::Incoming>, EndpointError> {
    let (addr, host) = resolve(target).await?;
    let mut sender = connect(addr).await.map_err(|e| fail(&e))?;
    let mut request = request_to(method, path, host, head.token)
        .header(hyper::header::CONTENT_TYPE, head.content_type);
    if let Some(key) = head.request_key {
        request = request.header(crate::REQUEST_KEY_HEADER, key);
    }
    let request = request
        .body(http_body_util::Full::new(body))
        .map_err(|e| fail(&e))?;
    sender.send_request(request).await.map_err(|e| fail(&e))
}

/// A whole answer as text; a status other than 2xx is the server's refusal,
/// with its words.
async fn answered(
    response: hyper::Response<hyper::body::Incoming>,
    what: &str,
    fail: &impl Fn(&dyn std::fmt::Display) -> EndpointError,
) -> Result<String, EndpointError> {
    let status = response.status();
    let text = text_of(response.into_body(), fail).await?;
    match status.is_success() {
        true => Ok(text),
        false => Err(EndpointError::Refused {
            what: what.to_owned(),
            status,
            message: text,
        }),
    }
}

/// `POST /requests` with `element`'s bytes under the client's key
/// `request_key` (`isim-request-key`), as a client that may retry sends it:
/// the reply, or the server's refusal.
pub async fn store_element(
    target: &str,
    element: Bytes,
    request_key: u64,
) -> Result<crate::Reply, EndpointError> {
    let what = format!("POST {target}/requests");
    let fail = |e: &dyn std::fmt::Display| EndpointError::Http(what.clone(), e.to_string());
    let exchange = async {
        let head = Head {
            content_type: "application/octet-stream",
            token: None,
            request_key: Some(request_key),
        };
        let response = send(target, Method::POST, "/requests", element, head, &fail).await?;
        let text = answered(response, &what, &fail).await?;
        parse(target, &Method::POST, "/requests", &text)
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| fail(&"no answer within 10s"))?
}

/// A whole answer's body, as text (lossy where it is not UTF-8).
async fn text_of(
    body: hyper::body::Incoming,
    fail: &impl Fn(&dyn std::fmt::Display) -> EndpointError,
) -> Result<String, EndpointError> {
    use http_body_util::BodyExt;
    let bytes = body.collect().await.map_err(|e| fail(&e))?.to_bytes();
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// An HTTP/1 connection to `addr`, its driver on a task of its own.
async fn connect<B>(addr: SocketAddr) -> Result<hyper::client::conn::http1::SendRequest<B>, String>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let (sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    Ok(sender)
}

/// A request's head: method, path, `Host`, and the admin token when there is one.
fn request_to(
    method: Method,
    path: &str,
    host: hyper::header::HeaderValue,
    token: Option<&str>,
) -> hyper::http::request::Builder {
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, host);
    if let Some(caller) = caller() {
        request = request.header(crate::trail::CALLER_HEADER, caller);
    }
    match token {
        Some(token) => request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}")),
        None => request,
    }
}
