//! kdelta's own tuned memory and string routines, chosen at run time by CPU
//! features. ALL of the `mem` family's tuned `unsafe` code lives in this
//! module and its per-ISA submodules; everything outside sees the safe
//! [`Tuned`] handle.
//!
//! Techniques (the 2001 study's, in today's form):
//! - copies and fills up to 128 bytes (AVX2 copies and fills: 256, AVX-512 copies: 512) are two to eight overlapping unaligned
//!   moves of the widest fitting width (head and tail), with no byte loop and
//!   one branch per size class;
//! - longer ones store an unaligned head, run the main loop with *aligned*
//!   stores of four vectors per iteration, and finish with an overlapping
//!   unaligned tail loaded before the loop; on AVX-512 machines (which all
//!   have fast string moves) long temporal fills and copies are one
//!   `rep stosb` / `rep movsb`, as the C library's are there, and on AVX2
//!   machines long temporal fills (`rule.rs` says where each starts);
//! - at or above a threshold (the caller's, by the non-temporal rule of
//!   `super::ntrule`: bytes touched against the last-level cache as this
//!   CPU sees it in sysfs) the main loop uses non-temporal stores, which claim
//!   the cache line without reading it first (the heir of Alpha's `wh64`) and
//!   keep the copy from evicting the whole cache, with a software prefetch of
//!   the source ahead of the loads, and an `sfence` at the end so the weakly
//!   ordered stores are globally visible before the routine returns;
//! - strlen compares a whole vector against zero and takes the trailing-zero
//!   count of the comparison mask (Alpha's `cttz`).
//!
//! # The safety argument, once
//! The copy and fill routines read and write exactly the bytes of the slices
//! they are given: every pointer they form lies in `[p, p + n)` of a slice of
//! length `n` (the size classes are chosen so that `n - w >= 0` for every tail
//! access of width `w`), and source and destination never overlap because one
//! is `&mut` and the other `&`. Unaligned accesses use the `loadu`/`storeu`
//! forms or `read_unaligned`/`write_unaligned`; aligned stores are issued only
//! at addresses rounded up to the vector width.
//!
//! strlen is different: the length is unknown until the NUL is found, so it
//! reads whole *aligned blocks* (the vector width, later four vectors). It only
//! ever loads an aligned block that holds at least one byte it must read (a
//! byte at or after the start and not after the terminating NUL). Memory
//! protection works on pages, and the block size (16 to 256 bytes) divides the
//! page size (4096 or larger), so such a block lies inside one page, which is
//! mapped because it holds a byte of the string: the load cannot fault.
//! The one exception is the *first* load of the x86-64 variants: when the
//! vector-wide window `[start, start + VEC)` does not cross a 4096-byte
//! boundary (`start % 4096 <= 4096 - VEC`), it is loaded unaligned at the
//! start, as C libraries do, which saves the shift and covers more of a short
//! string. That window lies in the 4096-byte-aligned chunk holding `start`;
//! every x86-64 page size is a multiple of 4096, so the chunk lies in one
//! page, which is mapped because it holds the string's first byte (or its
//! NUL). Otherwise (the window would reach into the next page, which may be
//! unmapped) the aligned block holding `start` is loaded instead. The
//! bytes it reads outside the string (before the start, after the NUL) only
//! enter the comparison mask, where they are shifted out or lie above the
//! first set bit. On x86-64 and aarch64 these block loads are inline assembly,
//! so they are machine loads outside Rust's object model (reading outside the
//! `CStr`'s bytes through a Rust pointer would not be); the portable fallback
//! does the same with aligned word reads through pointers, which is what C
//! libraries do but is formally outside Rust's rules (Miri would reject it);
//! it is used only where no vector variant exists or when forced in tests.
//! `tests/it/mem_guard.rs` places strings ending just before a `PROT_NONE` page
//! at every alignment, and strings starting within a vector width of a page
//! end (so the unaligned first load would cross into the guard page if it
//! were taken), to check the bound.

use std::ffi::CStr;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod avx512_set;
#[cfg(target_arch = "aarch64")]
mod neon;
mod portable;
pub(crate) mod rule;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use rule::{choose, Cpu, Variant};

/// This CPU as the rule reads it, read once (`cpuid` traps to the
/// hypervisor in a VM, a microsecond or more a leaf).
pub fn cpu() -> Cpu {
    static CPU: std::sync::OnceLock<Cpu> = std::sync::OnceLock::new();
    *CPU.get_or_init(Cpu::current)
}

impl Variant {
    /// Whether this CPU can run the variant.
    pub fn is_available(self) -> bool {
        cpu().runs(self)
    }
}

