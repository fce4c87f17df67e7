//! The fleet: hosts that take their work from the shared PostgreSQL store.
//! `kdelta submit` queues one job per matching host, `kdelta agent` on each
//! host takes its jobs one at a time and runs them through the command
//! line's own run path (handed in as a [`agent::Runner`], so this module
//! knows nothing of benchmarks or requests), `kdelta jobs` and `kdelta
//! cancel` read and steer the queue.
//!
//! `queue.rs`: every statement (claiming with `FOR UPDATE SKIP LOCKED`,
//! leases in server time, attempts, one run per job). `agent.rs`: the loop,
//! the lease's renewal thread, and how an attempt's end is reported.

pub(crate) mod agent;
pub(crate) mod queue;
