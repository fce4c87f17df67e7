//! x86-64 variants: AVX2 (32-byte vectors) and SSE2 (16-byte vectors). The
//! AVX2 entry points are in assembly (`avx2.rs`); the AVX2 routines here
//! are its long copies, its streaming fills and every variant's page clear.
//! Safety contracts are the module's (`super` docs): callers pass pointers
//! valid for `n` bytes (non-overlapping for copies) and call the AVX2
//! functions only when the CPU has AVX2.

use super::portable::{copy_le16, set_le16};
use core::arch::asm;
use core::arch::x86_64::*;

/// How far ahead of the loads the non-temporal loops prefetch the source.
const PREFETCH_AHEAD: usize = 512;

/// The smallest page size on x86-64; every page size is a multiple of it.
const PAGE_MIN: usize = 4096;

// ---------------------------------------------------------------- AVX2 ----

/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, no overlap, AVX2 present.
#[target_feature(enable = "avx2")]
pub(super) unsafe extern "C" fn copy_avx2(d: *mut u8, s: *const u8, n: usize, nt_min: usize) {
    type V = __m256i;
    const VW: usize = 32;
    if n <= 128 {
        return copy_le128_avx2(d, s, n);
    }
    // n > 128: the last four vectors, loaded before the loop, stored after it.
    let t0 = _mm256_loadu_si256(s.add(n - 4 * VW) as *const V);
    let t1 = _mm256_loadu_si256(s.add(n - 3 * VW) as *const V);
    let t2 = _mm256_loadu_si256(s.add(n - 2 * VW) as *const V);
    let t3 = _mm256_loadu_si256(s.add(n - VW) as *const V);
    if n <= 256 {
        // Four vectors from each end cover everything, with no loop.
        let h0 = _mm256_loadu_si256(s as *const V);
        let h1 = _mm256_loadu_si256(s.add(VW) as *const V);
        let h2 = _mm256_loadu_si256(s.add(2 * VW) as *const V);
        let h3 = _mm256_loadu_si256(s.add(3 * VW) as *const V);
        _mm256_storeu_si256(d as *mut V, h0);
        _mm256_storeu_si256(d.add(VW) as *mut V, h1);
        _mm256_storeu_si256(d.add(2 * VW) as *mut V, h2);
        _mm256_storeu_si256(d.add(3 * VW) as *mut V, h3);
    } else {
        copy_blocks_avx2(d, s, n, n >= nt_min);
    }
    _mm256_storeu_si256(d.add(n - 4 * VW) as *mut V, t0);
    _mm256_storeu_si256(d.add(n - 3 * VW) as *mut V, t1);
    _mm256_storeu_si256(d.add(n - 2 * VW) as *mut V, t2);
    _mm256_storeu_si256(d.add(n - VW) as *mut V, t3);
}

/// Copies of at most 128 bytes: two moves of 1-16, 16, 32 or two 32-byte
/// vectors from each end, every byte loaded before any is stored.
///
/// # Safety
/// As [`copy_avx2`], with `n <= 128`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn copy_le128_avx2(d: *mut u8, s: *const u8, n: usize) {
    type V = __m256i;
    const VW: usize = 32;
    if n <= 16 {
        return copy_le16(d, s, n);
    }
    if n <= 32 {
        let a = _mm_loadu_si128(s as *const __m128i);
        let b = _mm_loadu_si128(s.add(n - 16) as *const __m128i);
        _mm_storeu_si128(d as *mut __m128i, a);
        _mm_storeu_si128(d.add(n - 16) as *mut __m128i, b);
        return;
    }
    if n <= 64 {
        let a = _mm256_loadu_si256(s as *const V);
        let b = _mm256_loadu_si256(s.add(n - VW) as *const V);
        _mm256_storeu_si256(d as *mut V, a);
        _mm256_storeu_si256(d.add(n - VW) as *mut V, b);
        return;
    }
    // Two vectors from each end cover everything (n - 64 >= 1).
    let h0 = _mm256_loadu_si256(s as *const V);
    let h1 = _mm256_loadu_si256(s.add(VW) as *const V);
    let t2 = _mm256_loadu_si256(s.add(n - 2 * VW) as *const V);
    let t3 = _mm256_loadu_si256(s.add(n - VW) as *const V);
    _mm256_storeu_si256(d as *mut V, h0);
    _mm256_storeu_si256(d.add(VW) as *mut V, h1);
    _mm256_storeu_si256(d.add(n - 2 * VW) as *mut V, t2);
    _mm256_storeu_si256(d.add(n - VW) as *mut V, t3);
}

