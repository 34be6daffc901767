//! What one attempt came to: the server's [`Reply`](simulator_api::Reply), or a
//! [`Failure`] of the kind a load generator reports. The connections make them
//! (`load/connection.rs`); the tally and the live metrics count them.

use serde::Serialize;

/// How a request failed, by the class a load generator reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// The connection was refused, reset or could not be made.
    #[error("connect")]
    Connect,
    /// The attempt's timeout passed while its connection was still being made
    /// (its SYN unanswered: a full accept queue drops them, and the client
    /// retransmits after 1 s, 3 s, 7 s, ...).
    #[error("connect timeout")]
    ConnectTimeout,
    /// The driver itself had no descriptor left for the connection (EMFILE,
    /// ENFILE): its own limit, not the server's doing; the report says so and
    /// the run exits non-zero.
    #[error("connect: out of file descriptors")]
    FileLimit,
    #[error("timeout")]
    Timeout,
    #[error("HTTP {0}")]
    Status(u16),
    #[error("connection lost or protocol error")]
    Io,
}
