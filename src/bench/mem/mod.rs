//! The `mem` family: memcpy, memset, whole-page clear and strlen, each in
//! three implementations (`naive`, `libc`, `tuned`), over sizes from 64 B to
//! far beyond the last-level cache.

pub mod cache;
pub mod libc_fns;
pub mod naive;
pub mod regimes;
pub mod tuned;

use super::Benchmark;

pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    Vec::new()
}
