//! Whether a request's client is still waiting for it: one flag shared by the
//! request (set when its client closes the connection: request-abandoned) and by
//! the persist of its element, which is wasted work if it ends after that; and,
//! with `on_disconnect = cancel`, the token that ends the request's waits when
//! the client leaves.
//!
//! A flag per request rather than a set of the ids whose clients left: the persist
//! may end before or after its client leaves and before or after the reply, and a
//! set would have to be cleared on every one of those paths. The flag costs one
//! small allocation a request (tens of nanoseconds against the ~13 us a request
//! costs the serving path). The token is made only in `cancel` mode: it is a
//! child of the shutdown token, and making one takes the parent's lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

/// See the module comment. Cloning shares the flag.
#[derive(Debug, Clone, Default)]
pub struct ClientWatch(Arc<Watch>);

#[derive(Debug, Default)]
struct Watch {
    gone: AtomicBool,
    /// Cancelled when the client leaves, once [`ClientWatch::cancel_on_leaving`]
    /// has set it.
    stop: OnceLock<CancellationToken>,
}

impl ClientWatch {
    /// The client closed its connection before the reply.
    pub fn leave(&self) {
        self.0.gone.store(true, Ordering::SeqCst);
        if let Some(stop) = self.0.stop.get() {
            stop.cancel();
        }
    }

    /// Whether the client had gone by now.
    pub fn gone(&self) -> bool {
        self.0.gone.load(Ordering::SeqCst)
    }

    /// A token the client's leaving cancels: the one set by
    /// [`Self::cancel_on_leaving`] if any (`cancel` mode: shutdown cancels it
    /// too), or a new one of its own.
    pub fn leaving(&self) -> CancellationToken {
        let token = self.0.stop.get_or_init(CancellationToken::new).clone();
        if self.gone() {
            token.cancel();
        }
        token
    }

    /// From now on the client leaving cancels `stop` (at once if it has left).
    /// Set once per request; later calls are ignored.
    pub fn cancel_on_leaving(&self, stop: CancellationToken) {
        let _ = self.0.stop.set(stop);
        // A client that left between the token's making and now: `leave` found
        // no token to cancel, so it is cancelled here. Both sides use SeqCst, so
        // at least one of them sees the other's write.
        if self.gone() {
            if let Some(stop) = self.0.stop.get() {
                stop.cancel();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaving_cancels_the_token_whichever_comes_first() {
        let before = ClientWatch::default();
        before.leave();
        let token = CancellationToken::new();
        before.cancel_on_leaving(token.clone());
        assert!(token.is_cancelled(), "left before the token was set");

        let after = ClientWatch::default();
        let token = CancellationToken::new();
        after.cancel_on_leaving(token.clone());
        assert!(!token.is_cancelled(), "still there");
        after.leave();
        assert!(token.is_cancelled(), "left after the token was set");
        assert!(after.gone());
    }
}
