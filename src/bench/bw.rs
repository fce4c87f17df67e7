//! Memory bandwidth, LMbench's bw_mem: `bw.mem.rd` (sum a buffer of 64-bit
//! words), `bw.mem.wr` (store to every word), `bw.mem.cp` (copy one buffer to
//! another; the copied size is counted once, as bw_mem does). MB/s = 10^6
//! bytes per second. The buffer is `size` (default `auto`: four times the
//! last-level cache from sysfs, at least 16 MiB; 256 MiB when the cache size
//! is unknown), far enough beyond the cache to measure memory.

use crate::bench::{BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Params, Sampler, Simple};
use anyhow::{bail, Result};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn info(name: &'static str, what: &'static str) -> BenchInfo {
    BenchInfo::new(name, what, "MB/s", Better::Higher)
        .param(ParamSpec::new(
            "size",
            ParamKind::Size,
            "auto",
            "buffer size (auto: 4 x the last-level cache, at least 16M)",
        ))
        .timeout(Duration::from_secs(120))
}

fn buffer_words(p: &Params, s: &Sampler) -> Result<usize> {
    let bytes = match p.size_or_auto("size")? {
        Some(b) => b,
        None => s.llc_bytes().map(|l| (4 * l).max(16 << 20)).unwrap_or(256 << 20),
    };
    if bytes < 4096 {
        bail!("size {bytes} is too small: at least 4K");
    }
    Ok((bytes / 8) as usize)
}

/// The buffers' bytes a point takes, for planning (`auto` is at most 256M each).
fn one_buffer(p: &Params) -> Option<u64> {
    p.size_or_auto("size").ok().flatten()
}
fn two_buffers(p: &Params) -> Option<u64> {
    one_buffer(p).map(|b| b.saturating_mul(2))
}

fn mbps(bytes: usize) -> impl Fn(u64, f64) -> f64 {
    move |n, t| n as f64 * bytes as f64 / 1e6 / t
}

/// Time passes over buffers of `words` words: `pass(i)` is the i-th pass of a
/// timed batch; the figure is MB/s of one buffer.
fn measure_passes(s: &mut Sampler, words: usize, mut pass: impl FnMut(u64)) -> Result<()> {
    s.extra("bytes", (words * 8) as u64);
    s.measure(
        |n| {
            let t = Instant::now();
            for i in 0..n {
                pass(i);
            }
            Ok(t.elapsed())
        },
        mbps(words * 8),
    )
}

fn rd(p: &Params, s: &mut Sampler) -> Result<()> {
    let words = buffer_words(p, s)?;
    let buf: Vec<u64> = (0..words as u64).collect();
    measure_passes(s, words, |_| {
        let (mut a, mut b, mut c, mut d) = (0u64, 0u64, 0u64, 0u64);
        for ch in black_box(&buf).chunks_exact(4) {
            a = a.wrapping_add(ch[0]);
            b = b.wrapping_add(ch[1]);
            c = c.wrapping_add(ch[2]);
            d = d.wrapping_add(ch[3]);
        }
        black_box(a ^ b ^ c ^ d);
    })
}

fn wr(p: &Params, s: &mut Sampler) -> Result<()> {
    let words = buffer_words(p, s)?;
    let mut buf = vec![1u64; words];
    measure_passes(s, words, |i| {
        for w in black_box(&mut buf).iter_mut() {
            *w = i;
        }
        black_box(&buf);
    })
}

/// Copy word by word, four words a step, as bw_mem's C loop does (8-byte
/// loads and stores, compiled without vectorisation). Volatile accesses keep
/// the compiler from turning the loop into a `memcpy` call, which would
/// measure the C library's copy (`rep movsb` or non-temporal stores) instead:
/// 0.82x bw_mem's figure here.
fn copy_words(dst: &mut [u64], src: &[u64]) {
    for (d, s) in dst.chunks_exact_mut(4).zip(src.chunks_exact(4)) {
        for k in 0..4 {
            // SAFETY: `k < 4` indexes within both chunks of exactly 4 words.
            unsafe { std::ptr::write_volatile(d.as_mut_ptr().add(k), std::ptr::read_volatile(s.as_ptr().add(k))) };
        }
    }
    let whole = dst.len().min(src.len()) / 4 * 4;
    for (d, s) in dst[whole..].iter_mut().zip(&src[whole..]) {
        *d = *s;
    }
}

fn cp(p: &Params, s: &mut Sampler) -> Result<()> {
    let words = buffer_words(p, s)?;
    let src = vec![7u64; words];
    let mut dst = vec![0u64; words];
    measure_passes(s, words, |_| {
        copy_words(black_box(&mut dst), black_box(&src));
    })
}

pub(crate) const FAMILY: super::Family =
    super::Family { benchmarks, summary: None, server: None, command: None, run_flags: &[] };

pub(crate) fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![
        Simple::boxed_sized(|| info("bw.mem.cp", "copy a buffer well beyond the last-level cache"), cp, two_buffers),
        Simple::boxed_sized(
            || info("bw.mem.rd", "read (sum) a buffer well beyond the last-level cache"),
            rd,
            one_buffer,
        ),
        Simple::boxed_sized(|| info("bw.mem.wr", "write a buffer well beyond the last-level cache"), wr, one_buffer),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn copy_words_copies_every_word() {
        for n in [0usize, 1, 3, 4, 5, 1027] {
            let src: Vec<u64> = (0..n as u64).map(|x| x * 7 + 1).collect();
            let mut dst = vec![0u64; n];
            super::copy_words(&mut dst, &src);
            assert_eq!(dst, src, "{n} words");
        }
    }
}
