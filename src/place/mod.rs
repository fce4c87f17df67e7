//! Real SMT-aware placement (`kdelta place`).
//!
//! Runs N concurrent loops of a command (or a built-in CPU-bound job), each
//! iteration a new process placed by a policy (`naive`, `smt-aware`,
//! `kernel`), and reports per-iteration wall times and how often two loops
//! shared a core while another core ran none.
//!
//! - [`decide`]: the placement decisions, pure functions of topology and busy state.
//! - [`job`]: the built-in deterministic CPU-bound job.
//! - [`runner`]: the loops, sampling and the monitor; children are always reaped.
//! - [`live`]: the live topology; [`session`]: one `kdelta place`; [`render`]: its output.
//!
//! The command's arguments are `cli::PlaceArgs`; `app::place` runs it.

pub(crate) mod decide;
pub(crate) mod job;
pub(crate) mod live;
pub(crate) mod render;
pub(crate) mod runner;
pub(crate) mod session;
