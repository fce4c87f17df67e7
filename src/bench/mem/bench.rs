//! The four `mem.*` benchmarks: one type, [`MemBench`], parametrised by the
//! routine. Each measures one implementation (`impl`) at one size, warm or
//! cold, in GB/s (bytes processed per second / 1e9).

use super::buffers::{round_up, Arena, Pool, Rotation};
use super::cache;
use super::calls::{self, rust_loop as timed, Callee, Slots, Strings};
use super::libc_fns::{self, Libc};
use super::libc_impl;
use super::naive;
use super::ntrule::{self, Touch};
use super::tuned::{self, Tuned, Variant, PAGE};
use crate::bench::{bad_param, BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Params, Sampler};
use crate::error::bad_input;
use crate::sys;
use anyhow::Result;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Sizes from 64 B to 512 MiB in steps of sqrt(2) (rounded), covering at
/// least four times the last-level cache of caches up to 128 MiB.
pub const SIZES: &str = "64,88,128,184,256,360,512,728,1K,1448,2K,2896,4K,5792,8K,11584,16K,23168,32K,46344,64K,91K,128K,181K,256K,362K,512K,724K,1M,1448K,2M,2896K,4M,5793K,8M,11585K,16M,23170K,32M,46341K,64M,91M,128M,181M,256M,362M,512M";
/// One size per regime of a typical machine, and the 16-128 MiB band.
pub(crate) const QUICK_SIZES: &str = "256,16K,512K,8M,64M";
/// [`SIZES`] from one page up, for the page clear.
pub(crate) const PAGE_SIZES: &str = "4K,5792,8K,11584,16K,23168,32K,46344,64K,91K,128K,181K,256K,362K,512K,724K,1M,1448K,2M,2896K,4M,5793K,8M,11585K,16M,23170K,32M,46341K,64M,91M,128M,181M,256M,362M,512M";
pub(super) const QUICK_PAGE_SIZES: &str = "16K,512K,8M,64M";

/// Largest size accepted.
const MAX_SIZE: u64 = 16 << 30;
/// Last-level cache assumed for sizing when neither the harness nor sysfs knows it.
const FALLBACK_LLC: u64 = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routine {
    Memcpy,
    Memset,
    ClearPage,
    Strlen,
}

impl Routine {
    /// Buffers of `size` one call touches (for the regime).
    pub fn buffers(self) -> u64 {
        match self {
            Routine::Memcpy => 2,
            _ => 1,
        }
    }
}

/// The implementations compared.
#[derive(Clone, Copy)]
enum Impl {
    Naive,
    Libc(Libc),
    Tuned(Tuned),
}

impl Impl {
    /// The routine the shared timed loop calls (`calls.rs`), streaming from
    /// `nt_min` bytes; none for the naive loops, which are Rust.
    fn callee(self, nt_min: usize) -> Option<Callee> {
        match self {
            Impl::Naive => None,
            Impl::Libc(l) => Some(Callee::Libc(l)),
            Impl::Tuned(t) => Some(Callee::Tuned(t, nt_min)),
        }
    }
}

pub struct MemBench {
    routine: Routine,
}

impl MemBench {
    pub fn new(routine: Routine) -> MemBench {
        MemBench { routine }
    }
}

crate::model::params::choice! {
    /// The `impl` parameter: which implementation is measured.
    enum ImplName { Naive = "naive", Libc = "libc", Tuned = "tuned" }
}

crate::model::params::choice! {
    /// The `variant` parameter: the rule's choice or one forced path of the
    /// tuned routines (`tuned/rule.rs`).
    enum VariantName {
        Auto = "auto",
        Avx512Movsb = "avx512-movsb",
        Avx512 = "avx512",
        Avx2 = "avx2",
        Sse2 = "sse2",
        Neon = "neon",
        Portable = "portable",
    }
}

impl VariantName {
    /// `None` for `auto`.
    fn forced(self) -> Option<Variant> {
        match self {
            VariantName::Auto => None,
            VariantName::Avx512Movsb => Some(Variant::Avx512Movsb),
            VariantName::Avx512 => Some(Variant::Avx512),
            VariantName::Avx2 => Some(Variant::Avx2),
            VariantName::Sse2 => Some(Variant::Sse2),
            VariantName::Neon => Some(Variant::Neon),
            VariantName::Portable => Some(Variant::Portable),
        }
    }
}

crate::model::params::choice! {
    /// The `cache` parameter.
    enum CacheState { Warm = "warm", Cold = "cold" }
}

