//! `pool`: `persist_workers` workers drain a bounded queue of elements, the shape
//! seed 000's fix took (a semaphore of 32 and `FuturesUnordered`). One worker is
//! the sequential drain that seed 000 started from: throughput 1 / persist time,
//! whatever else is configured.
//!
//! The queue is tokio's bounded mpsc channel (`persist_queue` elements): a request
//! that finds it full waits for room, which is backpressure rather than a refusal.
//! The workers are one task running `futures`' `for_each_concurrent` over the
//! queue, at most `persist_workers` persists at once, each started the moment a
//! slot frees: persist-start fires when a worker takes an element, so persists in
//! flight never exceed the workers, and the queue depth is `/stats.persists_queued`.

use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Backend, Job};
use crate::request_path::network::CutShort;

#[derive(Debug, Clone)]
pub struct Pool {
    queue: mpsc::Sender<Job>,
    workers: usize,
    /// Shutdown: the queue takes nothing more and the workers end once it is empty.
    closing: CancellationToken,
}

impl Pool {
    /// Starts the workers. They run until every handle to this pool is gone (a live
    /// change replaced it) or [`Pool::close`], and the queue is empty.
    pub fn start(workers: usize, capacity: usize, backend: Arc<Backend>) -> Self {
        let (queue, receiver) = mpsc::channel::<Job>(capacity);
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
        tasks.spawn(async move {
            jobs.for_each_concurrent(workers, |job| {
                let backend = Arc::clone(&backend);
                async move {
                    backend.started(&job);
                    backend.persist(job).await;
                }
            })
            .await;
        });
        Self {
            queue,
            workers,
            closing,
        }
    }

    /// Queues the element, waiting for room while the queue is full.
    pub async fn hand_off(&self, job: Job, abandon: &CancellationToken) -> Result<(), CutShort> {
        tokio::select! {
            sent = self.queue.send(job) => sent.map_err(|_| CutShort),
            () = abandon.cancelled() => Err(CutShort),
        }
    }

    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
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
