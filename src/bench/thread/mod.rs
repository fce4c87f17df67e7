//! The `thread` family (not written yet).

use super::Benchmark;

pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    Vec::new()
}
