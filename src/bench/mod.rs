//! Benchmarks: the common trait, their self-descriptions and the registry.
//!
//! A benchmark is one small type implementing [`Benchmark`]. It describes
//! itself ([`BenchInfo`]: name, family, unit, direction, parameters), says
//! whether it can run here ([`Benchmark::supported`]), and measures inside a
//! worker process through a [`Sampler`]. It knows nothing of configurations,
//! statistics, storage or output: the harness and reports do that.
//!
//! A family is a module exposing `pub fn benchmarks() -> Vec<Box<dyn Benchmark>>`,
//! listed once in [`registry`].


pub mod aim9;
pub mod build;
pub mod chat;
pub mod dbench;
pub mod lat;
pub mod mem;
pub mod testing;
pub mod thread;

pub use crate::measure::benchmark::{BenchInfo, Benchmark, Env, Simple};
pub use crate::measure::sampler::Sampler;
pub use crate::model::params;
pub use crate::model::{Better, ParamKind, ParamSpec, Params};


/// Every benchmark kdelta has, family by family, in listing order.
pub fn registry() -> Vec<Box<dyn Benchmark>> {
    let mut all = Vec::new();
    all.extend(lat::benchmarks());
    all.extend(mem::benchmarks());
    all.extend(aim9::benchmarks());
    all.extend(thread::benchmarks());
    all.extend(chat::benchmarks());
    all.extend(dbench::benchmarks());
    all.extend(build::benchmarks());
    all.extend(testing::benchmarks());
    all
}

/// Lines a family adds under a run's tables, computed from its stored results
/// (for example the mem family's per-regime speedups). Families without one
/// add nothing.
pub fn family_summaries(results: &[crate::model::record::ResultRecord]) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(mem::summary::summary(results));
    out
}

/// Find one benchmark by exact name.
pub fn find(name: &str) -> Option<Box<dyn Benchmark>> {
    registry().into_iter().find(|b| b.info().name == name)
}

