//! The workshop: each exercise measured before and after its fixes
//! (`exercises.rs`, one test an exercise, named after its scenario), its win
//! condition judged and its exit status, its page held to its scenario, the
//! live view in a browser, the room and its kit, and the exercises that need a
//! test of their own (blocking-runtime, retry-storm).

mod blocking_runtime;
mod check_exit;
mod drill;
mod exercises;
mod kit;
mod live_view;
mod retry_storm;
mod room;
mod win_conditions;
mod workshop_pages;
