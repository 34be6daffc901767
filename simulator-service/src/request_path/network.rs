//! The network: the simulated traverse a request makes on its way in and again on
//! its way out, inside its lifetime (request-start to request-done), as the
//! original simulator's clients saw it.
//!
//! **Contract.** Sleeps one draw of `network_delay`; fires no probe; holds nothing.
//! Shutdown's cancellation ends the sleep at once, so no request waits past the
//! drain deadline here.

use std::time::Duration;

use simulator_api::Delay;
use tokio_util::sync::CancellationToken;

/// The traverse was cut short: the server is shutting down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutShort;

/// One traverse, one way, ending on the next `tick` after it (`timer_tick`).
pub async fn traverse(
    delay: &Delay,
    tick: Duration,
    abandon: &CancellationToken,
) -> Result<(), CutShort> {
    let delay = delay.draw();
    if delay.is_zero() {
        return Ok(());
    }
    tokio::select! {
        () = super::delay::sleep(delay, tick) => Ok(()),
        () = abandon.cancelled() => Err(CutShort),
    }
}
