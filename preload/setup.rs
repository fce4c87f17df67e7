//! Choosing the variant (on the first call) and the non-temporal thresholds
//! (a constructor reading sysfs), and the dispatch to the shared routines.
//! The constructor calls `open`, `read`, `close` and `sched_getcpu` of the C
//! library, none of which is one of the four names defined here.

use crate::ntrule::{self, Touch};
use crate::rule::{self, Variant};
use crate::{COPY_NT_MIN, SET_NT_MIN};
use core::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// 0: not chosen yet; then one of the constants below.
pub(crate) static LEVEL: AtomicU8 = AtomicU8::new(0);
const PORTABLE: u8 = 1;
#[cfg(target_arch = "x86_64")]
const SSE2: u8 = 2;
/// The naked entries in `lib.rs` jump to the AVX2 routines on this value.
#[cfg(target_arch = "x86_64")]
pub(crate) const AVX2: u8 = 3;
/// The two AVX-512 variants are the highest values on x86-64, so the naked
/// entries in `lib.rs` test for either with one compare (`jb`).
#[cfg(target_arch = "x86_64")]
pub(crate) const AVX512: u8 = 4;
#[cfg(target_arch = "x86_64")]
const AVX512_MOVSB: u8 = 5;
#[cfg(target_arch = "aarch64")]
const NEON: u8 = 6;

#[inline(always)]
fn level() -> u8 {
    let l = LEVEL.load(Relaxed);
    if l != 0 {
        l
    } else {
        choose()
    }
}

/// The best variant this CPU and OS run (idempotent: racing threads store
/// the same value).
#[cold]
#[inline(never)]
fn choose() -> u8 {
    let l = detect();
    LEVEL.store(l, Relaxed);
    l
}

/// The variant the rule (`src/bench/mem/tuned/rule.rs`, shared with
/// kdelta's benchmarks) chooses for this CPU.
fn detect() -> u8 {
    match rule::choose(rule::Cpu::current()) {
        #[cfg(target_arch = "x86_64")]
        Variant::Avx512Movsb => AVX512_MOVSB,
        #[cfg(target_arch = "x86_64")]
        Variant::Avx512 => AVX512,
        #[cfg(target_arch = "x86_64")]
        Variant::Avx2 => AVX2,
        #[cfg(target_arch = "x86_64")]
        Variant::Sse2 => SSE2,
        #[cfg(target_arch = "aarch64")]
        Variant::Neon => NEON,
        _ => PORTABLE,
    }
}

/// The disjoint copy of the chosen variant.
///
/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, no overlap.
#[inline(always)]
pub unsafe fn copy(d: *mut u8, s: *const u8, n: usize, nt_min: usize) {
    unsafe {
        match level() {
            #[cfg(target_arch = "x86_64")]
            AVX512_MOVSB => crate::avx512::kdelta_copy_avx512_movsb(d, s, n, nt_min),
            #[cfg(target_arch = "x86_64")]
            AVX512 => crate::avx512::kdelta_copy_avx512(d, s, n, nt_min),
            #[cfg(target_arch = "x86_64")]
            AVX2 => crate::avx2::kdelta_copy_avx2(d, s, n, nt_min),
            #[cfg(target_arch = "x86_64")]
            SSE2 => crate::x86::copy_sse2(d, s, n, nt_min),
            #[cfg(target_arch = "aarch64")]
            NEON => crate::neon::copy(d, s, n),
            _ => crate::portable::copy(d, s, n),
        }
    }
}

/// The fill of the chosen variant.
///
/// # Safety
/// `d` valid for `n` writes.
#[inline(always)]
pub unsafe fn set(d: *mut u8, c: u8, n: usize, nt_min: usize) {
    unsafe {
        match level() {
            #[cfg(target_arch = "x86_64")]
            AVX512 | AVX512_MOVSB => crate::avx512_set::kdelta_set_avx512(d, c, n, nt_min),
            #[cfg(target_arch = "x86_64")]
            AVX2 => crate::avx2::kdelta_set_avx2(d, c, n, nt_min),
            #[cfg(target_arch = "x86_64")]
            SSE2 => crate::x86::set_sse2(d, c, n, nt_min),
            #[cfg(target_arch = "aarch64")]
            NEON => crate::neon::set(d, c, n),
            _ => crate::portable::set(d, c, n),
        }
    }
}

