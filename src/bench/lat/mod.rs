//! The LMbench latency family (`lat.*`, `bw.mem.*`).

use super::Benchmark;

pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    Vec::new()
}
