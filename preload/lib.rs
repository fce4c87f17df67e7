//! `libkdelta_mem.so`: kdelta's tuned routines under the C library's names,
//! for `LD_PRELOAD` (the `preload=tuned` configuration modifier).
//!
//! It exports exactly `memcpy`, `memmove`, `memset` and `strlen`, with the C
//! library's semantics, and nothing else (`tests/it/mem_preload.rs` checks the
//! dynamic symbol table, the semantics through a C program at random sizes,
//! offsets and overlaps between guard pages, and that no instruction calls or
//! jumps to any of the four names).
//!
//! Built by kdelta's build script (`preload/build.rs`) with `rustc` directly,
//! as a `no_std` `cdylib` with `panic=abort`: no standard library is linked,
//! so no code here calls the C library's (or, once preloaded, its own)
//! `memcpy`; `#![no_builtins]` keeps the compiler from turning the copy
//! loops below into calls of the very functions they implement. The routines
//! are the benchmark's own sources (`src/bench/mem/tuned/`), included by
//! path, and the non-temporal rule is `src/bench/mem/ntrule.rs`.
//!
//! - `memcpy` is `memmove`: like glibc on x86-64 (where both are one
//!   routine), a `memcpy` whose buffers overlap, which real programs commit,
//!   copies as `memmove` would. Disjoint buffers take the tuned copy; an
//!   overlap takes a forward or backward loop that loads every byte before
//!   any store can reach it, without streaming stores.
//! - The variant (AVX-512 in its Intel or AMD shape, AVX2, SSE2 on x86-64;
//!   NEON on aarch64) is chosen on the first call by the rule in
//!   `src/bench/mem/tuned/rule.rs` (`cpuid` and `xgetbv`), the one the
//!   benchmark's `Tuned::detect` follows.
//! - Non-temporal stores follow the rule (`ntrule.rs`: copies against the
//!   calling CPU's share of its last-level cache, fills against twice the
//!   whole cache), read once from sysfs by a constructor; until then, or
//!   when sysfs does not say, the routines never stream (as glibc 2.36's
//!   memset never does).

#![no_std]
#![no_builtins]
#![allow(dead_code)]

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("libkdelta_mem.so is written for x86-64 and aarch64 only");

#[path = "../src/bench/mem/ntrule.rs"]
mod ntrule;
#[path = "../src/bench/mem/tuned/portable.rs"]
mod portable;
#[path = "../src/bench/mem/tuned/rule.rs"]
mod rule;

#[cfg(target_arch = "x86_64")]
#[path = "../src/bench/mem/tuned/avx2.rs"]
mod avx2;
#[cfg(target_arch = "x86_64")]
#[path = "../src/bench/mem/tuned/avx512.rs"]
mod avx512;
#[cfg(target_arch = "x86_64")]
#[path = "../src/bench/mem/tuned/avx512_set.rs"]
mod avx512_set;
#[cfg(target_arch = "x86_64")]
#[path = "../src/bench/mem/tuned/x86.rs"]
mod x86;

#[cfg(target_arch = "aarch64")]
#[path = "../src/bench/mem/tuned/neon.rs"]
mod neon;

mod overlap;
mod setup;

use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The page size the shared sources' page clear uses (not exported).
const PAGE: usize = 4096;

/// The smallest copy and fill sizes that stream (`usize::MAX`: never),
/// set by the constructor in `setup`.
static COPY_NT_MIN: AtomicUsize = AtomicUsize::new(usize::MAX);
static SET_NT_MIN: AtomicUsize = AtomicUsize::new(usize::MAX);

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Nothing here can panic (no indexing, no arithmetic that checks in
    // release); should it ever, stop rather than unwind through C frames.
    loop {
        core::hint::spin_loop();
    }
}

