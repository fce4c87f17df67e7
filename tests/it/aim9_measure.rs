//! Measurements of the aim9 family for the closing note (ignored by default;
//! they take minutes). Run in release:
//!
//! ```text
//! cargo test --release --test it aim9_measure:: -- --ignored --nocapture --test-threads=1
//! ```
//!
//! - `suite_at_default_period`: every test at its default parameters (period
//!   1 s, 3 samples), calling `run` directly as one worker would; prints each
//!   figure and the whole suite's wall time (without the harness's worker
//!   start-up).
//! - `calls_for_strace`: `AIM9_CALLS` calls of the test `AIM9_TEST` (set-up
//!   and clean-up included), `AIM9_FILESIZE` bytes (default 256K) for the
//!   disk tests; run under `strace -f -c` twice with different call counts,
//!   the difference divided by the difference of calls is the system calls
//!   of one call (the script is in docs/fidelity.md).
//! - `cv_of_arithmetic_and_calls`: 5 periods of 1 s for each arithmetic and
//!   function-call test; prints the coefficient of variation.

use kdelta::testing::expand;
use kdelta::testing::Benchmark;
use kdelta::testing::{Sampler, SamplerSettings};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Samples and, per sample, the figure per CPU-second of the worker thread
/// (wall figure / cpu_share): what the test gives when it is not preempted.
fn run(b: &dyn Benchmark, samples: usize) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let info = b.info();
    let p = expand(&info.params, &BTreeMap::new(), false, info.name)?.remove(0);
    b.check(&p)?;
    let tmp = tempfile::tempdir()?;
    let mut s = Sampler::new(SamplerSettings {
        target: Duration::from_millis(10),
        quick: false,
        ..SamplerSettings::direct(samples, tmp.path())
    });
    b.run(&p, &mut s)?;
    let out = s.finish();
    let share: Vec<f64> =
        out.extras.get("cpu_share").and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default();
    let per_cpu = out.samples.iter().zip(&share).map(|(v, c)| v / c.max(1e-9)).collect();
    Ok((out.samples, per_cpu))
}

fn mean_cv(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    (m, sd / m * 100.0)
}

#[test]
#[ignore]
fn suite_at_default_period() {
    let t0 = Instant::now();
    let mut failed = 0;
    for b in kdelta::testing::aim9::benchmarks() {
        let info = b.info();
        let t = Instant::now();
        match run(&*b, info.samples) {
            Ok((v, _)) => {
                let (m, cv) = mean_cv(&v);
                eprintln!(
                    "{:<22} {:>16.1} {:<18} cv {:>5.2}%  {:>5.2} s",
                    info.name,
                    m,
                    info.unit,
                    cv,
                    t.elapsed().as_secs_f64()
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!("{:<22} FAILED: {e:#}", info.name);
            }
        }
    }
    eprintln!("whole suite: {:.1} s", t0.elapsed().as_secs_f64());
    assert_eq!(failed, 0);
}

#[test]
#[ignore]
fn cv_of_arithmetic_and_calls() {
    for b in kdelta::testing::aim9::benchmarks() {
        let info = b.info();
        let n = info.name;
        if !(n.contains(".add_") || n.contains(".mul_") || n.contains(".div_") || n.contains(".fun_cal")) {
            continue;
        }
        let (v, c) = run(&*b, 5).unwrap();
        let (m, cv) = mean_cv(&v);
        let (mc, cvc) = mean_cv(&c);
        eprintln!(
            "{:<18} mean {:>14.1} {:<16} cv {:>6.2}%   per CPU-second {:>14.1} cv {:>6.2}%",
            n, m, info.unit, cv, mc, cvc
        );
    }
}

#[test]
#[ignore]
fn calls_for_strace() {
    let (Ok(name), Ok(n)) = (std::env::var("AIM9_TEST"), std::env::var("AIM9_CALLS")) else {
        eprintln!("set AIM9_TEST and AIM9_CALLS");
        return;
    };
    let n: u64 = n.parse().expect("AIM9_CALLS: a number");
    let filesize = std::env::var("AIM9_FILESIZE").ok().and_then(|v| v.parse().ok()).unwrap_or(256 << 10);
    let d = kdelta::testing::aim9::TESTS.iter().find(|d| d.name == format!("aim9.{name}")).expect("no such aim9 test");
    let tmp = tempfile::tempdir().unwrap();
    let ctx = kdelta::testing::aim9::Ctx {
        dir: tmp.path().to_path_buf(),
        filesize: if d.disk { filesize } else { 0 },
        sync: false,
    };
    let mut w = (d.make)(&ctx).unwrap();
    let t = Instant::now();
    for _ in 0..n {
        w.call().unwrap();
    }
    // The loop alone, for per-call comparisons with AIM9's driver (which prints its own).
    println!("{name} calls {n} secs {:.6}", t.elapsed().as_secs_f64());
}
