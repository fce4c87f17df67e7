//! The issue's bars, measured through the real `mem.*` benchmarks (ignored by
//! default: it takes minutes and needs a release build). Run:
//!
//! ```text
//! cargo test --release --test it mem_bars:: -- --ignored --nocapture --test-threads=1
//! GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=0x1000000 \
//!   KDELTA_BARS=band cargo test --release --test it mem_bars:: -- --ignored --nocapture
//! ```
//!
//! `KDELTA_BARS` picks parts (comma list): `band` (memcpy libc vs tuned at
//! 16-128 MiB, warm and cold), `sweep` (memcpy over the whole size list,
//! warm), `strlen`, `naive` (memcpy tuned vs naive beyond L1), `paired`
//! (libc against tuned in alternating short blocks, below). Default: all.
//! Implementations alternate at every size, three rounds (`KDELTA_BARS_ROUNDS`),
//! median of the rounds' medians, so a neighbour's load hits both alike.
//! `KDELTA_BARS_SIZES` replaces the size list of `sweep` and `strlen` (comma
//! list, e.g. `64,90,128,181,256`); `KDELTA_BARS_CPU=N` pins the test to CPU
//! N, as the `cpus=N` configuration does for a run.

use kdelta::testing::mem::Libc;
use kdelta::testing::mem::Tuned;
use kdelta::testing::mem::{cache, MemBench, Routine, SIZES};
use kdelta::testing::parse_size;
use kdelta::testing::{Benchmark, Params};
use kdelta::testing::{Sampler, SamplerSettings};
use std::ffi::CStr;
use std::time::Duration;
use std::time::Instant;

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

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn compare(r: Routine, a: &str, b: &str, size: &str, cache: &str) -> (f64, f64) {
    let (mut va, mut vb) = (Vec::new(), Vec::new());
    for _ in 0..env_usize("KDELTA_BARS_ROUNDS", 3).max(1) {
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

/// A page-aligned buffer of `len` bytes filled with `fill`.
fn aligned(len: usize, fill: u8) -> (Vec<u8>, usize) {
    let v = vec![fill; len + 4096];
    let at = v.as_ptr().align_offset(4096);
    (v, at)
}

/// Paired measurement of libc against tuned at one size: blocks of calls
/// (about 1 MB of work each) alternate between the two, in alternating
/// order, so both see the same moment of a shared, noisy machine; the
/// figure is the median of the per-pair ratios of block times, with the
/// quartiles. The sizes mean what they mean in `mem.memcpy` and `mem.strlen`
/// (strlen: `size` bytes including the NUL), and the buffers are
/// page-aligned as there (warm: one buffer reused).
fn paired(r: Routine, size: usize) -> (f64, f64, f64, f64, f64) {
    // `KDELTA_BARS_VARIANT` forces one tuned variant (avx512, avx2, sse2, ...).
    let t = match std::env::var("KDELTA_BARS_VARIANT") {
        Ok(v) => Tuned::with_variant(kdelta::testing::mem::Variant::from_name(&v).expect("a variant name"))
            .expect("available here"),
        Err(_) => Tuned::detect(),
    };
    let l = Libc::new();
    let (mut src, so) = aligned(size, 1);
    let (mut dst, d0) = aligned(size, 0);
    for (j, c) in src[so..so + size].iter_mut().enumerate() {
        *c = b'a' + (j % 26) as u8;
    }
    src[so + size - 1] = 0;
    let iters = (1_000_000 / (size + 64)).max(8);
    let strlen = matches!(r, Routine::Strlen);
    // Checked once, outside the timing (the checked constructor scans the bytes).
    let c = CStr::from_bytes_with_nul(&src[so..so + size]).unwrap();
    let (s, d) = (&src[so..so + size], &mut dst[d0..d0 + size]);
    // One loop per implementation and routine, so the timed loop holds
    // nothing but the calls.
    let mut block = |tuned: bool| -> f64 {
        let mut acc = 0usize;
        let t0 = Instant::now();
        match (strlen, tuned) {
            (true, true) => (0..iters).for_each(|_| acc += t.strlen(std::hint::black_box(c))),
            (true, false) => (0..iters).for_each(|_| acc += l.strlen(std::hint::black_box(c))),
            (false, true) => (0..iters).for_each(|_| t.copy(d, s, usize::MAX)),
            (false, false) => (0..iters).for_each(|_| l.copy(d, s)),
        }
        let secs = t0.elapsed().as_secs_f64();
        assert!(!strlen || acc == iters * (size - 1), "strlen returned a wrong length");
        secs
    };
    let (mut ratios, mut bl, mut bt) = (Vec::new(), f64::MAX, f64::MAX);
    let start = Instant::now();
    let mut k = 0;
    while k < 41 || (k < 401 && start.elapsed().as_secs_f64() < 1.0) {
        let (x, y) = if k % 2 == 0 {
            let x = block(false);
            (x, block(true))
        } else {
            let y = block(true);
            (block(false), y)
        };
        bl = bl.min(x);
        bt = bt.min(y);
        ratios.push(x / y);
        k += 1;
    }
    ratios.sort_by(|a, b| a.total_cmp(b));
    let q = |f: f64| ratios[((ratios.len() - 1) as f64 * f).round() as usize];
    let gb = |secs: f64| (iters * size) as f64 / secs / 1e9;
    (q(0.5), q(0.25), q(0.75), gb(bl), gb(bt))
}

fn paired_table(r: Routine, sizes: &[&str]) {
    println!("{:>10} {:>9} {:>9} {:>7} {:>15}", "size", "libc", "tuned", "t/l", "t/l quartiles");
    for s in sizes {
        let n = parse_size(s).unwrap() as usize;
        let (m, lo, hi, gl, gt) = paired(r, n);
        println!("{:>10} {:>9.2} {:>9.2} {:>7.3} {:>7.3}-{:<7.3}", s, gl, gt, m, lo, hi);
    }
}

#[test]
#[ignore]
fn bars() {
    if let Ok(cpu) = std::env::var("KDELTA_BARS_CPU") {
        let set: kdelta::testing::CpuSet = cpu.parse().expect("KDELTA_BARS_CPU: a CPU list");
        kdelta::testing::set_affinity(&set).unwrap();
        println!("pinned to CPU {set}");
    }
    let sizes_env = std::env::var("KDELTA_BARS_SIZES").ok();
    let sweep_sizes: Vec<&str> = sizes_env.as_deref().unwrap_or(SIZES).split(',').collect();
    println!("caches (sysfs): {:?}; GLIBC_TUNABLES={:?}", cache::host().levels(), std::env::var("GLIBC_TUNABLES").ok());
    if want("band") {
        println!("\nmemcpy, 16-128 MiB (GB/s):");
        table(
            Routine::Memcpy,
            "libc",
            "tuned",
            &["16M", "23170K", "32M", "46341K", "64M", "91M", "128M"],
            &["warm", "cold"],
        );
    }
    if want("sweep") {
        println!("\nmemcpy, whole sweep, warm (GB/s):");
        table(Routine::Memcpy, "libc", "tuned", &sweep_sizes, &["warm"]);
    }
    if want("strlen") {
        println!("\nstrlen, warm (GB/s):");
        let s: Vec<&str> = sweep_sizes.iter().copied().filter(|s| parse_size(s).unwrap() <= 64 << 20).collect();
        table(Routine::Strlen, "libc", "tuned", &s, &["warm"]);
    }
    if want("paired") {
        println!("\npaired, pinned blocks (GB/s of the best block; t/l = median per-pair ratio of tuned over libc):");
        let top: Vec<&str> = sweep_sizes.iter().copied().filter(|s| parse_size(s).unwrap() <= 8 << 20).collect();
        if !want("paired-strlen-only") {
            println!("memcpy, warm:");
            paired_table(Routine::Memcpy, &top);
        }
        println!("strlen, warm:");
        paired_table(Routine::Strlen, &top);
    }
    if want("naive") {
        println!("\nmemcpy tuned vs naive beyond L1, warm (GB/s):");
        table(Routine::Memcpy, "naive", "tuned", &["64K", "256K", "1M", "4M", "16M", "64M"], &["warm"]);
    }
}