/// Copy `n` bytes from `s` to `d`, whether or not they overlap.
///
/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads (C's contract).
#[inline(always)]
unsafe fn move_bytes(d: *mut u8, s: *const u8, n: usize) {
    let (du, su) = (d as usize, s as usize);
    if du.wrapping_sub(su) >= n && su.wrapping_sub(du) >= n {
        // Disjoint: the tuned copy.
        unsafe { setup::copy(d, s, n, COPY_NT_MIN.load(Relaxed)) }
    } else if du < su {
        unsafe { overlap::forward(d, s, n) }
    } else if du > su {
        unsafe { overlap::backward(d, s, n) }
    }
}

/// Every move the x86-64 entries below do not make themselves, and the
/// whole of `memcpy` and `memmove` elsewhere.
///
/// # Safety
/// C's contract: `d` valid for `n` writes, `s` for `n` reads.
unsafe extern "C" fn move_general(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
    unsafe { move_bytes(d, s, n) };
    d
}

/// `memcpy` and `memmove` on x86-64: a move of at most 512 bytes on an
/// AVX-512 machine jumps to the AVX-512 copy, and one of at most 256 bytes
/// on an AVX2 machine to the AVX2 copy, with no overlap test, because every
/// size class up to those sizes loads all its bytes before it stores any
/// (`src/bench/mem/tuned/avx512.rs`, `avx2.rs`), which is `memmove`'s
/// contract too (glibc relies on the same for its small moves); the copies
/// read their threshold argument (rcx, left as it came) only above those
/// sizes, and return `d` up to them. Everything else, and every call
/// before the variant is chosen, jumps to [`move_general`]. Written as a naked function for the reason
/// `strlen` is: the Rust dispatch saved five registers, tested for overlap
/// and called through the GOT, 3.8 ns against glibc's 2.2 ns for a 128-byte
/// copy (a C loop through a function pointer, pinned).
#[cfg(target_arch = "x86_64")]
macro_rules! move_entry {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// C's contract: `d` valid for `n` writes, `s` for `n` reads.
        #[no_mangle]
        #[unsafe(naked)]
        pub unsafe extern "C" fn $name(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
            core::arch::naked_asm!(
                "cmp rdx, {small}",
                "ja {general}",
                "cmp byte ptr [rip + {level}], {avx2}",
                "jb {general}",
                "ja {fast}",
                "cmp rdx, {small2}",
                "ja {general}",
                "jmp {fast2}",
                small = const 512,
                small2 = const 256,
                level = sym setup::LEVEL,
                avx2 = const setup::AVX2,
                general = sym move_general,
                fast = sym avx512::kdelta_copy_avx512,
                fast2 = sym avx2::kdelta_copy_avx2,
            )
        }
    };
}

#[cfg(target_arch = "x86_64")]
move_entry!(
    /// C's `memcpy`; overlapping buffers are copied as by `memmove`.
    memcpy
);
#[cfg(target_arch = "x86_64")]
move_entry!(
    /// C's `memmove`.
    memmove
);

/// C's `memcpy`; overlapping buffers are copied as by `memmove`.
///
/// # Safety
/// C's contract: `d` valid for `n` writes, `s` for `n` reads.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn memcpy(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
    unsafe { move_general(d, s, n) }
}

/// C's `memmove`.
///
/// # Safety
/// C's contract: `d` valid for `n` writes, `s` for `n` reads.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn memmove(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
    unsafe { move_general(d, s, n) }
}

/// C's `memset`: the low byte of `c`, `n` times.
///
/// # Safety
/// C's contract: `d` valid for `n` writes.
#[no_mangle]
pub unsafe extern "C" fn memset(d: *mut u8, c: i32, n: usize) -> *mut u8 {
    unsafe { setup::set(d, c as u8, n, SET_NT_MIN.load(Relaxed)) };
    d
}

/// C's `strlen`. On x86-64 a load, a compare and a direct jump to the
/// AVX-512 or AVX2 routine (or to `setup::strlen_other`), written as a naked
/// function: compiled from Rust the dispatch saved a register on the stack,
/// ran four compares and jumped through the GOT, a cycle in ten on warm
/// strings under ~128 bytes (issue 21). It jumps to neither of the four
/// names.
///
/// # Safety
/// C's contract: `p` starts a NUL-terminated string.
#[cfg(target_arch = "x86_64")]
#[no_mangle]
#[unsafe(naked)]
pub unsafe extern "C" fn strlen(p: *const u8) -> usize {
    core::arch::naked_asm!(
        "cmp byte ptr [rip + {level}], {avx2}",
        "jb {other}",
        "ja {fast}",
        "jmp {fast2}",
        level = sym setup::LEVEL,
        avx2 = const setup::AVX2,
        other = sym setup::strlen_other,
        fast = sym avx512::kdelta_strlen_avx512,
        fast2 = sym avx2::kdelta_strlen_avx2,
    )
}

/// C's `strlen`.
///
/// # Safety
/// C's contract: `p` starts a NUL-terminated string.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn strlen(p: *const u8) -> usize {
    unsafe { setup::strlen_other(p) }
}
