//! The `semaphore` admission strategy: the persistence gate, the semaphore that is
//! the bottleneck of the whole workshop.
//!
//! **Capacity.** `permits` persists may be in progress at once (8 by default, the
//! original's `PERSIST_N`). **Who holds a permit.** Not the request: the *persist*.
//! A request takes a permit, hands it to the persistence task and replies; the permit
//! comes back only when that persist ends, successfully or not. So the gate limits
//! persists in flight, and by Little's law the throughput of the whole server is at
//! most `permits / mean persist time` (8 / 60 ms ≈ 133 requests/s by default).
//! **When it is exhausted.** [`PersistGate::try_admit`] fails; [`PersistGate::admit_request`]
//! fires `request-block` and, with `when_full = wait` (the original), waits in
//! [`PersistGate::admit`], in FIFO order (tokio's semaphore is fair), for as long as
//! it takes: there is no timeout. With `when_full = shed` it refuses the request at
//! once instead (a 503, the seed's "performance over completeness"). **Probes.**
//! `request-nonblock` (a permit was free), `request-block` (none was),
//! `request-unblock` (the wait ended with a permit), `request-shed` (refused).
//!
//! The capacity can change while requests wait (`PUT /admin/config`, the seed's fix).
//! Growing adds permits at once and wakes waiters. Shrinking forgets the permits that
//! are free now and records the rest as debt, paid off by forgetting permits as their
//! persists finish, so that once everything drains `available == total` again.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::time::Instant;

use simulator_api::settings::WhenFull;

use super::Admitted;
use crate::observe::Events;

/// How long a blocked request waits for a permit, and what ends the wait early.
#[derive(Debug, Clone, Copy)]
pub struct WaitPolicy<'a> {
    /// `shed`: do not wait at all.
    pub when_full: WhenFull,
    /// Give up (request-shed) after waiting this long; zero: no limit.
    pub wait_limit: std::time::Duration,
    /// Ends the wait without a permit: shutdown's deadline, or the client leaving
    /// (`on_disconnect = cancel`).
    pub stop: &'a tokio_util::sync::CancellationToken,
}

/// Waits until `deadline`, or for ever without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The largest capacity the gate accepts: the settings' bound on `permits`, which
/// is tokio's own semaphore limit (checked when this compiles).
pub const MAX_PERMITS: usize = simulator_api::settings::MAX_PERMITS as usize;
const _: () = assert!(MAX_PERMITS == Semaphore::MAX_PERMITS);

/// A cheap, cloneable handle to the gate.
#[derive(Clone)]
pub struct PersistGate {
    inner: Arc<Inner>,
}

struct Inner {
    semaphore: Arc<Semaphore>,
    sizing: Mutex<Sizing>,
    /// Requests waiting for a permit right now (the live view's "waiting at the
    /// gate"; tokio's semaphore does not say how many wait).
    waiting: AtomicUsize,
}

/// Counts a request as waiting at the gate for as long as it lives, however the
/// wait ends (a permit, the limit, the client leaving, or the future dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn begin(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the gate should hold (`total`) and how many permits must still be
/// forgotten as they come back (`debt`) to get there after a shrink.
#[derive(Debug, Clone, Copy)]
struct Sizing {
    total: usize,
    debt: usize,
}

/// Why the gate cannot be resized or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    #[error("permits must be between 1 and {MAX_PERMITS}, got {0}")]
    OutOfRange(usize),
    #[error("the persistence gate is closed (the server is shutting down)")]
    Closed,
}

/// A permit held by one persist. Dropping it gives the permit back (or, after a
/// shrink, retires it).
#[must_use = "dropping the permit at once would let the next request through"]
pub struct GatePermit {
    permit: Option<OwnedSemaphorePermit>,
    gate: Arc<Inner>,
}

impl PersistGate {
    /// A gate with `permits` permits.
    pub fn new(permits: usize) -> Result<Self, GateError> {
        check(permits)?;
        Ok(Self {
            inner: Arc::new(Inner {
                semaphore: Arc::new(Semaphore::new(permits)),
                sizing: Mutex::new(Sizing {
                    total: permits,
                    debt: 0,
                }),
                waiting: AtomicUsize::new(0),
            }),
        })
    }

    /// Takes a permit if one is free right now (the original's `try_acquire`).
    /// `None` means the request must block.
    #[cfg(test)]
    pub fn try_admit(&self) -> Option<GatePermit> {
        self.try_admit_many(1)
    }

    /// Takes `n` permits at once if they are free right now (byte-weighted
    /// admission); `n` is capped at the capacity, so a large element can always be
    /// admitted eventually.
    pub fn try_admit_many(&self, n: usize) -> Option<GatePermit> {
        let n = self.weight(n);
        match Arc::clone(&self.inner.semaphore).try_acquire_many_owned(n) {
            Ok(permit) => Some(self.wrap(permit)),
            Err(TryAcquireError::NoPermits | TryAcquireError::Closed) => None,
        }
    }

