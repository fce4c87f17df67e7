//! The `mem` family: memcpy, memset, whole-page clear and strlen, each in
//! three implementations (`impl`: `naive` byte loops, the C library's
//! routines called through an opaque pointer, kdelta's `tuned` ones), in GB/s
//! over sizes from 64 B to 512 MiB in sqrt(2) steps, warm or cold.
//!
//! Cache regimes: each result stores in its extras the `regime` of its
//! working set (`L1`, `L2`, `L3`, `memory`), from the data-cache sizes of CPU
//! 0 in sysfs (L1/L2 read here by [`cache`], the last level from the
//! harness), and [`regimes::speedups`] turns a sweep's size-by-size ratios
//! into the per-regime speedup table with a geometric-mean row.

mod bench;
mod buffers;
pub mod cache;
mod calls;
pub(crate) mod libc_fns;
mod libc_impl;
pub mod naive;
pub(crate) mod ntrule;
pub(crate) mod regimes;
pub(crate) mod summary;
pub(crate) mod tuned;

pub use bench::{MemBench, Routine, SIZES};

use super::Benchmark;

pub(crate) const FAMILY: super::Family =
    super::Family { benchmarks, summary: Some(summary::summary), server: None, command: None, run_flags: &[] };

pub(crate) fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    [Routine::Memcpy, Routine::Memset, Routine::ClearPage, Routine::Strlen]
        .into_iter()
        .map(|r| Box::new(MemBench::new(r)) as Box<dyn Benchmark>)
        .collect()
}