/// A handle to one *available* variant: it can only be made by
/// [`Tuned::detect`] or [`Tuned::with_variant`], which check the CPU, so
/// every call through it runs instructions this CPU has.
///
/// Like glibc's IFUNCs, the routines are resolved once, when the handle is
/// made, and each call is one indirect call: the same cost as the `libc`
/// variant's call through a pointer, with no per-call dispatch on the
/// variant (which measured a few cycles per call on short copies).
#[derive(Clone, Copy)]
pub struct Tuned {
    variant: Variant,
    fns: Routines,
}

/// One variant's routines, in the C calling convention (which the AVX-512
/// routines, written in assembly, use). Their contracts are the module's.
#[derive(Clone, Copy)]
struct Routines {
    /// `copy(d, s, n, nt_min)`: streaming stores when `n >= nt_min`, a
    /// compare the routine makes only on its long path (as glibc's), so a
    /// short call pays nothing for the rule
    copy: unsafe extern "C" fn(*mut u8, *const u8, usize, usize),
    /// `set(d, byte, n, nt_min)`, likewise
    set: unsafe extern "C" fn(*mut u8, u8, usize, usize),
    /// `clear_page(d, nt)`, `d` 4096-aligned
    clear_page: unsafe extern "C" fn(*mut u8, bool),
    /// `strlen(p)`
    strlen: unsafe extern "C" fn(*const u8) -> usize,
}

impl std::fmt::Debug for Tuned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tuned").field("variant", &self.variant).finish()
    }
}

impl PartialEq for Tuned {
    fn eq(&self, other: &Tuned) -> bool {
        self.variant == other.variant
    }
}
impl Eq for Tuned {}

// The portable and NEON routines with the common signatures (neither has
// streaming stores). SAFETY, for all of them: the caller upholds the
// routine's contract (module docs), and `Tuned` is made for NEON only when
// the CPU has it.
unsafe extern "C" fn copy_portable(d: *mut u8, s: *const u8, n: usize, _nt_min: usize) {
    unsafe { portable::copy(d, s, n) }
}
unsafe extern "C" fn set_portable(d: *mut u8, c: u8, n: usize, _nt_min: usize) {
    unsafe { portable::set(d, c, n) }
}
unsafe extern "C" fn clear_page_portable(d: *mut u8, _nt: bool) {
    unsafe { portable::set(d, 0, PAGE) }
}
unsafe extern "C" fn strlen_portable(p: *const u8) -> usize {
    unsafe { portable::strlen(p) }
}
#[cfg(target_arch = "aarch64")]
unsafe extern "C" fn copy_neon(d: *mut u8, s: *const u8, n: usize, _nt_min: usize) {
    unsafe { neon::copy(d, s, n) }
}
#[cfg(target_arch = "aarch64")]
unsafe extern "C" fn set_neon(d: *mut u8, c: u8, n: usize, _nt_min: usize) {
    unsafe { neon::set(d, c, n) }
}
#[cfg(target_arch = "aarch64")]
unsafe extern "C" fn clear_page_neon(d: *mut u8, _nt: bool) {
    unsafe { neon::set(d, 0, PAGE) }
}
#[cfg(target_arch = "aarch64")]
unsafe extern "C" fn strlen_neon(p: *const u8) -> usize {
    unsafe { neon::strlen(p) }
}

/// The routines of `v`. Calling them is sound only when `v.is_available()`
/// (the `Tuned` constructors check it).
fn routines(v: Variant) -> Routines {
    match v {
        #[cfg(target_arch = "x86_64")]
        Variant::Avx512Movsb => Routines {
            copy: avx512::kdelta_copy_avx512_movsb,
            set: avx512_set::kdelta_set_avx512,
            clear_page: x86::clear_page_avx2,
            strlen: avx512::kdelta_strlen_avx512,
        },
        #[cfg(target_arch = "x86_64")]
        Variant::Avx512 => Routines {
            copy: avx512::kdelta_copy_avx512,
            set: avx512_set::kdelta_set_avx512,
            clear_page: x86::clear_page_avx2,
            strlen: avx512::kdelta_strlen_avx512,
        },
        #[cfg(target_arch = "x86_64")]
        Variant::Avx2 => Routines {
            copy: avx2::kdelta_copy_avx2,
            set: avx2::kdelta_set_avx2,
            clear_page: x86::clear_page_avx2,
            strlen: avx2::kdelta_strlen_avx2,
        },
        #[cfg(target_arch = "x86_64")]
        Variant::Sse2 => Routines {
            copy: x86::copy_sse2,
            set: x86::set_sse2,
            clear_page: x86::clear_page_sse2,
            strlen: x86::strlen_sse2,
        },
        #[cfg(target_arch = "aarch64")]
        Variant::Neon => Routines { copy: copy_neon, set: set_neon, clear_page: clear_page_neon, strlen: strlen_neon },
        _ => Routines {
            copy: copy_portable,
            set: set_portable,
            clear_page: clear_page_portable,
            strlen: strlen_portable,
        },
    }
}

