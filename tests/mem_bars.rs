//! The issue's bars, measured through the real `mem.*` benchmarks (ignored by
//! default: it takes minutes and needs a release build). Run:
//!
//! ```text
//! cargo test --release --test mem_bars -- --ignored --nocapture --test-threads=1
//! GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=0x1000000 \
//!   KDELTA_BARS=band cargo test --release --test mem_bars -- --ignored --nocapture
//! ```
//!
//! `KDELTA_BARS` picks parts (comma list): `band` (memcpy libc vs tuned at
//! 16-128 MiB, warm and cold), `sweep` (memcpy over the whole size list,
//! warm), `strlen`, `naive` (memcpy tuned vs naive beyond L1). Default: all.
//! Implementations alternate at every size, three rounds, median of the
//! rounds' medians, so a neighbour's load hits both alike.

use kdelta::bench::mem::{cache, MemBench, Routine, SIZES};
use kdelta::bench::params::parse_size;
use kdelta::bench::{Benchmark, Params};
use kdelta::harness::sampler::{Sampler, SamplerSettings};
use std::time::Duration;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn gbps(r: Routine, imp: &str, size: &str, cache: &str) -> f64 {
    let b = MemBench::new(r);
    let mut p = Params::default();
    for spec in b.info().params {
        p.set(spec.name, spec.default);
    }
    p.set("impl", imp);
    p.set("size", size);
    p.set("cache", cache);
    let t = tempfile::tempdir().unwrap();
    let mut s = Sampler::new(SamplerSettings {
        target: Duration::from_millis(20),
        quick: false,
        llc_bytes: cache::host().llc(),
        ..SamplerSettings::direct(5, t.path())
    });
    b.run(&p, &mut s).unwrap();
    median(s.finish().samples)
}

fn compare(r: Routine, a: &str, b: &str, size: &str, cache: &str) -> (f64, f64) {
    let (mut va, mut vb) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        va.push(gbps(r, a, size, cache));
        vb.push(gbps(r, b, size, cache));
    }
    (median(va), median(vb))
}

fn want(part: &str) -> bool {
    std::env::var("KDELTA_BARS").map(|v| v.split(',').any(|p| p == part)).unwrap_or(true)
}

fn table(r: Routine, a: &str, b: &str, sizes: &[&str], caches: &[&str]) {
    println!("{:>10} {:>5} {:>9} {:>9} {:>7}", "size", "cache", a, b, format!("{b}/{a}"));
    for size in sizes {
        for c in caches {
            let (x, y) = compare(r, a, b, size, c);
            println!("{:>10} {:>5} {:>9.2} {:>9.2} {:>7.2}", size, c, x, y, y / x);
        }
    }
}

#[test]
#[ignore]
fn bars() {
    println!("caches (sysfs): {:?}; GLIBC_TUNABLES={:?}", cache::host().levels(), std::env::var("GLIBC_TUNABLES").ok());
    if want("band") {
        println!("\nmemcpy, 16-128 MiB (GB/s):");
        table(Routine::Memcpy, "libc", "tuned", &["16M", "23170K", "32M", "46341K", "64M", "91M", "128M"], &["warm", "cold"]);
    }
    if want("sweep") {
        println!("\nmemcpy, whole sweep, warm (GB/s):");
        table(Routine::Memcpy, "libc", "tuned", &SIZES.split(',').collect::<Vec<_>>(), &["warm"]);
    }
    if want("strlen") {
        println!("\nstrlen, warm (GB/s):");
        let s: Vec<&str> = SIZES.split(',').filter(|s| parse_size(s).unwrap() <= 64 << 20).collect();
        table(Routine::Strlen, "libc", "tuned", &s, &["warm"]);
    }
    if want("naive") {
        println!("\nmemcpy tuned vs naive beyond L1, warm (GB/s):");
        table(Routine::Memcpy, "naive", "tuned", &["64K", "256K", "1M", "4M", "16M", "64M"], &["warm"]);
    }
}
