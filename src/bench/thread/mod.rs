//! The `thread` family (not written yet).

use super::Benchmark;

pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    Vec::new()
}

/// `lat.ctx`, listed in the lat family (the ring is written here, with `thread.ctx`).
pub fn lat_ctx() -> Option<Box<dyn Benchmark>> {
    None
}
