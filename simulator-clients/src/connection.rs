//! One client's keep-alive HTTP/1.1 connection, as a distinct client machine would
//! hold it: opened on first use, reused for every request, reopened after an error.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;

/// How a request failed, by the class a load generator reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    #[error("connect")]
    Connect,
    #[error("timeout")]
    Timeout,
    #[error("HTTP {0}")]
    Status(u16),
    #[error("connection lost or protocol error")]
    Io,
}

/// The server's answer to `POST /requests`.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Reply {
    pub id: u64,
    pub blocked: bool,
}

/// A client's connection.
#[derive(Debug)]
pub struct Connection {
    addr: SocketAddr,
    host: String,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Connection {
    pub fn new(addr: SocketAddr, host: String) -> Self {
        Self {
            addr,
            host,
            sender: None,
        }
    }

    /// Sends one element of `size` bytes and waits for the reply, at most `timeout`.
    /// A timeout drops the connection: its reply may still arrive and must not be
    /// mistaken for the next request's.
    pub async fn send_element(&mut self, size: u64, timeout: Duration) -> Result<Reply, Failure> {
        match tokio::time::timeout(timeout, self.exchange(size)).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(failure)) => {
                self.sender = None;
                Err(failure)
            }
            Err(_) => {
                self.sender = None;
                Err(Failure::Timeout)
            }
        }
    }

    async fn exchange(&mut self, size: u64) -> Result<Reply, Failure> {
        let request = Request::builder()
            .method(Method::POST)
            .uri("/requests")
            .header(hyper::header::HOST, &self.host)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(format!("{{\"size\":{size}}}"))))
            .map_err(|_| Failure::Io)?;
        let sender = self.connected().await?;
        sender.ready().await.map_err(|_| Failure::Io)?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|_| Failure::Io)?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|_| Failure::Io)?
            .to_bytes();
        if !status.is_success() {
            return Err(Failure::Status(status.as_u16()));
        }
        serde_json::from_slice(&body).map_err(|_| Failure::Io)
    }

    async fn connected(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, Failure> {
        if self.sender.as_ref().is_some_and(|s| s.is_closed()) {
            self.sender = None;
        }
        if self.sender.is_none() {
            let stream = TcpStream::connect(self.addr)
                .await
                .map_err(|_| Failure::Connect)?;
            let _ = stream.set_nodelay(true);
            let (sender, connection) = http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|_| Failure::Connect)?;
            // The connection task ends by itself when the sender is dropped or the peer closes.
            tokio::spawn(connection);
            self.sender = Some(sender);
        }
        self.sender.as_mut().ok_or(Failure::Connect)
    }
}
