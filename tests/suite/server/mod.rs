//! The service: the real binary on loopback (counts, metrics, admin, bad input,
//! shutdown, abuse, the descriptor and CPU limits, the soak), the router and the
//! data processor in process on virtual time (the model, faults, property
//! tests), and every scenario's symptom and cure.

mod binary;
mod cpu_limit;
mod faults;
mod model;
mod out_of_descriptors;
mod props;
mod reliability;
mod router;
mod scenarios;
mod soak;
