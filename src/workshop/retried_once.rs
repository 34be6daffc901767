//! The check's own retries (the metric `retries_answered_once`,
//! `check/metrics/client.rs`): beside the ticket's load, a stored element
//! every [`EVERY`] under a key of its own, sent again under that key
//! [`RETRY_AFTER`] after its reply, as a client whose reply was lost sends it. A retry answered once gets its first attempt's
//! reply: the same request id. One stored again gets a new id; one refused, an
//! error. Both count against the share.

use std::time::Duration;

use bytes::Bytes;
use simulator_api::client;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How often a new element goes out to be retried.
pub const EVERY: Duration = Duration::from_millis(250);

/// How long after its reply an element is sent again: inside the ticket's
/// clients' own horizon (their timeout and backoff), so a server that
/// remembers a reply for as long as a client may retry answers it once.
pub const RETRY_AFTER: Duration = Duration::from_millis(1000);

/// The bytes of the check's elements.
const ELEMENT_BYTES: usize = 1024;

/// Retries sent, and those answered with their first attempt's reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retried {
    pub sent: u64,
    pub answered_once: u64,
}

impl Retried {
    /// The share answered once; NaN (fails) without a retry.
    pub fn share(self) -> f64 {
        match self.sent {
            0 => f64::NAN,
            sent => self.answered_once as f64 / sent as f64,
        }
    }
}

/// Sends the check's retries against `target` until `stop`; what they got.
pub async fn run(target: String, stop: CancellationToken) -> Retried {
    let mut pairs = JoinSet::new();
    let mut every = tokio::time::interval(EVERY);
    // A key the ticket's clients do not use: theirs start at a random value
    // below 2^62 and count up.
    let first_key = (rand::random::<u64>() >> 2) | (1 << 62);
    for key in first_key.. {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = every.tick() => {}
        }
        let target = target.clone();
        pairs.spawn(async move { retried_once(&target, key).await });
    }
    let mut retried = Retried::default();
    while let Some(pair) = pairs.join_next().await {
        if let Ok(Some(once)) = pair {
            retried.sent += 1;
            retried.answered_once += u64::from(once);
        }
    }
    retried
}

/// One element and its retry: whether the retry got the first reply; `None`
/// when the first attempt itself failed (no reply to repeat).
async fn retried_once(target: &str, key: u64) -> Option<bool> {
    let element = Bytes::from(vec![(key % 251) as u8; ELEMENT_BYTES]);
    let first = client::store_element(target, element.clone(), key)
        .await
        .ok()?;
    tokio::time::sleep(RETRY_AFTER).await;
    let again = client::store_element(target, element, key).await;
    Some(again.is_ok_and(|reply| reply.id == first.id))
}