/// The body of a copy above 256 bytes: the first vector, then aligned
/// blocks of 128 bytes while they end within `n` (streamed, with a
/// prefetch, when `nt`); the caller stores the last 128 bytes after it.
///
/// # Safety
/// As [`copy_avx2`], with `n > 256`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn copy_blocks_avx2(d: *mut u8, s: *const u8, n: usize, nt: bool) {
    type V = __m256i;
    const VW: usize = 32;
    let h0 = _mm256_loadu_si256(s as *const V);
    _mm256_storeu_si256(d as *mut V, h0);
    // First 32-aligned destination address after the head: 1..=32 bytes
    // in. The loop stores aligned blocks of 128 while they end within n;
    // what remains (< 128 bytes) is covered by the tail the caller stores.
    let mut i = VW - (d as usize & (VW - 1));
    if nt {
        while i + 4 * VW <= n {
            // A prefetch never faults; `wrapping_add` keeps the address
            // computation itself defined past the end of the source.
            _mm_prefetch::<_MM_HINT_NTA>(s.wrapping_add(i + PREFETCH_AHEAD) as *const i8);
            let a = _mm256_loadu_si256(s.add(i) as *const V);
            let b = _mm256_loadu_si256(s.add(i + VW) as *const V);
            let c = _mm256_loadu_si256(s.add(i + 2 * VW) as *const V);
            let e = _mm256_loadu_si256(s.add(i + 3 * VW) as *const V);
            _mm256_stream_si256(d.add(i) as *mut V, a);
            _mm256_stream_si256(d.add(i + VW) as *mut V, b);
            _mm256_stream_si256(d.add(i + 2 * VW) as *mut V, c);
            _mm256_stream_si256(d.add(i + 3 * VW) as *mut V, e);
            i += 4 * VW;
        }
        // Streaming stores are weakly ordered: fence them before the
        // ordinary tail stores and before returning to the caller.
        _mm_sfence();
    } else {
        while i + 4 * VW <= n {
            let a = _mm256_loadu_si256(s.add(i) as *const V);
            let b = _mm256_loadu_si256(s.add(i + VW) as *const V);
            let c = _mm256_loadu_si256(s.add(i + 2 * VW) as *const V);
            let e = _mm256_loadu_si256(s.add(i + 3 * VW) as *const V);
            _mm256_store_si256(d.add(i) as *mut V, a);
            _mm256_store_si256(d.add(i + VW) as *mut V, b);
            _mm256_store_si256(d.add(i + 2 * VW) as *mut V, c);
            _mm256_store_si256(d.add(i + 3 * VW) as *mut V, e);
            i += 4 * VW;
        }
    }
}