fn impl_param() -> ParamSpec {
    ParamSpec::new(
        "impl",
        ParamKind::choice::<ImplName>(),
        "naive,libc,tuned",
        "naive byte loop, the C library's routine, or kdelta's tuned one",
    )
}
fn cache_param() -> ParamSpec {
    ParamSpec::new(
        "cache",
        ParamKind::choice::<CacheState>(),
        "warm,cold",
        "warm reuses one buffer; cold rotates through buffers totalling 2x the last-level cache",
    )
}
fn variant_param() -> ParamSpec {
    ParamSpec::new(
        "variant",
        ParamKind::choice::<VariantName>(),
        "auto",
        "tuned only: auto = the path the rule in tuned/rule.rs picks for this CPU (cpuid: vendor, ERMS, FSRM, AVX2, AVX-512); or force one (avx512-movsb, avx512, avx2, sse2, neon, portable); a path this CPU lacks is unavailable, not run",
    )
}
fn nt_param() -> ParamSpec {
    ParamSpec::new(
        "nt_threshold",
        ParamKind::Size,
        "auto",
        "tuned only: size from which non-temporal stores are used; auto = the non-temporal rule: a copy streams when the 2n bytes it touches exceed this CPU's share of the last-level cache, a fill when its n bytes exceed twice the whole last-level cache (sysfs); a page clear never",
    )
}
fn offset_param(name: &'static str, help: &'static str) -> ParamSpec {
    ParamSpec::new(name, ParamKind::Int { min: 0, max: 4095 }, "0", help)
}

/// A `mem.*` benchmark's parameters, read once by [`MemBench::params`].
struct MemParams {
    imp: ImplName,
    size: u64,
    cold: bool,
    /// Source (or string) and destination misalignment; 0 where the routine has none.
    off: usize,
    dst_off: usize,
    /// `None`: the non-temporal rule (`auto`, or a routine without it).
    nt_threshold: Option<u64>,
    /// `None`: the rule's choice (`variant=auto`).
    variant: Option<Variant>,
}

impl MemBench {
    fn params(&self, p: &Params) -> Result<MemParams> {
        let size = p.size("size")?;
        let min = if self.routine == Routine::ClearPage { PAGE as u64 } else { 1 };
        if size < min || size > MAX_SIZE {
            return Err(bad_input(format!(
                "size={size} is not allowed for {}: expected {min} bytes to 16G",
                self.info().name
            )));
        }
        let nt_threshold = p.size_or_auto("nt_threshold").map_err(|e| bad_input(format!("nt_threshold: {e}")))?;
        let off = |k: &str| -> Result<usize> { Ok(if p.0.contains_key(k) { p.usize(k)? } else { 0 }) };
        Ok(MemParams {
            imp: p.choice("impl").map_err(bad_param)?,
            size,
            cold: p.choice::<CacheState>("cache").map_err(bad_param)? == CacheState::Cold,
            off: off("offset")?,
            dst_off: off("dst_offset")?,
            nt_threshold,
            variant: p.choice::<VariantName>("variant").map_err(bad_param)?.forced(),
        })
    }
}

impl Benchmark for MemBench {
    fn info(&self) -> BenchInfo {
        let (name, summary) = match self.routine {
            Routine::Memcpy => ("mem.memcpy", "copy `size` bytes between two buffers"),
            Routine::Memset => ("mem.memset", "fill `size` bytes with one value"),
            Routine::ClearPage => ("mem.clear_page", "zero `size` bytes one whole 4 KiB page per call"),
            Routine::Strlen => ("mem.strlen", "length of a `size`-byte string (NUL included)"),
        };
        let (sizes, quick) = match self.routine {
            Routine::ClearPage => (PAGE_SIZES, QUICK_PAGE_SIZES),
            _ => (SIZES, QUICK_SIZES),
        };
        let mut info = BenchInfo::new(name, summary, "GB/s", Better::Higher)
            .param(impl_param())
            .param(
                ParamSpec::new(
                    "size",
                    ParamKind::Size,
                    sizes,
                    "bytes per call; cache regimes are marked from the sysfs cache sizes",
                )
                .quick(quick),
            )
            .param(cache_param())
            .param(variant_param())
            .timeout(Duration::from_secs(180))
            // Its own buffers, no process-wide state: the compared routines
            // can take turns sample by sample in one worker.
            .lockstep();
        match self.routine {
            Routine::Memcpy => {
                info = info
                    .param(offset_param("offset", "source misalignment from a page boundary, bytes"))
                    .param(offset_param("dst_offset", "destination misalignment from a page boundary, bytes"))
                    .param(nt_param())
            }
            Routine::Memset => {
                info = info
                    .param(offset_param("dst_offset", "destination misalignment from a page boundary, bytes"))
                    .param(nt_param())
            }
            Routine::ClearPage => info = info.param(nt_param()),
            Routine::Strlen => {
                info = info.param(offset_param("offset", "string start misalignment from a page boundary, bytes"))
            }
        }
        info
    }

