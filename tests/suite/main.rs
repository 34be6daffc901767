//! The integration tests, one binary: each module was a test binary of its own
//! until 38 of them linked the whole server each (7 of a fresh CI run's
//! minutes went to building them). A module is what a file under `tests/` was,
//! and its tests are named by it (`soak::the_soak_...`), which is how
//! `.config/nextest.toml` picks the ones that run alone and how a run is
//! filtered (`tools/test -E 'test(/^soak::/)'`). `common` is the harness
//! they share: the binaries' paths, a server, a client, the figures blocks and
//! a browser. docs/architecture.md ("Tests, in three tiers") says where a new
//! test goes.

mod common;

mod blocking_runtime;
mod clients;
mod cpu_limit;
mod deploy;
mod diagram;
mod doc_drift;
mod docs;
mod doctor;
mod exercises;
mod faults;
mod kernel_facts;
mod kit;
mod layout;
mod live_view;
mod model;
mod open_loop;
mod out_of_descriptors;
mod pages_run;
mod platform;
mod probes;
mod profile;
mod prometheus;
mod props;
mod recording;
mod reliability;
mod replay_view;
mod retry_storm;
mod room;
mod router;
mod scale_out;
mod scenarios;
mod scripts;
mod scripts_live;
mod server;
mod soak;
mod sweep;
mod tap;
mod waits;
mod win_conditions;
mod workshop;
mod workshop_pages;