impl Tuned {
    /// The variant the rule (`rule.rs`) chooses for this CPU.
    pub fn detect() -> Tuned {
        Tuned::make(choose(cpu()))
    }

    /// Force one variant (tests, comparisons); `None` when this CPU lacks it.
    pub fn with_variant(variant: Variant) -> Option<Tuned> {
        variant.is_available().then(|| Tuned::make(variant))
    }

    /// Only for an available variant.
    fn make(variant: Variant) -> Tuned {
        Tuned { variant, fns: routines(variant) }
    }

    /// Every variant this CPU runs, in [`Variant::ALL`]'s order.
    pub fn available() -> Vec<Variant> {
        Variant::ALL.into_iter().filter(|v| v.is_available()).collect()
    }

    pub fn variant(self) -> Variant {
        self.variant
    }

    /// The entry points, in the C calling convention with the contracts in
    /// [`Routines`], for the timed loop that calls them from assembly
    /// (`calls.rs`); calling them is sound only under those contracts.
    pub fn copy_entry(self) -> *const () {
        self.fns.copy as *const ()
    }
    pub fn set_entry(self) -> *const () {
        self.fns.set as *const ()
    }
    pub fn strlen_entry(self) -> *const () {
        self.fns.strlen as *const ()
    }

    /// `dst.copy_from_slice(src)`, with non-temporal stores when
    /// `dst.len() >= nt_threshold`.
    ///
    /// # Panics
    /// When the lengths differ (a caller's bug, as for `copy_from_slice`).
    #[inline]
    pub fn copy(self, dst: &mut [u8], src: &[u8], nt_threshold: usize) {
        assert_eq!(dst.len(), src.len(), "tuned copy: source and destination lengths differ");
        let n = dst.len();
        let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
        // SAFETY: `d` is valid for `n` writes and `s` for `n` reads (slices of
        // length `n`), they cannot overlap (`&mut` vs `&`), and `fns.copy` is
        // the routine of a variant available on this CPU (the `Tuned`
        // invariant). The callee touches only `[d, d + n)` and `[s, s + n)`
        // (module docs).
        unsafe { (self.fns.copy)(d, s, n, nt_threshold) }
    }

    /// `dst.fill(byte)`, with non-temporal stores when `dst.len() >= nt_threshold`.
    #[inline]
    pub fn set(self, dst: &mut [u8], byte: u8, nt_threshold: usize) {
        let n = dst.len();
        let d = dst.as_mut_ptr();
        // SAFETY: `d` is valid for `n` writes; `fns.set` is the routine of an
        // available variant; the callee writes only `[d, d + n)`.
        unsafe { (self.fns.set)(d, byte, n, nt_threshold) }
    }

    /// Zero one whole 4096-byte page: aligned stores only, no head or tail.
    ///
    /// # Panics
    /// When `page` is not 4096 bytes long and 4096-aligned (a caller's bug).
    #[inline]
    pub fn clear_page(self, page: &mut [u8], nt: bool) {
        assert!(
            page.len() == PAGE && page.as_ptr() as usize % PAGE == 0,
            "clear_page wants one aligned 4096-byte page"
        );
        let d = page.as_mut_ptr();
        // SAFETY: `d` is 4096-aligned and valid for 4096 writes; `fns.clear_page`
        // is the routine of an available variant; the callee writes exactly
        // `[d, d + 4096)`, with one `rep stosb` or stores of at most 32
        // bytes at multiples of their width.
        unsafe { (self.fns.clear_page)(d, nt) }
    }

    /// The length of `s` (bytes before its NUL), found by whole-block compares.
    #[inline]
    pub fn strlen(self, s: &CStr) -> usize {
        let p = s.as_ptr() as *const u8;
        // SAFETY: `p` starts a NUL-terminated string in mapped memory (a
        // `CStr`); `fns.strlen` is the routine of an available variant; the
        // callee loads only aligned blocks holding a byte of the string or
        // its NUL, or a first window inside the page holding the start
        // (module docs).
        unsafe { (self.fns.strlen)(p) }
    }
}

/// The page size `clear_page` works on.
pub(crate) const PAGE: usize = 4096;