    fn memory(&self, p: &Params) -> Option<u64> {
        let m = self.params(p).ok()?;
        Some((m.size + m.off.max(m.dst_off) as u64).saturating_mul(self.routine.buffers()))
    }

    fn check(&self, p: &Params) -> Result<()> {
        self.params(p).map(drop)
    }

    fn supported_at(&self, _env: &crate::bench::Env, p: &Params) -> Result<(), crate::bench::Unsupported> {
        // A value out of range is bad input, for `check` to refuse (exit 2),
        // not a point this machine cannot run.
        let Ok(m) = self.params(p) else { return Ok(()) };
        match m.variant {
            Some(v) if m.imp == ImplName::Tuned && !v.is_available() => {
                Err(crate::bench::Unsupported::family(VariantUnavailable {
                    variant: v.name(),
                    cpu: describe(tuned::cpu()),
                }))
            }
            _ => Ok(()),
        }
    }

    fn run(&self, p: &Params, s: &mut Sampler) -> Result<()> {
        let MemParams { imp, size, cold, off, dst_off, nt_threshold, variant } = self.params(p)?;

        // Cache sizes: L1/L2 from sysfs, the last level from the harness when it knows.
        let mut caches = cache::host();
        if let Some(llc) = s.llc_bytes() {
            caches = caches.with_llc(llc);
        }
        let llc = match caches.llc() {
            Some(l) => l,
            None => {
                s.note(format!(
                    "last-level cache size unknown: cold rotation and nt_threshold=auto assume {} MiB",
                    FALLBACK_LLC >> 20
                ));
                FALLBACK_LLC
            }
        };
        // The non-temporal rule (ntrule.rs) from the calling CPU's view of
        // its last-level cache, unless `nt_threshold=` overrides it.
        let llc_view = match sys::task::current_cpu().and_then(|c| cache::llc_share(Path::new("/"), c)) {
            Some(v) => v,
            None => {
                if nt_threshold.is_none() && matches!(self.routine, Routine::Memcpy | Routine::Memset) {
                    s.note(format!("how this CPU shares the last-level cache is unknown (sysfs): nt_threshold=auto takes the whole {} MiB as its own", llc >> 20));
                }
                cache::Llc { bytes: llc, sharing: 1 }
            }
        };
        let share = llc_view.share();
        let touch = match self.routine {
            Routine::Memcpy => Touch::Copy,
            Routine::ClearPage => Touch::Page,
            _ => Touch::Set,
        };
        let nt_threshold = nt_threshold.unwrap_or_else(|| ntrule::auto_threshold(touch, llc_view));

        let imp = match imp {
            ImplName::Naive => Impl::Naive,
            ImplName::Libc => Impl::Libc(Libc::new()),
            ImplName::Tuned => Impl::Tuned(match variant {
                None => Tuned::detect(),
                Some(v) => Tuned::with_variant(v)
                    .ok_or_else(|| anyhow::anyhow!("variant={}: this CPU cannot run it", v.name()))?,
            }),
        };

        let working_set = size * self.routine.buffers();
        s.extra("regime", caches.regime(working_set).to_string());
        s.extra("working_set_bytes", working_set);
        s.extra(
            "caches",
            serde_json::json!(caches
                .levels()
                .iter()
                .map(|(l, b)| serde_json::json!({"level": l, "bytes": b}))
                .collect::<Vec<_>>()),
        );
        self.paths(s, variant);
        if let Impl::Tuned(t) = imp {
            if self.routine != Routine::Strlen {
                s.extra("nt_threshold_bytes", nt_threshold);
                s.extra("llc_share_bytes", share);
                s.extra("streaming", t.variant().has_streaming_stores() && size >= nt_threshold);
            }
        }

        let size = usize::try_from(size)?;
        let nt_threshold = usize::try_from(nt_threshold).unwrap_or(usize::MAX);
        let pt = Point { imp, size, cold, llc, nt_threshold };
        match self.routine {
            Routine::Memcpy => run_copy(s, pt, off, dst_off),
            Routine::Memset => run_set(s, pt, dst_off),
            Routine::ClearPage => run_clear(s, pt),
            Routine::Strlen => run_strlen(s, pt, off),
        }
    }
}

