//! The load driver, `sim-clients`, against the real server: its counts and
//! pacing, the open loop and its files, scale-out shards, and the seed's sweep.

mod clients;
mod open_loop;
mod plans;
mod scale_out;
mod sweep;
