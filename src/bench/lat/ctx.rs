//! `lat.ctx`: LMbench's lat_ctx, a ring of processes passing a token over
//! pipes; the ring itself is `thread::ring`, shared with `thread.ctx`.

use crate::bench::thread::ring::{measure_ctx, Model, SIZE_HELP};
use crate::bench::{BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Params, Sampler};
use anyhow::Result;
use std::time::Duration;

pub(crate) struct LatCtx;

impl Benchmark for LatCtx {
    fn info(&self) -> BenchInfo {
        BenchInfo::new(
            "lat.ctx",
            "one context switch in a ring of processes passing a token over pipes, pipe and data overhead subtracted (lat_ctx)",
            "us",
            Better::Lower,
        )
        .param(ParamSpec::new("procs", ParamKind::Int { min: 2, max: 4096 }, "2,4,8,16", "processes in the ring").quick("2,8"))
        .param(ParamSpec::new("size", ParamKind::Int { min: 0, max: 16384 }, "0,16", SIZE_HELP).quick("0"))
        .timeout(Duration::from_secs(120))
    }

    fn run(&self, p: &Params, s: &mut Sampler) -> Result<()> {
        measure_ctx(s, Model::Processes, p.usize("procs")?, p.usize("size")?)
    }
}
