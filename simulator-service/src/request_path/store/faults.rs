//! Faults injected around any store: a share of persists hang (a stuck disk) and a
//! share fail after doing their work, both live-configurable
//! (`persist_stall_rate`, `persist_error_rate`).

use std::future::Future;

use rand::Rng;
use simulator_api::Settings;

use super::PersistError;

/// Runs `store` with the faults `settings` ask for.
pub async fn around(
    settings: &Settings,
    store: impl Future<Output = Result<(), PersistError>>,
) -> Result<(), PersistError> {
    // Validation keeps the rates within 0..=1, where random_bool cannot panic. A
    // rate of 0 (every world but the faults') draws nothing.
    if happens(settings.persist_stall_rate) {
        // A hung store: only persistence's timeout (or shutdown) ends this.
        std::future::pending::<()>().await;
    }
    store.await?;
    if happens(settings.persist_error_rate) {
        return Err(PersistError::Injected);
    }
    Ok(())
}

/// Whether an event of probability `rate` happens this time.
fn happens(rate: f64) -> bool {
    rate > 0.0 && rand::rng().random_bool(rate)
}