    /// Waits, in arrival order, until a permit is free (the original's `acquire`).
    #[cfg(test)]
    pub async fn admit(&self) -> Result<GatePermit, GateError> {
        self.admit_many(1).await
    }

    /// Waits, in arrival order, until `n` permits (capped at the capacity) are
    /// free. tokio's semaphore is fair: a large request at the head of the queue
    /// collects permits as they come back, and smaller ones behind it wait too.
    pub async fn admit_many(&self, n: usize) -> Result<GatePermit, GateError> {
        let n = self.weight(n);
        let permit = Arc::clone(&self.inner.semaphore)
            .acquire_many_owned(n)
            .await
            .map_err(|_| GateError::Closed)?;
        Ok(self.wrap(permit))
    }

    /// `n` within 1 to the capacity and tokio's per-acquire limit (u32).
    fn weight(&self, n: usize) -> u32 {
        let total = self.inner.sizing().total;
        u32::try_from(n.clamp(1, total.max(1))).unwrap_or(u32::MAX)
    }

    /// The original's request path: `try_acquire`, and `acquire` when that fails,
    /// with the probes that tell which happened.
    pub async fn admit_request(
        &self,
        id: u64,
        events: &Events,
        patience: WaitPolicy<'_>,
        weight: usize,
    ) -> Admitted<GatePermit> {
        if let Some(permit) = self.try_admit_many(weight) {
            events.request_nonblock(id, self.available());
            return Admitted {
                permit: Some(permit),
                blocked: false,
                waited: std::time::Duration::ZERO,
                shed: false,
            };
        }
        events.request_block(id, self.total());
        if patience.when_full == WhenFull::Shed {
            events.request_shed(id, self.total(), std::time::Duration::ZERO);
            return Admitted {
                permit: None,
                blocked: true,
                waited: std::time::Duration::ZERO,
                shed: true,
            };
        }
        // Boxed: the wait's state (the semaphore's acquire, the stop and the limit
        // raced) is most of this future's size, which every request's future
        // carries inline and moves into its box, waiting or not (issue 62). A
        // request that waits pays one allocation; one that does not, none.
        Box::pin(self.wait_for_permit(id, events, patience, weight)).await
    }

    /// A blocked request's wait for its permit, to a permit, its stop, or the
    /// end of its patience.
    async fn wait_for_permit(
        &self,
        id: u64,
        events: &Events,
        patience: WaitPolicy<'_>,
        weight: usize,
    ) -> Admitted<GatePermit> {
        let wait_started = Instant::now();
        let waiting = Waiting::begin(&self.inner.waiting);
        let limit = match patience.wait_limit.is_zero() {
            true => None,
            false => Some(wait_started + patience.wait_limit),
        };
        // Shutdown closes the gate, which ends this wait without a permit, as
        // `stop` does (shutdown's deadline, or the client leaving).
        let (permit, out_of_patience) = tokio::select! {
            permit = self.admit_many(weight) => (permit.ok(), false),
            () = patience.stop.cancelled() => (None, false),
            () = until(limit) => (None, true),
        };
        drop(waiting);
        let waited = wait_started.elapsed();
        if permit.is_some() {
            events.request_unblock(id, waited);
        }
        if out_of_patience {
            events.request_shed(id, self.total(), waited);
        }
        Admitted {
            permit,
            blocked: true,
            waited,
            shed: out_of_patience,
        }
    }

    /// Changes the capacity. Waiters are woken at once when it grows; when it
    /// shrinks, persists already in flight finish normally.
    pub fn resize(&self, permits: usize) -> Result<(), GateError> {
        check(permits)?;
        let mut sizing = self.inner.sizing();
        if permits >= sizing.total {
            let mut grow = permits - sizing.total;
            // Cancel outstanding debt first: those permits still exist in the semaphore.
            let cancelled = grow.min(sizing.debt);
            sizing.debt -= cancelled;
            grow -= cancelled;
            self.inner.semaphore.add_permits(grow);
        } else {
            let shrink = sizing.total - permits;
            let forgotten = self.inner.semaphore.forget_permits(shrink);
            sizing.debt += shrink - forgotten;
        }
        sizing.total = permits;
        Ok(())
    }

    /// Refuses every waiter, now and later, with [`GateError::Closed`]; shutdown
    /// uses it at the drain deadline so no request waits past it. Permits held
    /// by persists still come back when those finish.
    pub fn close(&self) {
        self.inner.semaphore.close();
    }

    /// The configured capacity.
    pub fn total(&self) -> usize {
        self.inner.sizing().total
    }