/// The strlen of every variant but AVX-512, and before the first choice:
/// the exported `strlen` (`lib.rs`) tests [`LEVEL`] for AVX-512 itself and
/// jumps here otherwise.
///
/// # Safety
/// `p` starts a NUL-terminated string.
#[inline(never)]
pub unsafe extern "C" fn strlen_other(p: *const u8) -> usize {
    unsafe {
        match level() {
            #[cfg(target_arch = "x86_64")]
            AVX512 | AVX512_MOVSB => crate::avx512::kdelta_strlen_avx512(p),
            #[cfg(target_arch = "x86_64")]
            AVX2 => crate::avx2::kdelta_strlen_avx2(p),
            #[cfg(target_arch = "x86_64")]
            SSE2 => crate::x86::strlen_sse2(p),
            #[cfg(target_arch = "aarch64")]
            NEON => crate::neon::strlen(p),
            _ => crate::portable::strlen(p),
        }
    }
}

// ------------------------------------------------------------ constructor ----

extern "C" {
    fn open(path: *const u8, flags: i32, ...) -> i32;
    fn read(fd: i32, buf: *mut u8, n: usize) -> isize;
    fn close(fd: i32) -> i32;
    fn sched_getcpu() -> i32;
}

/// Runs when the library is loaded: the thresholds from the loading CPU's
/// last-level cache and its sharing.
#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

extern "C" fn init() {
    let _ = PORTABLE;
    choose();
    let cpu = unsafe { sched_getcpu() };
    let cpu = if cpu < 0 { 0 } else { cpu as u32 };
    if let Some(llc) = llc_of(cpu) {
        COPY_NT_MIN.store(clamp(ntrule::auto_threshold(Touch::Copy, llc)), Relaxed);
        SET_NT_MIN.store(clamp(ntrule::auto_threshold(Touch::Set, llc)), Relaxed);
    }
}

fn clamp(v: u64) -> usize {
    if v > usize::MAX as u64 {
        usize::MAX
    } else {
        v as usize
    }
}

/// A path being built, NUL-terminated when used.
struct PathBuf {
    buf: [u8; 96],
    len: usize,
}

impl PathBuf {
    fn push(&mut self, s: &[u8]) {
        for &b in s {
            // Keep one byte for the NUL.
            if self.len + 1 < self.buf.len() {
                if let Some(slot) = self.buf.get_mut(self.len) {
                    *slot = b;
                    self.len += 1;
                }
            }
        }
    }

    fn push_num(&mut self, mut v: u32) {
        let mut digits = [0u8; 10];
        let mut k = 0;
        for slot in digits.iter_mut() {
            *slot = b'0' + (v % 10) as u8;
            k += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for d in digits.iter().take(k).rev() {
            self.push(core::slice::from_ref(d));
        }
    }
}

/// Read a small sysfs file into `out`; the bytes read.
fn read_file(path: &PathBuf, out: &mut [u8; 64]) -> Option<usize> {
    // `push` left at least one zero byte after the path: it is terminated.
    let p = &path.buf;
    const O_RDONLY_CLOEXEC: i32 = 0o2000000;
    // SAFETY: `p` is NUL-terminated (the buffer starts zeroed and `push`
    // never fills its last byte); `out` is writable for its length.
    unsafe {
        let fd = open(p.as_ptr(), O_RDONLY_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let n = read(fd, out.as_mut_ptr(), out.len());
        close(fd);
        if n <= 0 {
            None
        } else {
            Some(n as usize)
        }
    }
}

/// The calling CPU's highest-level data or unified cache and how many CPUs
/// share it (the benchmark's `cache::llc_share`, without the standard library).
fn llc_of(cpu: u32) -> Option<ntrule::Llc> {
    let mut best: Option<(u32, ntrule::Llc)> = None;
    let mut next = 0;
    while next < 16 {
        let index = next;
        next += 1;
        let file = |name: &[u8], out: &mut [u8; 64]| -> Option<usize> {
            let mut p = PathBuf { buf: [0; 96], len: 0 };
            p.push(b"/sys/devices/system/cpu/cpu");
            p.push_num(cpu);
            p.push(b"/cache/index");
            p.push_num(index);
            p.push(b"/");
            p.push(name);
            read_file(&p, out)
        };
        let mut buf = [0u8; 64];
        let Some(n) = file(b"level", &mut buf) else { break };
        let level = buf.get(..n).and_then(ntrule::parse_cache_size).unwrap_or(0) as u32;
        let Some(n) = file(b"type", &mut buf) else { continue };
        if buf.get(..n).is_some_and(|t| t.starts_with(b"Instruction")) {
            continue;
        }
        let Some(n) = file(b"size", &mut buf) else { continue };
        let Some(size) = buf.get(..n).and_then(ntrule::parse_cache_size) else { continue };
        let Some(n) = file(b"shared_cpu_list", &mut buf) else { continue };
        let Some(sharing) = buf.get(..n).and_then(ntrule::count_cpu_list) else { continue };
        if best.map_or(true, |(l, _)| level > l) {
            best = Some((level, ntrule::Llc { bytes: size, sharing }));
        }
    }
    best.map(|(_, s)| s)
}
