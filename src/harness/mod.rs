//! The harness: plans a run, starts a worker process per round and
//! configuration, interleaves configurations, enforces time limits, and
//! (inside the worker) calibrates and samples.

mod group;
pub mod journal;
pub mod knobs;
mod order;
pub mod plan;
pub mod progress;
mod result;
mod round;
pub mod run;
mod schedule;
pub mod worker;
