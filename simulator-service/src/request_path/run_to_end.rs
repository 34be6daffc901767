//! Running a request to its end whatever its caller does, without a task per
//! request.
//!
//! hyper drops a request's handler future when the client hangs up, but the
//! request path must still run to its end: every request-start gets its
//! request-done, and a request waiting for a permit or handing its element on
//! finishes that step as the model says rather than vanishing mid-way. Spawning
//! every request as a task of its own gave that, for about 12 % of the serving
//! path's throughput (`tools/bench/server-vs-axum.py`: 0.885 of bare axum with
//! the spawn, 1.0 without). Here the request runs inline in the connection's task,
//! boxed, and only a request dropped unfinished has the rest of it moved onto a
//! task of its own: an allocation per request, a spawn per hang-up. No crate does
//! this (tokio's `TaskTracker::track_future` counts a future but drops it with
//! its caller), hence this small wrapper.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio_util::task::task_tracker::TrackedFuture;
use tokio_util::task::TaskTracker;

/// A future that, dropped before it is done, calls `abandoned` and finishes on a
/// task of its own. Counted by `tracker` until it is done, inline or spawned.
pub struct RunToEnd<F: Future + Send + 'static, A: FnOnce()>
where
    F::Output: Send + 'static,
{
    future: Option<Pin<Box<TrackedFuture<F>>>>,
    abandoned: Option<A>,
}

impl<F: Future + Send + 'static, A: FnOnce()> RunToEnd<F, A>
where
    F::Output: Send + 'static,
{
    pub fn new(tracker: &TaskTracker, future: F, abandoned: A) -> Self {
        Self {
            future: Some(Box::pin(tracker.track_future(future))),
            abandoned: Some(abandoned),
        }
    }
}

// Nothing is pinned in place but the boxed future, which stays in its box.
impl<F: Future + Send + 'static, A: FnOnce()> Unpin for RunToEnd<F, A> where
    F::Output: Send + 'static
{
}

impl<F: Future + Send + 'static, A: FnOnce()> Future for RunToEnd<F, A>
where
    F::Output: Send + 'static,
{
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let future = self
            .future
            .as_mut()
            .expect("RunToEnd polled after it returned");
        let output = ready!(future.as_mut().poll(cx));
        self.future = None;
        Poll::Ready(output)
    }
}

impl<F: Future + Send + 'static, A: FnOnce()> Drop for RunToEnd<F, A>
where
    F::Output: Send + 'static,
{
    fn drop(&mut self) {
        if let Some(rest) = self.future.take() {
            if let Some(abandoned) = self.abandoned.take() {
                abandoned();
            }
            // Outside a runtime (it is being torn down) there is nothing left to
            // run the rest on; the request ends with it.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                drop(runtime.spawn(rest));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    fn finishing(done: &Arc<AtomicBool>) -> impl Future<Output = u32> + Send + 'static {
        let done = Arc::clone(done);
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            done.store(true, Ordering::SeqCst);
            7
        }
    }

    fn flag(gone: &Arc<AtomicBool>) -> impl FnOnce() {
        let gone = Arc::clone(gone);
        move || gone.store(true, Ordering::SeqCst)
    }

    #[tokio::test(start_paused = true)]
    async fn awaited_it_runs_inline_and_returns_its_output() {
        let tracker = TaskTracker::new();
        let done = Arc::new(AtomicBool::new(false));
        let gone = Arc::new(AtomicBool::new(false));
        let run = RunToEnd::new(&tracker, finishing(&done), flag(&gone));
        assert_eq!(tracker.len(), 1);
        assert_eq!(run.await, 7);
        assert!(
            !gone.load(Ordering::SeqCst),
            "awaited to its end: not abandoned"
        );
        assert!(done.load(Ordering::SeqCst));
        assert!(tracker.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn dropped_half_way_it_finishes_on_its_own_task_and_stays_tracked() {
        let tracker = TaskTracker::new();
        let done = Arc::new(AtomicBool::new(false));
        let gone = Arc::new(AtomicBool::new(false));
        let run = RunToEnd::new(&tracker, finishing(&done), flag(&gone));
        // The caller gives up after 10 ms of the request's 100.
        assert!(tokio::time::timeout(Duration::from_millis(10), run)
            .await
            .is_err());
        assert!(gone.load(Ordering::SeqCst), "told when its caller left");
        assert!(!done.load(Ordering::SeqCst));
        assert_eq!(tracker.len(), 1, "the rest is still counted");
        tracker.close();
        tracker.wait().await;
        assert!(done.load(Ordering::SeqCst), "the rest ran to its end");
    }

    #[tokio::test(start_paused = true)]
    async fn dropped_before_it_started_it_still_runs() {
        let tracker = TaskTracker::new();
        let done = Arc::new(AtomicBool::new(false));
        drop(RunToEnd::new(&tracker, finishing(&done), || {}));
        tracker.close();
        tracker.wait().await;
        assert!(done.load(Ordering::SeqCst));
    }
}