impl MemBench {
    /// Both sides' paths, in every result: the C library's version, the
    /// tuned variant of this point (the rule's or forced) and the C
    /// library's routine its ifunc resolved (the symbol at the address the
    /// loader bound).
    fn paths(&self, s: &mut Sampler, variant: Option<Variant>) {
        s.extra("libc", libc_fns::version());
        s.extra("cpu", describe(tuned::cpu()));
        let tuned_variant = variant.unwrap_or_else(|| tuned::choose(tuned::cpu()));
        s.extra("variant", tuned_variant.name());
        s.extra("variant_by", if variant.is_some() { "variant=" } else { "rule" });
        let libc = Libc::new();
        let entry = match self.routine {
            Routine::Memcpy => libc.memcpy_entry(),
            Routine::Memset | Routine::ClearPage => libc.memset_entry(),
            Routine::Strlen => libc.strlen_entry(),
        };
        match libc_impl::name_at(entry as usize) {
            Ok(n) => s.extra("libc_impl", n),
            Err(e) => s.extra("libc_impl", format!("unavailable: {e}")),
        }
    }
}

/// The CPU as the rule reads it, for results and messages:
/// `amd family 0x19 model 0x11: erms fsrm avx2 avx512`.
fn describe(c: tuned::Cpu) -> String {
    if c.arch != tuned::rule::Arch::X86_64 {
        return format!("{:?}", c.arch).to_lowercase();
    }
    let flags: Vec<&str> = [("erms", c.erms), ("fsrm", c.fsrm), ("avx2", c.avx2), ("avx512", c.avx512)]
        .into_iter()
        .filter_map(|(n, on)| on.then_some(n))
        .collect();
    format!("{} family {:#x} model {:#x}: {}", c.vendor.name(), c.family, c.model, flags.join(" "))
}

/// What one point times, resolved from its parameters and the host: the
/// implementation, the bytes per call, whether the calls rotate through
/// buffers larger than the last-level cache of `llc` bytes (`cold`), and the
/// size from which copies and fills stream. Offsets, which only some
/// routines take, are passed beside it.
#[derive(Clone, Copy)]
struct Point {
    imp: Impl,
    size: usize,
    cold: bool,
    llc: u64,
    nt_threshold: usize,
}

/// Bytes per slot: the size plus its offset, rounded to a cache line.
fn stride(size: usize, off: usize) -> usize {
    round_up((size + off) as u64, 64) as usize
}

fn gbps(bytes: usize) -> impl Fn(u64, f64) -> f64 {
    move |n, t| if t > 0.0 { n as f64 * bytes as f64 / t / 1e9 } else { f64::INFINITY }
}

fn pattern(buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i % 251) as u8 + 1;
    }
}

/// One buffer a point may share with the others of its tie, locked for
/// the length of one timed loop (only the holder of the turn runs, so the
/// lock is never waited for).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn run_copy(s: &mut Sampler, pt: Point, off: usize, dst_off: usize) -> Result<()> {
    let Point { imp, size, cold, llc, nt_threshold: thr } = pt;
    let st = stride(size, off.max(dst_off));
    let rot = Rotation::new(cold, 2 * st as u64, llc);
    s.extra("buffers", rot.slots);
    let pool = s.shared(&format!("memcpy {} x {st}", rot.slots), || {
        let mut src = Arena::new(rot.slots * st)?;
        let mut dst = Arena::new(rot.slots * st)?;
        // Touch every page so no page fault or shared zero page is timed.
        pattern(src.bytes_mut());
        dst.bytes_mut().fill(0x55);
        Ok(Pool::new(Mutex::new((dst, src))))
    })?;
    let slots = Slots { off: dst_off, size, stride: st, rot };
    s.measure(
        |n| {
            let from = pool.walk(rot, n);
            let mut bufs = lock(&pool.bufs);
            let (dst, src) = &mut *bufs;
            let (dst, src) = (dst.bytes_mut(), src.bytes());
            Ok(match imp.callee(thr) {
                None => timed(n, rot, from, |i| {
                    naive::copy(
                        &mut dst[i * st + dst_off..i * st + dst_off + size],
                        &src[i * st + off..i * st + off + size],
                    )
                }),
                Some(c) => calls::time_copy(c, dst, src, off, slots, from, n),
            })
        },
        gbps(size),
    )
}

