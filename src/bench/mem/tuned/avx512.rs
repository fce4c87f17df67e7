//! x86-64 AVX-512 variant (64-byte vectors): memcpy and strlen. Fills and
//! page clears use the AVX2 code (the variant requires AVX2 as well): their
//! bars are met there, and 32-byte stores already saturate the store port.
//! Safety contracts are the module's (`super` docs); every function here
//! requires AVX-512F, AVX-512BW and AVX2, which `Variant::Avx512` checks.

use super::portable::copy_le16;
use core::arch::asm;
use core::arch::x86_64::*;

/// How far ahead of the loads the non-temporal loop prefetches the source.
const PREFETCH_AHEAD: usize = 512;

/// The smallest page size on x86-64; every page size is a multiple of it.
const PAGE_MIN: usize = 4096;

/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, no overlap, AVX-512F/BW present.
///
/// Size classes, each a few overlapping unaligned moves from both ends and
/// no loop up to 512 bytes (glibc's AVX-512 memmove does the same, and the
/// bar is per call, so the branch tree is kept shallow: two compares reach
/// every class up to 128 bytes).
#[target_feature(enable = "avx512f,avx512bw,avx2")]
pub(super) unsafe fn copy_avx512(d: *mut u8, s: *const u8, n: usize, nt: bool) {
    type V = __m512i;
    const VW: usize = 64;
    if n <= 64 {
        if n <= 32 {
            if n <= 16 {
                return copy_le16(d, s, n);
            }
            let a = _mm_loadu_si128(s as *const __m128i);
            let b = _mm_loadu_si128(s.add(n - 16) as *const __m128i);
            _mm_storeu_si128(d as *mut __m128i, a);
            _mm_storeu_si128(d.add(n - 16) as *mut __m128i, b);
            return;
        }
        let a = _mm256_loadu_si256(s as *const __m256i);
        let b = _mm256_loadu_si256(s.add(n - 32) as *const __m256i);
        _mm256_storeu_si256(d as *mut __m256i, a);
        _mm256_storeu_si256(d.add(n - 32) as *mut __m256i, b);
        return;
    }
    if n <= 128 {
        let a = _mm512_loadu_si512(s as *const V);
        let b = _mm512_loadu_si512(s.add(n - VW) as *const V);
        _mm512_storeu_si512(d as *mut V, a);
        _mm512_storeu_si512(d.add(n - VW) as *mut V, b);
        return;
    }
    if n <= 256 {
        // Two vectors from each end cover everything (n - 128 >= 1).
        let h0 = _mm512_loadu_si512(s as *const V);
        let h1 = _mm512_loadu_si512(s.add(VW) as *const V);
        let t0 = _mm512_loadu_si512(s.add(n - 2 * VW) as *const V);
        let t1 = _mm512_loadu_si512(s.add(n - VW) as *const V);
        _mm512_storeu_si512(d as *mut V, h0);
        _mm512_storeu_si512(d.add(VW) as *mut V, h1);
        _mm512_storeu_si512(d.add(n - 2 * VW) as *mut V, t0);
        _mm512_storeu_si512(d.add(n - VW) as *mut V, t1);
        return;
    }
    // n > 256: the last four vectors, loaded before anything is stored.
    let t0 = _mm512_loadu_si512(s.add(n - 4 * VW) as *const V);
    let t1 = _mm512_loadu_si512(s.add(n - 3 * VW) as *const V);
    let t2 = _mm512_loadu_si512(s.add(n - 2 * VW) as *const V);
    let t3 = _mm512_loadu_si512(s.add(n - VW) as *const V);
    let h0 = _mm512_loadu_si512(s as *const V);
    if n <= 512 {
        // Four vectors from each end cover everything (n - 256 >= 1).
        let h1 = _mm512_loadu_si512(s.add(VW) as *const V);
        let h2 = _mm512_loadu_si512(s.add(2 * VW) as *const V);
        let h3 = _mm512_loadu_si512(s.add(3 * VW) as *const V);
        _mm512_storeu_si512(d as *mut V, h0);
        _mm512_storeu_si512(d.add(VW) as *mut V, h1);
        _mm512_storeu_si512(d.add(2 * VW) as *mut V, h2);
        _mm512_storeu_si512(d.add(3 * VW) as *mut V, h3);
    } else {
        _mm512_storeu_si512(d as *mut V, h0);
        // First 64-aligned destination address after the head: 1..=64 bytes
        // in. The loop stores aligned 256-byte blocks while they end within
        // n; the rest (< 256 bytes) is covered by the tail stored below.
        let mut i = VW - (d as usize & (VW - 1));
        if nt {
            while i + 4 * VW <= n {
                // A prefetch never faults; `wrapping_add` keeps the address
                // computation defined past the end of the source.
                _mm_prefetch::<_MM_HINT_NTA>(s.wrapping_add(i + PREFETCH_AHEAD) as *const i8);
                _mm_prefetch::<_MM_HINT_NTA>(s.wrapping_add(i + PREFETCH_AHEAD + 2 * VW) as *const i8);
                let a = _mm512_loadu_si512(s.add(i) as *const V);
                let b = _mm512_loadu_si512(s.add(i + VW) as *const V);
                let c = _mm512_loadu_si512(s.add(i + 2 * VW) as *const V);
                let e = _mm512_loadu_si512(s.add(i + 3 * VW) as *const V);
                _mm512_stream_si512(d.add(i) as *mut V, a);
                _mm512_stream_si512(d.add(i + VW) as *mut V, b);
                _mm512_stream_si512(d.add(i + 2 * VW) as *mut V, c);
                _mm512_stream_si512(d.add(i + 3 * VW) as *mut V, e);
                i += 4 * VW;
            }
            // Streaming stores are weakly ordered: fence them before the
            // ordinary tail stores and before returning.
            _mm_sfence();
        } else {
            while i + 4 * VW <= n {
                let a = _mm512_loadu_si512(s.add(i) as *const V);
                let b = _mm512_loadu_si512(s.add(i + VW) as *const V);
                let c = _mm512_loadu_si512(s.add(i + 2 * VW) as *const V);
                let e = _mm512_loadu_si512(s.add(i + 3 * VW) as *const V);
                _mm512_store_si512(d.add(i) as *mut V, a);
                _mm512_store_si512(d.add(i + VW) as *mut V, b);
                _mm512_store_si512(d.add(i + 2 * VW) as *mut V, c);
                _mm512_store_si512(d.add(i + 3 * VW) as *mut V, e);
                i += 4 * VW;
            }
        }
    }
    _mm512_storeu_si512(d.add(n - 4 * VW) as *mut V, t0);
    _mm512_storeu_si512(d.add(n - 3 * VW) as *mut V, t1);
    _mm512_storeu_si512(d.add(n - 2 * VW) as *mut V, t2);
    _mm512_storeu_si512(d.add(n - VW) as *mut V, t3);
}