/// # Safety
/// `d` valid for `n` writes, AVX2 present.
#[target_feature(enable = "avx2")]
pub(super) unsafe extern "C" fn set_avx2(d: *mut u8, c: u8, n: usize, nt_min: usize) {
    let nt = n >= nt_min;
    type V = __m256i;
    const VW: usize = 32;
    if n <= 16 {
        return set_le16(d, c, n);
    }
    let v = _mm256_set1_epi8(c as i8);
    if n <= 32 {
        let x = _mm256_castsi256_si128(v);
        _mm_storeu_si128(d as *mut __m128i, x);
        _mm_storeu_si128(d.add(n - 16) as *mut __m128i, x);
        return;
    }
    _mm256_storeu_si256(d as *mut V, v);
    _mm256_storeu_si256(d.add(n - VW) as *mut V, v);
    if n <= 64 {
        return;
    }
    _mm256_storeu_si256(d.add(VW) as *mut V, v);
    _mm256_storeu_si256(d.add(n - 2 * VW) as *mut V, v);
    if n <= 128 {
        return;
    }
    // Aligned body as in `copy_avx2`; the last 128 bytes are the tail.
    let mut i = VW - (d as usize & (VW - 1));
    if nt {
        while i + 4 * VW <= n {
            _mm256_stream_si256(d.add(i) as *mut V, v);
            _mm256_stream_si256(d.add(i + VW) as *mut V, v);
            _mm256_stream_si256(d.add(i + 2 * VW) as *mut V, v);
            _mm256_stream_si256(d.add(i + 3 * VW) as *mut V, v);
            i += 4 * VW;
        }
        _mm_sfence();
    } else {
        while i + 4 * VW <= n {
            _mm256_store_si256(d.add(i) as *mut V, v);
            _mm256_store_si256(d.add(i + VW) as *mut V, v);
            _mm256_store_si256(d.add(i + 2 * VW) as *mut V, v);
            _mm256_store_si256(d.add(i + 3 * VW) as *mut V, v);
            i += 4 * VW;
        }
    }
    _mm256_storeu_si256(d.add(n - 4 * VW) as *mut V, v);
    _mm256_storeu_si256(d.add(n - 3 * VW) as *mut V, v);
}

/// Without streaming, one `rep stosb` (glibc's `memset` from 2 KiB up): on
/// pages not in cache, pinned on this Zen 4, vector store loops ran
/// 0.90-0.94x the C library and `rep stosb` 1.00-1.02x (docs/mem.md).
///
/// # Safety
/// `d` 4096-aligned and valid for 4096 writes, AVX2 present.
#[target_feature(enable = "avx2")]
pub(super) unsafe extern "C" fn clear_page_avx2(d: *mut u8, nt: bool) {
    if !nt {
        // SAFETY: `rep stosb` stores `al` (0) to the `rcx` (4096) bytes from
        // `rdi` upward (the ABI keeps the direction flag clear), exactly
        // `[d, d + 4096)`, valid for writes by the contract.
        unsafe {
            asm!("rep stosb", inout("rdi") d => _, inout("rcx") super::PAGE => _, in("al") 0u8,
                 options(nostack, preserves_flags));
        }
        return;
    }
    let z = _mm256_setzero_si256();
    let mut i = 0;
    while i < super::PAGE {
        let p = d.add(i) as *mut __m256i;
        _mm256_stream_si256(p, z);
        _mm256_stream_si256(p.add(1), z);
        _mm256_stream_si256(p.add(2), z);
        _mm256_stream_si256(p.add(3), z);
        i += 128;
    }
    _mm_sfence();
}

// ---------------------------------------------------------------- SSE2 ----

