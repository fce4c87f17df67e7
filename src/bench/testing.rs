//! Benchmarks for kdelta's own tests, listed only when `KDELTA_TEST_BENCHES=1`:
//! a worker that dies by a signal, one that hangs past its time limit, one
//! that fails with an error, a real but tiny measurement (a 50 us sleep), one
//! whose every second call is disturbed by a sleep inside the timed loop,
//! a net figure that straddles zero, and a spin whose points take turns
//! in one worker (`test.turns`, failing on `fail=yes`), and a worker that
//! leaves a corrupt results file (`test.garble`), and a fixed loop of
//! arithmetic whose length a configuration can scale (`test.work`, the
//! known small change the star's power is checked with).

use super::{BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Simple};
use std::time::{Duration, Instant};

pub(crate) fn enabled() -> bool {
    std::env::var_os("KDELTA_TEST_BENCHES").map(|v| v == "1").unwrap_or(false)
}

pub(crate) const FAMILY: super::Family =
    super::Family { benchmarks, summary: None, server: None, command: None, run_flags: &[] };

pub(crate) fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    if !enabled() {
        return Vec::new();
    }
    vec![
        Simple::boxed(
            || {
                BenchInfo::new("test.sleep", "sleep for `us` microseconds", "us", Better::Lower).param(ParamSpec::new(
                    "us",
                    ParamKind::Int { min: 1, max: 1_000_000 },
                    "50",
                    "sleep length",
                ))
            },
            |p, s| {
                let d = Duration::from_micros(p.u64("us")?);
                // Sleeping is waiting by design, not being preempted.
                s.kind(crate::model::sample::TaskKind::Waits);
                s.measure_us(|n| {
                    let t = Instant::now();
                    for _ in 0..n {
                        std::thread::sleep(d);
                    }
                    Ok(t.elapsed())
                })
            },
        ),
        Simple::boxed(
            || {
                BenchInfo::new(
                    "test.disturbed",
                    "spin 20 us per operation; every second timed call also sleeps 5 ms",
                    "us",
                    Better::Lower,
                )
                .samples(6, 3)
            },
            |_, s| {
                let mut calls = 0u64;
                s.measure_us(|n| {
                    calls += 1;
                    let t = Instant::now();
                    spin(n, Duration::from_micros(20));
                    if calls % 2 == 0 {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Ok(t.elapsed())
                })
            },
        ),
        Simple::boxed(
            || {
                BenchInfo::new(
                    "test.net",
                    "a figure net of an overhead that straddles zero (+-0.1 us)",
                    "us",
                    Better::Lower,
                )
                .samples(6, 6)
            },
            |_, s| {
                s.net_of_overhead();
                let mut k = 0u32;
                s.measure(
                    |n| {
                        let t = Instant::now();
                        std::hint::black_box((0..n).sum::<u64>());
                        Ok(t.elapsed())
                    },
                    move |_, _| {
                        k += 1;
                        if k % 2 == 0 {
                            0.1
                        } else {
                            -0.1
                        }
                    },
                )
            },
        ),
        Simple::boxed(
            || BenchInfo::new("test.crash", "the worker kills itself with SIGKILL", "us", Better::Lower),
            |_, _| {
                // SAFETY: raising a signal at ourselves.
                unsafe { libc::raise(libc::SIGKILL) };
                unreachable!()
            },
        ),
        Simple::boxed(
            || {
                BenchInfo::new("test.hang", "the worker sleeps far past its time limit", "us", Better::Lower)
                    .timeout(Duration::from_secs(1))
            },
            |_, _| {
                std::thread::sleep(Duration::from_secs(3600));
                Ok(())
            },
        ),
        Simple::boxed(
            || {
                BenchInfo::new(
                    "test.garble",
                    "the worker leaves a corrupt results file (`file=`) and exits 0",
                    "us",
                    Better::Lower,
                )
                .param(ParamSpec::new(
                    "file",
                    ParamKind::choice::<Garble>(),
                    "garbage",
                    "what the results file holds",
                ))
            },
            |p, s| {
                // The harness names a worker's directory `wN` and its results
                // file `rN.json` beside it (`harness::group`).
                let dir = s.tmpdir();
                let n = dir.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix('w')).unwrap_or("0");
                let text: &[u8] = match p.choice::<Garble>("file")? {
                    Garble::Garbage => b"\xff\xfe\x00garbage\x89PNG",
                    Garble::Truncated => b"{\"Samples\":[{\"Ok\":{\"samples\":[1.5,2.",
                };
                std::fs::write(dir.parent().unwrap_or(dir).join(format!("r{n}.json")), text)?;
                // SAFETY: ends the worker at once, as a crash after writing would.
                unsafe { libc::_exit(0) }
            },
        ),
        Simple::boxed(
            || BenchInfo::new("test.fail", "the benchmark returns an error", "us", Better::Lower),
            |_, _| anyhow::bail!("deliberate failure for testing"),
        ),
        Simple::boxed(
            || {
                BenchInfo::new(
                    "test.turns",
                    "spin `us` microseconds per operation; points take turns in one worker",
                    "us",
                    Better::Lower,
                )
                .param(ParamSpec::new("us", ParamKind::Int { min: 1, max: 1000 }, "20", "spin length"))
                .param(ParamSpec::new("fail", ParamKind::Bool, "false", "return an error instead of measuring"))
                .lockstep()
            },
            |p, s| {
                if p.bool("fail")? {
                    anyhow::bail!("deliberate failure for testing");
                }
                let d = Duration::from_micros(p.u64("us")?);
                s.measure_us(|n| {
                    let t = Instant::now();
                    spin(n, d);
                    Ok(t.elapsed())
                })
            },
        ),
        Simple::boxed(
            || {
                BenchInfo::new(
                    "test.work",
                    "a fixed loop of `iters` dependent multiply-adds, times $KDELTA_TEST_WORK_SCALE",
                    "us",
                    Better::Lower,
                )
                .param(ParamSpec::new(
                    "iters",
                    ParamKind::Int { min: 1, max: 100_000_000 },
                    "20000",
                    "multiply-adds per operation",
                ))
            },
            |p, s| {
                let scale = match std::env::var("KDELTA_TEST_WORK_SCALE") {
                    Ok(v) => v.parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0 && *x <= 1000.0).ok_or_else(
                        || {
                            anyhow::anyhow!(
                                "KDELTA_TEST_WORK_SCALE={v:?} is not allowed: a number above 0, at most 1000"
                            )
                        },
                    )?,
                    Err(_) => 1.0,
                };
                let iters = (p.u64("iters")? as f64 * scale).round() as u64;
                s.measure_us(|n| {
                    let t = Instant::now();
                    std::hint::black_box(work(n * iters));
                    Ok(t.elapsed())
                })
            },
        ),
    ]
}

/// `n` dependent multiply-adds: a loop whose length is its only parameter.
fn work(n: u64) -> u64 {
    let mut x = std::hint::black_box(1u64);
    for _ in 0..n {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    }
    x
}

crate::model::params::choice! {
    /// What `test.garble` leaves in its results file.
    enum Garble { Garbage = "garbage", Truncated = "truncated" }
}

/// Busy-wait `n` times for `d` each: CPU time, never off the CPU.
fn spin(n: u64, d: Duration) {
    for _ in 0..n {
        let u = Instant::now();
        while u.elapsed() < d {
            std::hint::spin_loop();
        }
    }
}
