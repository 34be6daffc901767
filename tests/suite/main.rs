//! The integration tests, one binary: each module was a test binary of its own
//! until 38 of them linked the whole server each (7 of a fresh CI run's
//! minutes went to building them). A module is what a file under `tests/` was,
//! now in a folder of its kind (`guards`, `server`, `tracing`, `driver`,
//! `workshop`), and its tests are named by both (`server::soak::the_soak_...`), which is how
//! `.config/nextest.toml` picks the ones that run alone and how a run is
//! filtered (`tools/test -E 'test(/^soak::/)'`). `common` is the harness
//! they share: the binaries' paths, a server, a client, the figures blocks and
//! a browser. docs/architecture.md ("Tests, in three tiers") says where a new
//! test goes.

mod common;

mod driver;
mod guards;
mod server;
mod tracing;
mod workshop;