/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, no overlap.
pub(super) unsafe extern "C" fn copy_sse2(d: *mut u8, s: *const u8, n: usize, nt_min: usize) {
    let nt = n >= nt_min;
    type V = __m128i;
    const VW: usize = 16;
    if n <= 16 {
        return copy_le16(d, s, n);
    }
    if n <= 32 {
        let a = _mm_loadu_si128(s as *const V);
        let b = _mm_loadu_si128(s.add(n - VW) as *const V);
        _mm_storeu_si128(d as *mut V, a);
        _mm_storeu_si128(d.add(n - VW) as *mut V, b);
        return;
    }
    if n <= 64 {
        // Two vectors from each end cover everything (n - 32 >= 1).
        let h0 = _mm_loadu_si128(s as *const V);
        let h1 = _mm_loadu_si128(s.add(VW) as *const V);
        let t2 = _mm_loadu_si128(s.add(n - 2 * VW) as *const V);
        let t3 = _mm_loadu_si128(s.add(n - VW) as *const V);
        _mm_storeu_si128(d as *mut V, h0);
        _mm_storeu_si128(d.add(VW) as *mut V, h1);
        _mm_storeu_si128(d.add(n - 2 * VW) as *mut V, t2);
        _mm_storeu_si128(d.add(n - VW) as *mut V, t3);
        return;
    }
    let t0 = _mm_loadu_si128(s.add(n - 4 * VW) as *const V);
    let t1 = _mm_loadu_si128(s.add(n - 3 * VW) as *const V);
    let t2 = _mm_loadu_si128(s.add(n - 2 * VW) as *const V);
    let t3 = _mm_loadu_si128(s.add(n - VW) as *const V);
    let h0 = _mm_loadu_si128(s as *const V);
    _mm_storeu_si128(d as *mut V, h0);
    let mut i = VW - (d as usize & (VW - 1));
    if nt {
        while i + 4 * VW <= n {
            _mm_prefetch::<_MM_HINT_NTA>(s.wrapping_add(i + PREFETCH_AHEAD) as *const i8);
            let a = _mm_loadu_si128(s.add(i) as *const V);
            let b = _mm_loadu_si128(s.add(i + VW) as *const V);
            let c = _mm_loadu_si128(s.add(i + 2 * VW) as *const V);
            let e = _mm_loadu_si128(s.add(i + 3 * VW) as *const V);
            _mm_stream_si128(d.add(i) as *mut V, a);
            _mm_stream_si128(d.add(i + VW) as *mut V, b);
            _mm_stream_si128(d.add(i + 2 * VW) as *mut V, c);
            _mm_stream_si128(d.add(i + 3 * VW) as *mut V, e);
            i += 4 * VW;
        }
        _mm_sfence();
    } else {
        while i + 4 * VW <= n {
            let a = _mm_loadu_si128(s.add(i) as *const V);
            let b = _mm_loadu_si128(s.add(i + VW) as *const V);
            let c = _mm_loadu_si128(s.add(i + 2 * VW) as *const V);
            let e = _mm_loadu_si128(s.add(i + 3 * VW) as *const V);
            _mm_store_si128(d.add(i) as *mut V, a);
            _mm_store_si128(d.add(i + VW) as *mut V, b);
            _mm_store_si128(d.add(i + 2 * VW) as *mut V, c);
            _mm_store_si128(d.add(i + 3 * VW) as *mut V, e);
            i += 4 * VW;
        }
    }
    _mm_storeu_si128(d.add(n - 4 * VW) as *mut V, t0);
    _mm_storeu_si128(d.add(n - 3 * VW) as *mut V, t1);
    _mm_storeu_si128(d.add(n - 2 * VW) as *mut V, t2);
    _mm_storeu_si128(d.add(n - VW) as *mut V, t3);
}

/// # Safety
/// `d` valid for `n` writes.
pub(super) unsafe extern "C" fn set_sse2(d: *mut u8, c: u8, n: usize, nt_min: usize) {
    let nt = n >= nt_min;
    type V = __m128i;
    const VW: usize = 16;
    if n <= 16 {
        return set_le16(d, c, n);
    }
    let v = _mm_set1_epi8(c as i8);
    _mm_storeu_si128(d as *mut V, v);
    _mm_storeu_si128(d.add(n - VW) as *mut V, v);
    if n <= 32 {
        return;
    }
    _mm_storeu_si128(d.add(VW) as *mut V, v);
    _mm_storeu_si128(d.add(n - 2 * VW) as *mut V, v);
    if n <= 64 {
        return;
    }
    let mut i = VW - (d as usize & (VW - 1));
    if nt {
        while i + 4 * VW <= n {
            _mm_stream_si128(d.add(i) as *mut V, v);
            _mm_stream_si128(d.add(i + VW) as *mut V, v);
            _mm_stream_si128(d.add(i + 2 * VW) as *mut V, v);
            _mm_stream_si128(d.add(i + 3 * VW) as *mut V, v);
            i += 4 * VW;
        }
        _mm_sfence();
    } else {
        while i + 4 * VW <= n {
            _mm_store_si128(d.add(i) as *mut V, v);
            _mm_store_si128(d.add(i + VW) as *mut V, v);
            _mm_store_si128(d.add(i + 2 * VW) as *mut V, v);
            _mm_store_si128(d.add(i + 3 * VW) as *mut V, v);
            i += 4 * VW;
        }
    }
    _mm_storeu_si128(d.add(n - 4 * VW) as *mut V, v);
    _mm_storeu_si128(d.add(n - 3 * VW) as *mut V, v);
}

