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
    /// serving path at zero cost (`tools/bench/server-builds.py`). Polling
    /// every persist inline first, whatever the store, cost each waiting one an
    /// extra poll and a box, and put the blocking-runtime exercise's canary on
    /// its bound: so only where nothing can wait. Should it wait after all (a
    /// slot taken by a stalled write), it moves to its task, which polls it
    /// again: a future registers its waker anew at each poll.
    ///
    /// An element whose persist leaves the request owes its write from here
    /// (`unwritten.rs`); one run to its end here owes nothing. One that was
    /// meant to end here and moved to its task owes from the move, and gives
    /// its place back just after its permit.
    pub fn hand_off(&self, mut job: Job) {
        self.backend.started(&job);
        let at_once = self.backend.store.ends_at_once();
        let backend = Arc::clone(&self.backend);
        if !at_once {
            job.owed = backend.owed(&job);
            self.backend
                .tasks
                .spawn(async move { backend.persist(job).await });
            return;
        }
        // A bool, not a clone of the count's Arc: this is the zero-cost
        // serving path, where a shared refcount per request costs cross-core traffic.
        let owes_if_moved = job.notify.is_none();
        let mut persist = Box::pin(async move { backend.persist(job).await });
        if (&mut persist).now_or_never().is_none() {
            let owed = owes_if_moved.then(|| self.backend.unwritten.owe());
            self.backend.tasks.spawn(async move {
                persist.await;
                drop(owed);
            });
        }
    }
}
