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
    /// which was a spawn and a wake-up of another worker per request, a fifth of
    /// the serving path's time on a small VM (`scripts/bench/server-vs-axum.py`).
    /// One still waiting moves to its task, which polls it again there: a
    /// future registers its waker anew at each poll, so the first poll's
    /// throwaway waker is never the one relied on.
    pub fn hand_off(&self, job: Job) {
        self.backend.started(&job);
        let backend = Arc::clone(&self.backend);
        let mut persist = Box::pin(async move { backend.persist(job).await });
        if (&mut persist).now_or_never().is_none() {
            self.backend.tasks.spawn(persist);
        }
    }
}