/// Load the 64 bytes at `addr` (any alignment) as a machine load.
///
/// # Safety
/// `[addr, addr + 64)` lies in one 4096-byte page that holds a byte of
/// mapped memory (then all of it is mapped). AVX-512F present.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn load_u64b(addr: usize) -> __m512i {
    let v: __m512i;
    asm!("vmovdqu64 {v}, zmmword ptr [{a}]", a = in(reg) addr, v = out(zmm_reg) v,
         options(pure, readonly, nostack, preserves_flags));
    v
}

/// Load the 64-byte aligned block at `addr` as a machine load.
///
/// # Safety
/// `addr` is 64-aligned and the block holds a byte of mapped memory (then all
/// of it is: 64 divides the page size). AVX-512F present.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn load_block64(addr: usize) -> __m512i {
    let v: __m512i;
    asm!("vmovdqa64 {v}, zmmword ptr [{a}]", a = in(reg) addr, v = out(zmm_reg) v,
         options(pure, readonly, nostack, preserves_flags));
    v
}

/// Load the four 64-byte blocks of the 256-byte aligned block at `addr`.
///
/// # Safety
/// `addr` is 256-aligned and the 256-byte block holds a byte of mapped memory
/// (then all of it is: 256 divides the page size). AVX-512F present.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn load_block256(addr: usize) -> [__m512i; 4] {
    let (a, b, c, d): (__m512i, __m512i, __m512i, __m512i);
    asm!(
        "vmovdqa64 {a}, zmmword ptr [{p}]",
        "vmovdqa64 {b}, zmmword ptr [{p} + 64]",
        "vmovdqa64 {c}, zmmword ptr [{p} + 128]",
        "vmovdqa64 {d}, zmmword ptr [{p} + 192]",
        p = in(reg) addr, a = out(zmm_reg) a, b = out(zmm_reg) b, c = out(zmm_reg) c, d = out(zmm_reg) d,
        options(pure, readonly, nostack, preserves_flags)
    );
    [a, b, c, d]
}

#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn zero_mask64(v: __m512i) -> u64 {
    _mm512_cmpeq_epi8_mask(v, _mm512_setzero_si512())
}

/// # Safety
/// `p` starts a NUL-terminated string; AVX-512F/BW present.
///
/// Loads, each inside one page that holds a byte of the string (module docs):
/// - first, when `[p, p + 64)` does not cross a 4096-byte boundary, one
///   *unaligned* 64-byte load at `p`: it lies in the page holding `p`, which
///   is mapped because `p` is the string's first byte (or its NUL). This is
///   what C libraries do and saves the shifted first block for short strings.
///   Otherwise the aligned 64-byte block holding `p`, with the bytes before
///   `p` shifted out of the mask;
/// - then aligned 64-byte blocks up to a 256-byte boundary, then aligned
///   256-byte blocks, each starting at or before a byte not yet known to
///   follow the NUL (the NUL has not been seen in any byte before it).
#[target_feature(enable = "avx512f,avx512bw,avx2")]
pub(super) unsafe fn strlen_avx512(p: *const u8) -> usize {
    let start = p as usize;
    let mut b = start & !63;
    if start & (PAGE_MIN - 1) <= PAGE_MIN - 64 {
        let m = zero_mask64(load_u64b(start));
        if m != 0 {
            return m.trailing_zeros() as usize;
        }
    } else {
        let m = zero_mask64(load_block64(b)) >> (start - b);
        if m != 0 {
            return m.trailing_zeros() as usize;
        }
    }
    // Either way no byte in [start, b + 64) is the NUL.
    b += 64;
    while b & 255 != 0 {
        let m = zero_mask64(load_block64(b));
        if m != 0 {
            return b - start + m.trailing_zeros() as usize;
        }
        b += 64;
    }
    loop {
        let [v0, v1, v2, v3] = load_block256(b);
        // A byte is zero in the minimum iff it is zero in one of the four.
        let mn = _mm512_min_epu8(_mm512_min_epu8(v0, v1), _mm512_min_epu8(v2, v3));
        if zero_mask64(mn) != 0 {
            let m0 = zero_mask64(v0);
            if m0 != 0 {
                return b - start + m0.trailing_zeros() as usize;
            }
            let m1 = zero_mask64(v1);
            if m1 != 0 {
                return b - start + 64 + m1.trailing_zeros() as usize;
            }
            let m2 = zero_mask64(v2);
            if m2 != 0 {
                return b - start + 128 + m2.trailing_zeros() as usize;
            }
            return b - start + 192 + zero_mask64(v3).trailing_zeros() as usize;
        }
        b += 256;
    }
}
