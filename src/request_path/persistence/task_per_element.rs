//! `task-per-element`: the original simulator's persistence. The request fires
//! persist-start and spawns a task for its element; how many run at once is
//! whatever admission lets through (its permit travels into the task).

use std::sync::Arc;

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
    pub fn hand_off(&self, job: Job) {
        self.backend.started(&job);
        let backend = Arc::clone(&self.backend);
        self.backend
            .tasks
            .spawn(async move { backend.persist(job).await });
    }
}