    /// Requests waiting for a permit right now.
    pub fn waiting(&self) -> usize {
        self.inner.waiting.load(Ordering::Relaxed)
    }

    /// Permits free right now (0 while requests are blocked).
    pub fn available(&self) -> usize {
        // Right after a shrink the semaphore can still hold a few permits that are
        // owed; never report more free than the configured total.
        let sizing = self.inner.sizing();
        self.inner.semaphore.available_permits().min(sizing.total)
    }

    fn wrap(&self, permit: OwnedSemaphorePermit) -> GatePermit {
        GatePermit {
            permit: Some(permit),
            gate: Arc::clone(&self.inner),
        }
    }
}

impl Inner {
    fn sizing(&self) -> MutexGuard<'_, Sizing> {
        // The lock guards two integers and no code under it can panic; a poisoned
        // lock still holds consistent numbers.
        self.sizing.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for GatePermit {
    fn drop(&mut self) {
        let Some(permit) = self.permit.take() else {
            return;
        };
        let mut permit = permit;
        let mut sizing = self.gate.sizing();
        // Pay off what a shrink left owing, up to the permits this one holds.
        let owed = sizing.debt.min(permit.num_permits());
        if owed > 0 {
            sizing.debt -= owed;
            // `owed` is at most what the permit holds, so the split always succeeds.
            if let Some(part) = permit.split(owed) {
                part.forget();
            }
        }
        // Released while the lock is held so resize() never sees a half-returned permit.
        drop(permit);
    }
}

fn check(permits: usize) -> Result<(), GateError> {
    if permits == 0 || permits > MAX_PERMITS {
        return Err(GateError::OutOfRange(permits));
    }
    Ok(())
}

impl fmt::Debug for PersistGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PersistGate")
            .field("total", &self.total())
            .field("available", &self.available())
            .finish()
    }
}

impl fmt::Debug for GatePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GatePermit")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rejects_zero_and_more_than_tokio_can_hold() {
        assert_eq!(PersistGate::new(0).unwrap_err(), GateError::OutOfRange(0));
        let gate = PersistGate::new(8).unwrap();
        assert!(gate.resize(MAX_PERMITS + 1).is_err());
        assert!(gate.resize(0).is_err());
        assert_eq!(gate.total(), 8, "a rejected resize changes nothing");
        gate.resize(MAX_PERMITS).unwrap();
        assert_eq!(gate.total(), MAX_PERMITS);
    }

    #[test]
    fn blocks_exactly_when_every_permit_is_held() {
        let gate = PersistGate::new(2).unwrap();
        let a = gate.try_admit().expect("first is free");
        let _b = gate.try_admit().expect("second is free");
        assert!(gate.try_admit().is_none(), "both held: must block");
        drop(a);
        assert!(gate.try_admit().is_some(), "one returned: free again");
    }

    #[tokio::test(start_paused = true)]
    async fn growing_wakes_a_waiter() {
        let gate = PersistGate::new(1).unwrap();
        let _held = gate.try_admit().unwrap();
        let waiter = tokio::spawn({
            let gate = gate.clone();
            async move { gate.admit().await.map(|_| ()) }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        gate.resize(2).unwrap();
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("woken")
            .unwrap()
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn closing_refuses_waiters_and_still_takes_permits_back() {
        let gate = PersistGate::new(1).unwrap();
        let held = gate.try_admit().unwrap();
        let waiter = tokio::spawn({
            let gate = gate.clone();
            async move { gate.admit().await.map(|_| ()) }
        });
        tokio::task::yield_now().await;
        gate.close();
        assert_eq!(waiter.await.unwrap(), Err(GateError::Closed));
        drop(held);
        assert_eq!(gate.available(), gate.total());
    }

    #[test]
    fn shrinking_below_what_is_held_settles_once_permits_return() {
        let gate = PersistGate::new(4).unwrap();
        let held: Vec<_> = (0..3).map(|_| gate.try_admit().unwrap()).collect();
        gate.resize(1).unwrap();
        assert_eq!(gate.total(), 1);
        assert_eq!(gate.available(), 0);
        drop(held);
        assert_eq!(gate.available(), 1, "debt paid, one permit left");
        gate.resize(3).unwrap();
        assert_eq!(gate.available(), 3);
    }

    #[test]
    fn growing_while_in_debt_cancels_the_debt_first() {
        let gate = PersistGate::new(4).unwrap();
        let held: Vec<_> = (0..4).map(|_| gate.try_admit().unwrap()).collect();
        gate.resize(2).unwrap(); // debt 2
        gate.resize(5).unwrap(); // debt cancelled, 1 added
        assert_eq!(gate.available(), 1);
        drop(held);
        assert_eq!(gate.available(), 5);
        assert_eq!(gate.total(), 5);
    }
}
