//! The harness: plans a run, starts a worker process per round and
//! configuration, interleaves configurations, enforces time limits.

pub mod sampler;
