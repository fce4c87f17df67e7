//! The build bar, measured through the real `build.make` benchmark (ignored
//! by default: it runs real builds for minutes). Run:
//!
//! ```text
//! cargo test --test it build_bars:: -- --ignored --nocapture
//! ```
//!
//! `KDELTA_BUILD_JOBS` (default `1,2,4`), `KDELTA_BUILD_FILES` (default 300)
//! and `KDELTA_BUILD_SAMPLES` (default 3) change the run.

use kdelta::testing::BuildMake;
use kdelta::testing::{Benchmark, Params};
use kdelta::testing::{Sampler, SamplerSettings};
use std::time::Duration;

fn env(k: &str, d: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| d.to_string())
}

#[test]
#[ignore]
fn build_bars() {
    let b = BuildMake;
    let files = env("KDELTA_BUILD_FILES", "300");
    let samples: usize = env("KDELTA_BUILD_SAMPLES", "3").parse().unwrap();
    println!(
        "{:>4} {:>8} {:>8} {:>8}   (means of {samples} clean builds of {files} files, seconds)",
        "jobs", "wall", "user", "sys"
    );
    for jobs in env("KDELTA_BUILD_JOBS", "1,2,4").split(',') {
        let mut p = Params::default();
        for spec in b.info().params {
            p.set(spec.name, spec.default);
        }
        p.set("jobs", jobs);
        p.set("files", &files);
        let t = tempfile::tempdir().unwrap();
        let mut s = Sampler::new(SamplerSettings {
            target: Duration::from_millis(10),
            quick: false,
            ..SamplerSettings::direct(samples, t.path())
        });
        b.run(&p, &mut s).unwrap();
        let out = s.finish();
        let wall = out.samples.iter().sum::<f64>() / out.samples.len() as f64;
        println!(
            "{:>4} {:>8.2} {:>8.2} {:>8.2}   wall samples {:?}",
            jobs,
            wall,
            out.parts["user_s"].iter().sum::<f64>() / out.parts["user_s"].len() as f64,
            out.parts["sys_s"].iter().sum::<f64>() / out.parts["sys_s"].len() as f64,
            out.samples.iter().map(|v| (v * 100.0).round() / 100.0).collect::<Vec<_>>()
        );
    }
}
