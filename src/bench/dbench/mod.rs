//! The `dbench` and `tbench` families (in progress).

use super::Benchmark;

pub mod backend_fs;
pub mod generate;
pub mod loadfile;
pub mod runner;

pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    Vec::new()
}
