//! The house's own rules, read from the tree: the folders' layers, the docs
//! made from code and held to it, every command of a page run as printed, the
//! OS named in one place, the kernel's facts the pages state, the deployment
//! examples and the Prometheus rules checked by their own tools.

mod deploy;
mod diagram;
mod doc_drift;
mod docs;
mod kernel_facts;
mod layout;
mod pages_run;
mod platform;
mod prometheus;
