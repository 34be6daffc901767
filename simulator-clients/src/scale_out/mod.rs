//! Load beyond one machine (`docs/scale-out.md`), with no coordinator of our own:
//! starting together at a wall-clock time (`start.rs`) and adding the shards'
//! reports up exactly (`merge.rs`). Which share a process runs is part of its plan
//! (`plan/shard.rs`); the driver's own `/metrics`, which a Prometheus server adds
//! up, is reporting (`reporting/live.rs`).

pub mod merge;
pub mod start;
