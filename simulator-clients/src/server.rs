//! The server's own endpoints, as the client driver uses them: `/stats` before and
//! after a run (to put the server's counts beside the client's), and the admin
//! routes the demo and sweeps use to reset counters and apply the seed's fix.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use hyper::Method;
use serde::Serialize;
use serde_json::Value;

use crate::plan::resolve;

/// The server counters a run compares with its own.
pub const COUNTERS: [&str; 7] = [
    "requests_started",
    "requests_done",
    "requests_blocked",
    "requests_nonblocked",
    "persists_started",
    "persists_done",
    "persists_failed",
];

/// The server's counts for one window (after minus before).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ServerWindow(pub BTreeMap<String, u64>);

impl ServerWindow {
    pub fn between(before: &Value, after: &Value) -> Self {
        let field = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
        Self(
            COUNTERS
                .iter()
                .map(|k| {
                    (
                        k.to_string(),
                        field(after, k).saturating_sub(field(before, k)),
                    )
                })
                .collect(),
        )
    }

    pub fn get(&self, key: &str) -> u64 {
        self.0.get(key).copied().unwrap_or(0)
    }
}

/// Why talking to the server's endpoints failed.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error(transparent)]
    Target(#[from] crate::plan::TargetError),
    #[error("{0}: {1}")]
    Http(String, String),
}

/// `GET /stats` as JSON.
pub async fn stats(target: &str) -> Result<Value, EndpointError> {
    call(target, Method::GET, "/stats", Bytes::new()).await
}

/// `POST /admin/reset`.
pub async fn reset(target: &str) -> Result<Value, EndpointError> {
    call(target, Method::POST, "/admin/reset", Bytes::new()).await
}

/// `PUT /admin/config {"permits": N}`.
pub async fn set_permits(target: &str, permits: usize) -> Result<Value, EndpointError> {
    call(
        target,
        Method::PUT,
        "/admin/config",
        Bytes::from(format!("{{\"permits\":{permits}}}")),
    )
    .await
}

async fn call(
    target: &str,
    method: Method,
    path: &str,
    body: Bytes,
) -> Result<Value, EndpointError> {
    use http_body_util::{BodyExt, Full};
    let (addr, host) = resolve(target).await?;
    let what = format!("{method} {target}{path}");
    let fail = |e: &dyn std::fmt::Display| EndpointError::Http(what.clone(), e.to_string());
    let exchange = async {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| fail(&e))?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| fail(&e))?;
        tokio::spawn(conn);
        let request = hyper::Request::builder()
            .method(method.clone())
            .uri(path)
            .header(hyper::header::HOST, host)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(body))
            .map_err(|e| fail(&e))?;
        let response = sender.send_request(request).await.map_err(|e| fail(&e))?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| fail(&e))?
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        if !status.is_success() {
            return Err(fail(&format!("{status}: {text}")));
        }
        serde_json::from_str(&text).map_err(|e| fail(&e))
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| fail(&"no answer within 10 s"))?
}
