//! The harness: plans a run, starts a worker process per round and
//! configuration, interleaves configurations, enforces time limits, and
//! (inside the worker) calibrates and samples.

pub(crate) mod cgroups;
mod group;
mod ix;
pub(crate) mod journal;
pub(crate) mod knobs;
pub(crate) mod once;
mod order;
mod passes;
pub(crate) mod plan;
pub(crate) mod progress;
mod result;
mod round;
pub(crate) mod run;
mod schedule;
pub(crate) mod watch;
pub(crate) mod worker;
