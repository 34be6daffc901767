//! `pool`: `persist_workers` workers drain a bounded queue of elements, the shape
//! seed 000's fix took (a semaphore of 32 and `FuturesUnordered`). One worker is
//! the sequential drain that seed 000 started from: throughput 1 / persist time,
//! whatever else is configured.
//!
//! The queue is tokio's bounded mpsc channel (`persist_queue` elements): a request
//! that finds it full waits for room (backpressure) or, with `when_full = shed`,
//! is refused with 503 at once (probe `queue-refuse`): the seed 002 fix of a
//! bounded queue and a worker pool that says no. With `queue_wait_limit`, a worker
//! drops an element that waited longer than that (probe `queue-drop`, no persist):
//! the simplest form of CoDel's idea that under overload the oldest work is the
//! least worth doing. Not CoDel itself (no interval, no control law): a fixed
//! sojourn bound is what a workshop can reason about in one line, and no
//! maintained crate offers a CoDel queue to build on. With `on_disconnect =
//! cancel` a worker also drops an element whose client has gone (`queue-drop`
//! with limit 0).
//! The workers are one task running `futures`' `for_each_concurrent` over the
//! queue, at most `persist_workers` persists at once, each started the moment a
//! slot frees: persist-start fires when a worker takes an element, so persists in
//! flight never exceed the workers. **Probes.** `queue-enqueue` (id, depth) when an
//! element is queued, `queue-dequeue` (id, ns waited, depth) when a worker takes
//! it; the depth is `/stats.persists_queued`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use simulator_api::settings::{OnDisconnect, WhenFull};
use tokio::sync::mpsc::error::TrySendError;

use super::{Backend, HandOffError, Job};

#[derive(Debug, Clone)]
pub struct Pool {
    /// Each element with the moment it was queued.
    queue: mpsc::Sender<(Job, Instant)>,
    workers: usize,
    /// The events and the count of elements owed their write (queued elements
    /// are answered already).
    backend: Arc<Backend>,
    /// Shutdown: the queue takes nothing more and the workers end once it is empty.
    closing: CancellationToken,
}

impl Pool {
    /// Starts the workers. They run until every handle to this pool is gone (a live
    /// change replaced it) or [`Pool::close`], and the queue is empty.
    pub fn start(workers: usize, capacity: usize, backend: Arc<Backend>) -> Self {
        let (queue, receiver) = mpsc::channel::<(Job, Instant)>(capacity);
        let closing = CancellationToken::new();
        let jobs = futures::stream::unfold(
            (receiver, closing.clone()),
            |(mut receiver, closing)| async move {
                let job = tokio::select! {
                    biased;
                    job = receiver.recv() => job,
                    () = closing.cancelled() => {
                        receiver.close();
                        receiver.recv().await
                    }
                };
                job.map(|job| (job, (receiver, closing)))
            },
        );
        let tasks = backend.tasks.clone();
        let shared = Arc::clone(&backend);
        tasks.spawn(async move {
            jobs.for_each_concurrent(workers, |(job, queued_at)| {
                let backend = Arc::clone(&backend);
                async move {
                    let waited = queued_at.elapsed();
                    backend.events.queue_dequeue(job.id, waited);
                    let limit = job.settings.queue_wait_limit;
                    let stale = !limit.is_zero() && waited > limit;
                    let unwanted = job.settings.on_disconnect == OnDisconnect::Cancel
                        && job.client.gone();
                    if stale || unwanted {
                        let limit = if stale { limit } else { Duration::ZERO };
                        backend.events.queue_drop(job.id, waited, limit);
                        if let Some(notify) = job.notify {
                            let _ = notify.send(Err(match stale {
                                true => format!(
                                    "dropped after {waited:?} in the queue (queue_wait_limit {limit:?})"
                                ),
                                false => "dropped from the queue: its client had gone".into(),
                            }));
                        }
                        // The permit, if the job held one, goes back with it.
                        return;
                    }
                    backend.started(&job);
                    backend.persist(job).await;
                }
            })
            .await;
        });
        Self {
            queue,
            workers,
            backend: shared,
            closing,
        }
    }

    /// Queues the element; a full queue makes it wait for room, or refuses it
    /// with `when_full = shed`. The slot is reserved first, so queue-enqueue fires
    /// before any worker can take the element and the depth never reads below zero.
    pub async fn hand_off(
        &self,
        job: Job,
        abandon: &CancellationToken,
    ) -> Result<(), HandOffError> {
        let slot = match self.queue.try_reserve() {
            Ok(slot) => slot,
            Err(TrySendError::Closed(())) => return Err(HandOffError::CutShort),
            Err(TrySendError::Full(())) => match job.settings.when_full {
                WhenFull::Shed => {
                    self.backend.events.queue_refuse(job.id);
                    return Err(HandOffError::QueueFull);
                }
                // Boxed: the wait's state is most of this future's size, which every
                // request's future carries inline, waiting or not (issue 62).
                WhenFull::Wait => Box::pin(self.wait_for_room(abandon)).await?,
            },
        };
        self.backend.events.queue_enqueue(job.id);
        // Queued, the request goes on to its reply: owed from here until a
        // worker's persist-done, or its drop from the queue.
        let mut job = job;
        job.owed = self.backend.owed(&job);
        slot.send((job, Instant::now()));
        Ok(())
    }

    /// A full queue's wait for a place, to a place or shutdown.
    async fn wait_for_room(
        &self,
        abandon: &CancellationToken,
    ) -> Result<mpsc::Permit<'_, (Job, Instant)>, HandOffError> {
        tokio::select! {
            slot = self.queue.reserve() => slot.map_err(|_| HandOffError::CutShort),
            () = abandon.cancelled() => Err(HandOffError::CutShort),
        }
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    pub fn capacity(&self) -> usize {
        self.queue.max_capacity()
    }

    pub fn close(&self) {
        self.closing.cancel();
    }
}
