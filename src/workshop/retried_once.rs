//! The check's own retries (the metric `retries_answered_once`,
//! `check/metrics/client.rs`): beside the ticket's load, a stored element
//! every [`EVERY`] under a key of its own, sent again under that key some
//! time after its reply, as a client whose reply was lost sends it. A retry
//! answered once gets its first attempt's reply: the same request id. One
//! stored again gets a new id; one refused, an error. Both count against the
//! share.
//!
//! The retries probe the ticket's whole horizon, not one point of it: the
//! ticket's clients may retry up to [`HORIZON`] after a reply, so the delays
//! step through it in [`STEPS`] even steps, the last on the horizon itself.
//! A server that forgets a reply anywhere inside the horizon stores some of
//! them twice (issue 99: one that forgot after 1.1 s passed a check whose
//! retries all came 1 s after the reply).

use std::time::Duration;

use bytes::Bytes;
use simulator_api::client;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How often a new element goes out to be retried.
pub const EVERY: Duration = Duration::from_millis(250);

/// The latest a ticket's client retries after the reply it never read: its
/// timeout (500 ms) three times over and its backoff (at most 200 ms) twice
/// are under 2 s (scenarios/remembered-replies.toml).
pub const HORIZON: Duration = Duration::from_secs(2);

/// How many even steps the retries' delays take through [`HORIZON`]: every
/// quarter of a second, with the default horizon.
pub const STEPS: u32 = 8;

/// How long after its reply the `nth` element is sent again: the steps of
/// [`HORIZON`] in turn, the shortest first.
pub fn retry_after(nth: u64) -> Duration {
    let step = (nth % u64::from(STEPS)) as u32 + 1;
    HORIZON * step / STEPS
}

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
    for (nth, key) in (first_key..).enumerate() {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = every.tick() => {}
        }
        let target = target.clone();
        let after = retry_after(nth as u64);
        pairs.spawn(async move { retried_once(&target, key, after).await });
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
async fn retried_once(target: &str, key: u64, after: Duration) -> Option<bool> {
    let element = Bytes::from(vec![(key % 251) as u8; ELEMENT_BYTES]);
    let first = client::store_element(target, element.clone(), key)
        .await
        .ok()?;
    tokio::time::sleep(after).await;
    let again = client::store_element(target, element, key).await;
    Some(again.is_ok_and(|reply| reply.id == first.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retries_step_through_the_whole_horizon_and_reach_its_end() {
        let delays: Vec<Duration> = (0..u64::from(STEPS)).map(retry_after).collect();
        assert_eq!(delays[0], Duration::from_millis(250));
        assert_eq!(*delays.last().unwrap(), HORIZON);
        assert!(delays.windows(2).all(|pair| pair[0] < pair[1]));
        // A server that forgets after 1.1 s, inside the horizon, meets
        // retries later than that in every round: the check cannot pass it.
        let late = delays
            .iter()
            .filter(|d| **d > Duration::from_millis(1100))
            .count();
        assert_eq!(late, 4);
        assert_eq!(retry_after(u64::from(STEPS)), delays[0]);
    }
}