fn run_set(s: &mut Sampler, pt: Point, dst_off: usize) -> Result<()> {
    let Point { imp, size, cold, llc, nt_threshold: thr } = pt;
    let st = stride(size, dst_off);
    let rot = Rotation::new(cold, st as u64, llc);
    s.extra("buffers", rot.slots);
    let pool = s.shared(&format!("memset {} x {st}", rot.slots), || {
        let mut dst = Arena::new(rot.slots * st)?;
        dst.bytes_mut().fill(0x55);
        Ok(Pool::new(Mutex::new(dst)))
    })?;
    s.measure(
        |n| {
            let c = (n & 0x7F) as u8 | 1;
            let from = pool.walk(rot, n);
            let mut buf = lock(&pool.bufs);
            let dst = buf.bytes_mut();
            Ok(match imp.callee(thr) {
                None => timed(n, rot, from, |i| naive::set(&mut dst[i * st + dst_off..i * st + dst_off + size], c)),
                Some(f) => calls::time_set(f, dst, c, Slots { off: dst_off, size, stride: st, rot }, from, n),
            })
        },
        gbps(size),
    )
}

fn run_clear(s: &mut Sampler, pt: Point) -> Result<()> {
    let Point { imp, size, cold, llc, nt_threshold: thr } = pt;
    let pages = size / PAGE;
    let st = pages * PAGE;
    if pages * PAGE != size {
        // One text for every such size, so a sweep's remarks give it one line;
        // the bytes cleared are in the result's `bytes_per_call`.
        s.note(
            "size is not a whole number of 4 KiB pages: the whole pages in it are cleared per call (bytes_per_call)"
                .to_string(),
        );
    }
    let nt = st >= thr;
    let rot = Rotation::new(cold, st as u64, llc);
    s.extra("buffers", rot.slots);
    s.extra("bytes_per_call", st);
    let pool = s.shared(&format!("clear_page {} x {st}", rot.slots), || {
        let mut buf = Arena::new(rot.slots * st)?;
        buf.bytes_mut().fill(0x55);
        Ok(Pool::new(Mutex::new(buf)))
    })?;
    s.measure(
        |n| {
            let from = pool.walk(rot, n);
            let mut guard = lock(&pool.bufs);
            let buf = guard.bytes_mut();
            Ok(match imp {
                Impl::Naive => timed(n, rot, from, |i| {
                    buf[i * st..(i + 1) * st].chunks_exact_mut(PAGE).for_each(|pg| naive::set(pg, 0))
                }),
                Impl::Libc(l) => timed(n, rot, from, |i| {
                    buf[i * st..(i + 1) * st].chunks_exact_mut(PAGE).for_each(|pg| l.set(pg, 0))
                }),
                Impl::Tuned(t) => timed(n, rot, from, |i| {
                    buf[i * st..(i + 1) * st].chunks_exact_mut(PAGE).for_each(|pg| t.clear_page(pg, nt))
                }),
            })
        },
        gbps(st),
    )
}

fn run_strlen(s: &mut Sampler, pt: Point, off: usize) -> Result<()> {
    // strlen never streams: the threshold is not used.
    let Point { imp, size, cold, llc, .. } = pt;
    let st = stride(size, off);
    let rot = Rotation::new(cold, st as u64, llc);
    s.extra("buffers", rot.slots);
    // Written once, by whichever point makes it, and only read after.
    let pool = s.shared(&format!("strlen {size}+{off} {} x {st}", rot.slots), || {
        let mut buf = Arena::new(rot.slots * st)?;
        let b = buf.bytes_mut();
        for i in 0..rot.slots {
            let str_bytes = &mut b[i * st + off..i * st + off + size];
            for (j, c) in str_bytes.iter_mut().enumerate() {
                *c = b'a' + (j % 26) as u8;
            }
            str_bytes[size - 1] = 0;
        }
        Ok(Pool::new(buf))
    })?;
    // Every slot is checked once to hold a string ending in its only NUL.
    let strings = Strings::new(pool.bufs.bytes(), Slots { off, size, stride: st, rot })?;
    let want = size - 1;
    let mut wrong = false;
    s.measure(
        |n| {
            let from = pool.walk(rot, n);
            let (d, sum) = match imp.callee(usize::MAX) {
                None => {
                    let mut acc = 0usize;
                    (timed(n, rot, from, |i| acc += naive::strlen(strings.get(i))), acc)
                }
                Some(f) => calls::time_strlen(f, &strings, from, n),
            };
            wrong |= sum != want.wrapping_mul(n as usize);
            Ok(d)
        },
        gbps(size),
    )?;
    if wrong {
        anyhow::bail!("strlen returned a wrong length during the run");
    }
    Ok(())
}

#[cfg(test)]
#[path = "bench_tests.rs"]
mod tests;

/// `variant=` names a tuned path this CPU cannot run.
#[derive(Debug, thiserror::Error)]
#[error("variant={variant}: this CPU ({cpu}) cannot run it")]
struct VariantUnavailable {
    variant: &'static str,
    cpu: String,
}
