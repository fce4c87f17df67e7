//! The `dbench` and `tbench` families (in progress).

use super::Benchmark;

pub mod loadfile;

pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    Vec::new()
}
