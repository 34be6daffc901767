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

    /// persist-start now, the persist in a task of its own; or, where the
    /// store cannot make it wait (`Store::ends_at_once`), run to its end
    /// here: no task, no wake-up of another worker, which were a tenth of the
    /// serving path at zero cost (`scripts/bench/server-builds.py`). Polling
    /// every persist inline first, whatever the store, cost each waiting one an
    /// extra poll and a box, and put the blocking-runtime exercise's canary on
    /// its bound: so only where nothing can wait. Should it wait after all (a
    /// slot taken by a stalled write), it moves to its task, which polls it
    /// again: a future registers its waker anew at each poll.
    pub fn hand_off(&self, job: Job) {
        self.backend.started(&job);
        let at_once = self.backend.store.ends_at_once();
        let backend = Arc::clone(&self.backend);
        let persist = async move { backend.persist(job).await };
        if !at_once {
            self.backend.tasks.spawn(persist);
            return;
        }
        let mut persist = Box::pin(persist);
        if (&mut persist).now_or_never().is_none() {
            self.backend.tasks.spawn(persist);
        }
    }
}
