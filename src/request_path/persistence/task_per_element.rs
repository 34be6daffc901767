//! `task-per-element`: the original simulator's persistence. The request fires
//! persist-start and spawns a task for its element; how many run at once is
//! whatever admission lets through (its permit travels into the task).

use std::sync::Arc;

use futures::FutureExt;

use super::{Backend, Job};

#[derive(Debug, Clone)]
pub struct TaskPerElement {
    backend: Arc<Backend>,
}

impl TaskPerElement {
    pub fn new(backend: Arc<Backend>) -> Self {
        Self { backend }
    }

    /// persist-start now, the persist in a task of its own.
    ///
    /// The persist is polled once here first: one that ends at once (a store
    /// without latency, as in the zero-cost benchmarks) ends without a task,
    /// which was a spawn and a wake-up of another worker per request: 1.09x the
    /// serving path's throughput on a 2-vCPU VM (`scripts/bench/server-builds.py`,
    /// docs/performance.md). One still waiting moves, boxed and so unmoved in
    /// memory (a semaphore may hold a pointer into it), to its task, which polls
    /// it again there: a future registers its waker anew at each poll, so the
    /// first poll's throwaway waker is never the one relied on. The cost for a
    /// persist that waits (every scenario's) is that one extra poll.
    pub fn hand_off(&self, job: Job) {
        self.backend.started(&job);
        let backend = Arc::clone(&self.backend);
        let mut persist = Box::pin(async move { backend.persist(job).await });
        if (&mut persist).now_or_never().is_none() {
            self.backend.tasks.spawn(persist);
        }
    }
}
