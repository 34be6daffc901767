//! What one attempt came to: the server's [`Reply`](simulator_api::Reply), or a
//! [`Failure`] of the kind a load generator reports. The connections make them
//! (`load/connection.rs`); the tally and the live metrics count them.

use serde::Serialize;

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
