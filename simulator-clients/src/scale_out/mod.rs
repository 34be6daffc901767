//! Load beyond one machine (`docs/scale-out.md`), with no coordinator of our own:
//! which share of the load a process runs (`shard.rs`), starting together at a
//! wall-clock time (`start.rs`), adding the shards' reports up exactly
//! (`merge.rs`) and the driver's own `/metrics` for a Prometheus server to add up
//! (`live.rs`).

pub mod live;
pub mod merge;
pub mod shard;
pub mod start;