/// # Safety
/// `d` 4096-aligned and valid for 4096 writes.
pub(super) unsafe extern "C" fn clear_page_sse2(d: *mut u8, nt: bool) {
    let z = _mm_setzero_si128();
    let mut i = 0;
    while i < super::PAGE {
        let p = d.add(i) as *mut __m128i;
        if nt {
            _mm_stream_si128(p, z);
            _mm_stream_si128(p.add(1), z);
            _mm_stream_si128(p.add(2), z);
            _mm_stream_si128(p.add(3), z);
        } else {
            _mm_store_si128(p, z);
            _mm_store_si128(p.add(1), z);
            _mm_store_si128(p.add(2), z);
            _mm_store_si128(p.add(3), z);
        }
        i += 64;
    }
    if nt {
        _mm_sfence();
    }
}

/// Load the 16-byte aligned block at `addr` as a machine load.
///
/// # Safety
/// `addr` is 16-aligned and the block holds a byte of mapped memory (then the
/// whole block is mapped: it lies in one page). SSE2 is baseline on x86-64.
#[inline]
unsafe fn load_block16(addr: usize) -> __m128i {
    let v: __m128i;
    asm!("movdqa {v}, xmmword ptr [{a}]", a = in(reg) addr, v = out(xmm_reg) v,
         options(pure, readonly, nostack, preserves_flags));
    v
}

/// Load the 16 bytes at `addr` (any alignment) as a machine load.
///
/// # Safety
/// `[addr, addr + 16)` lies in one 4096-byte page that holds a byte of mapped
/// memory (then all of it is mapped).
#[inline]
unsafe fn load_u16b(addr: usize) -> __m128i {
    let v: __m128i;
    asm!("movdqu {v}, xmmword ptr [{a}]", a = in(reg) addr, v = out(xmm_reg) v,
         options(pure, readonly, nostack, preserves_flags));
    v
}

#[inline]
fn zero_mask16(v: __m128i) -> u32 {
    // SAFETY: SSE2 is part of the x86-64 baseline; register-only operations.
    unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())) as u32 }
}

/// # Safety
/// `p` starts a NUL-terminated string. Loads: the 16 bytes at `p` when they
/// stay in one 4096-byte page (else the aligned block holding `p`), then
/// 16-byte aligned blocks up to a 64-byte boundary, then 64-byte aligned blocks (module docs).
pub(super) unsafe extern "C" fn strlen_sse2(p: *const u8) -> usize {
    let start = p as usize;
    let mut b = start & !15;
    // An unaligned first load when it stays in `start`'s page, as in
    // `kdelta_strlen_avx2`; else the shifted aligned block.
    let m = if start & (PAGE_MIN - 1) <= PAGE_MIN - 16 {
        zero_mask16(load_u16b(start))
    } else {
        zero_mask16(load_block16(b)) >> (start - b)
    };
    if m != 0 {
        return m.trailing_zeros() as usize;
    }
    b += 16;
    while b & 63 != 0 {
        let m = zero_mask16(load_block16(b));
        if m != 0 {
            return b - start + m.trailing_zeros() as usize;
        }
        b += 16;
    }
    loop {
        let v0 = load_block16(b);
        let v1 = load_block16(b + 16);
        let v2 = load_block16(b + 32);
        let v3 = load_block16(b + 48);
        let mn = _mm_min_epu8(_mm_min_epu8(v0, v1), _mm_min_epu8(v2, v3));
        if zero_mask16(mn) != 0 {
            let m = zero_mask16(v0) as u64
                | (zero_mask16(v1) as u64) << 16
                | (zero_mask16(v2) as u64) << 32
                | (zero_mask16(v3) as u64) << 48;
            return b - start + m.trailing_zeros() as usize;
        }
        b += 64;
    }
}
