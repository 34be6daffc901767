//! What a tracer sees: the probes in the binary, the bundled scripts read as
//! text and run for real, the probe tap and its twins, the cut of a request's
//! waits, profiles, recordings and their replay, and `doctor`'s way to trace.

mod compare;
mod doctor;
mod probes;
pub mod profile;
pub mod recording;
mod replay_view;
mod scripts;
pub mod scripts_live;
mod tap;
mod waits;
