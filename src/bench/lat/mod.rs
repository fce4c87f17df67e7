//! LMbench's latencies: kernel primitives in microseconds per operation
//! (`lat.*`, lower is better). One short file per primitive, as in LMbench;
//! the first fourteen are the rows of the 2003 study's Table 1. LMbench's
//! memory bandwidth is the `bw` family (`bench/bw.rs`).

pub(crate) mod ctx;
mod fs;
mod proc;
pub(crate) mod program;
mod roundtrip;
mod select;
mod sig;
mod syscall;
mod tcp_server;
pub(crate) mod tiny;

use super::Benchmark;

pub(crate) const FAMILY: super::Family = super::Family {
    benchmarks,
    summary: None,
    server: Some(super::Server { name: "lat.tcp", params: Vec::new, serve: tcp_server::serve }),
    command: None,
    run_flags: &[],
};

pub(crate) fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    let mut v = vec![
        syscall::null(),
        syscall::read(),
        syscall::write(),
        fs::stat(),
        fs::fstat(),
        fs::open(),
        select::file(),
        select::tcp(),
        sig::install(),
        sig::catch(),
        roundtrip::pipe(),
        proc::fork(),
        proc::exec(),
        proc::shell(),
    ];
    v.push(Box::new(ctx::LatCtx));
    v.push(roundtrip::unix());
    v.push(roundtrip::tcp());
    v
}

/// Run `f` n times and return how long that took: the loop every latency
/// benchmark times.
#[inline(always)]
pub(crate) fn time_n(n: u64, mut f: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<std::time::Duration> {
    let t = std::time::Instant::now();
    for _ in 0..n {
        f()?;
    }
    Ok(t.elapsed())
}

/// The last OS error as an anyhow error naming the call.
pub(crate) fn os_err(what: &str) -> anyhow::Error {
    anyhow::anyhow!("{what}: {}", std::io::Error::last_os_error())
}
