//! x86-64 AVX-512 variant (64-byte vectors): memcpy and strlen. Fills and
//! page clears use the AVX2 code (the variant requires AVX2 as well): their
//! bars are met there, and 32-byte stores already saturate the store port.
//! Safety contracts are the module's (`super` docs); every function here
//! requires AVX-512F, AVX-512BW, AVX-512VL and AVX2, which `Variant::Avx512`
//! checks.

use super::portable::copy_le16;
use core::arch::asm;
use core::arch::x86_64::*;

/// How far ahead of the loads the non-temporal loop prefetches the source.
const PREFETCH_AHEAD: usize = 512;

/// The smallest page size on x86-64; every page size is a multiple of it.
const PAGE_MIN: usize = 4096;

/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, no overlap, AVX-512F/BW/VL present.
///
/// Size classes, each a few overlapping unaligned moves from both ends and
/// no loop up to 512 bytes (glibc's AVX-512 memmove does the same, and the
/// bar is per call, so the branch tree is kept shallow: two compares reach
/// every class up to 128 bytes).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
pub(super) unsafe fn copy_avx512(d: *mut u8, s: *const u8, n: usize, nt: bool) {
    type V = __m512i;
    const VW: usize = 64;
    if n <= 64 {
        if n <= 32 {
            if n <= 16 {
                return copy_le16(d, s, n);
            }
            // SAFETY (all the moves below): every address lies in
            // `[s, s + n)` / `[d, d + n)`: the size class guarantees
            // `n - width >= 0` for each tail. The registers are zmm16 and
            // up (AVX-512 only), which leave no dirty upper state behind,
            // so the compiler emits no `vzeroupper` on these paths (glibc's
            // AVX-512 routines use them for the same reason).
            asm!(
                "vmovdqu64 xmm16, xmmword ptr [{s}]",
                "vmovdqu64 xmm17, xmmword ptr [{s} + {n} - 16]",
                "vmovdqu64 xmmword ptr [{d}], xmm16",
                "vmovdqu64 xmmword ptr [{d} + {n} - 16], xmm17",
                s = in(reg) s, d = in(reg) d, n = in(reg) n,
                out("zmm16") _, out("zmm17") _, options(nostack, preserves_flags)
            );
            return;
        }
        asm!(
            "vmovdqu64 ymm16, ymmword ptr [{s}]",
            "vmovdqu64 ymm17, ymmword ptr [{s} + {n} - 32]",
            "vmovdqu64 ymmword ptr [{d}], ymm16",
            "vmovdqu64 ymmword ptr [{d} + {n} - 32], ymm17",
            s = in(reg) s, d = in(reg) d, n = in(reg) n,
            out("zmm16") _, out("zmm17") _, options(nostack, preserves_flags)
        );
        return;
    }
    if n <= 128 {
        asm!(
            "vmovdqu64 zmm16, zmmword ptr [{s}]",
            "vmovdqu64 zmm17, zmmword ptr [{s} + {n} - 64]",
            "vmovdqu64 zmmword ptr [{d}], zmm16",
            "vmovdqu64 zmmword ptr [{d} + {n} - 64], zmm17",
            s = in(reg) s, d = in(reg) d, n = in(reg) n,
            out("zmm16") _, out("zmm17") _, options(nostack, preserves_flags)
        );
        return;
    }
    if n <= 256 {
        // Two vectors from each end cover everything (n - 128 >= 1).
        asm!(
            "vmovdqu64 zmm16, zmmword ptr [{s}]",
            "vmovdqu64 zmm17, zmmword ptr [{s} + 64]",
            "vmovdqu64 zmm18, zmmword ptr [{s} + {n} - 128]",
            "vmovdqu64 zmm19, zmmword ptr [{s} + {n} - 64]",
            "vmovdqu64 zmmword ptr [{d}], zmm16",
            "vmovdqu64 zmmword ptr [{d} + 64], zmm17",
            "vmovdqu64 zmmword ptr [{d} + {n} - 128], zmm18",
            "vmovdqu64 zmmword ptr [{d} + {n} - 64], zmm19",
            s = in(reg) s, d = in(reg) d, n = in(reg) n,
            out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _, options(nostack, preserves_flags)
        );
        return;
    }
    if n <= 512 {
        // Four vectors from each end cover everything (n - 256 >= 1).
        asm!(
            "vmovdqu64 zmm16, zmmword ptr [{s}]",
            "vmovdqu64 zmm17, zmmword ptr [{s} + 64]",
            "vmovdqu64 zmm18, zmmword ptr [{s} + 128]",
            "vmovdqu64 zmm19, zmmword ptr [{s} + 192]",
            "vmovdqu64 zmm20, zmmword ptr [{s} + {n} - 256]",
            "vmovdqu64 zmm21, zmmword ptr [{s} + {n} - 192]",
            "vmovdqu64 zmm22, zmmword ptr [{s} + {n} - 128]",
            "vmovdqu64 zmm23, zmmword ptr [{s} + {n} - 64]",
            "vmovdqu64 zmmword ptr [{d}], zmm16",
            "vmovdqu64 zmmword ptr [{d} + 64], zmm17",
            "vmovdqu64 zmmword ptr [{d} + 128], zmm18",
            "vmovdqu64 zmmword ptr [{d} + 192], zmm19",
            "vmovdqu64 zmmword ptr [{d} + {n} - 256], zmm20",
            "vmovdqu64 zmmword ptr [{d} + {n} - 192], zmm21",
            "vmovdqu64 zmmword ptr [{d} + {n} - 128], zmm22",
            "vmovdqu64 zmmword ptr [{d} + {n} - 64], zmm23",
            s = in(reg) s, d = in(reg) d, n = in(reg) n,
            out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _,
            out("zmm20") _, out("zmm21") _, out("zmm22") _, out("zmm23") _,
            options(nostack, preserves_flags)
        );
        return;
    }
    // n > 512: the last four vectors, loaded before anything is stored.
    let t0 = _mm512_loadu_si512(s.add(n - 4 * VW) as *const V);
    let t1 = _mm512_loadu_si512(s.add(n - 3 * VW) as *const V);
    let t2 = _mm512_loadu_si512(s.add(n - 2 * VW) as *const V);
    let t3 = _mm512_loadu_si512(s.add(n - VW) as *const V);
    let h0 = _mm512_loadu_si512(s as *const V);
    {
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

// The strlen helpers below are whole inline-assembly blocks: each load is a
// machine load outside Rust's object model (module docs), and they work in
// zmm16-zmm19 and mask registers only, so no `vzeroupper` is needed on return
// (which matters for short strings, where a call costs a few nanoseconds).

/// Zero-byte mask of the 64 bytes at `addr` (any alignment): bit i set iff
/// byte i is 0.
///
/// # Safety
/// `[addr, addr + 64)` lies in one 4096-byte page that holds a byte of
/// mapped memory (then all of it is mapped). AVX-512F/BW present.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn zmask_unaligned(addr: usize) -> u64 {
    let m: u64;
    asm!(
        "vmovdqu64 zmm16, zmmword ptr [{a}]",
        "vptestnmb k1, zmm16, zmm16",
        "kmovq {m}, k1",
        a = in(reg) addr, m = lateout(reg) m, out("zmm16") _, out("k1") _,
        options(pure, readonly, nostack, preserves_flags)
    );
    m
}

/// Zero-byte mask of the 64-byte aligned block at `addr`.
///
/// # Safety
/// `addr` is 64-aligned and the block holds a byte of mapped memory (then all
/// of it is: 64 divides the page size). AVX-512F/BW present.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn zmask_block64(addr: usize) -> u64 {
    let m: u64;
    asm!(
        "vmovdqa64 zmm16, zmmword ptr [{a}]",
        "vptestnmb k1, zmm16, zmm16",
        "kmovq {m}, k1",
        a = in(reg) addr, m = lateout(reg) m, out("zmm16") _, out("k1") _,
        options(pure, readonly, nostack, preserves_flags)
    );
    m
}

/// Zero-byte mask of the byte-wise minimum of the four 64-byte blocks of the
/// 256-byte aligned block at `addr`: non-zero iff the block holds a 0 byte.
///
/// # Safety
/// `addr` is 256-aligned and the 256-byte block holds a byte of mapped memory
/// (then all of it is: 256 divides the page size). AVX-512F/BW present.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn zmask_block256_any(addr: usize) -> u64 {
    let m: u64;
    asm!(
        "vmovdqa64 zmm16, zmmword ptr [{a}]",
        "vmovdqa64 zmm17, zmmword ptr [{a} + 64]",
        "vpminub zmm16, zmm16, zmmword ptr [{a} + 128]",
        "vpminub zmm17, zmm17, zmmword ptr [{a} + 192]",
        "vpminub zmm16, zmm16, zmm17",
        "vptestnmb k1, zmm16, zmm16",
        "kmovq {m}, k1",
        a = in(reg) addr, m = lateout(reg) m, out("zmm16") _, out("zmm17") _, out("k1") _,
        options(pure, readonly, nostack, preserves_flags)
    );
    m
}

/// The zero-byte masks of the four 64-byte blocks of the 256-byte aligned
/// block at `addr`.
///
/// # Safety
/// As [`zmask_block256_any`].
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn zmasks_block256(addr: usize) -> [u64; 4] {
    let (m0, m1, m2, m3): (u64, u64, u64, u64);
    asm!(
        "vmovdqa64 zmm16, zmmword ptr [{a}]",
        "vmovdqa64 zmm17, zmmword ptr [{a} + 64]",
        "vmovdqa64 zmm18, zmmword ptr [{a} + 128]",
        "vmovdqa64 zmm19, zmmword ptr [{a} + 192]",
        "vptestnmb k1, zmm16, zmm16",
        "vptestnmb k2, zmm17, zmm17",
        "vptestnmb k3, zmm18, zmm18",
        "vptestnmb k4, zmm19, zmm19",
        "kmovq {m0}, k1",
        "kmovq {m1}, k2",
        "kmovq {m2}, k3",
        "kmovq {m3}, k4",
        a = in(reg) addr, m0 = lateout(reg) m0, m1 = lateout(reg) m1, m2 = lateout(reg) m2, m3 = lateout(reg) m3,
        out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _,
        out("k1") _, out("k2") _, out("k3") _, out("k4") _,
        options(pure, readonly, nostack, preserves_flags)
    );
    [m0, m1, m2, m3]
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
///   follow the NUL (the NUL has not been seen in any byte before it);
/// - finally the 256-byte block found to hold the NUL, again.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
pub(super) unsafe fn strlen_avx512(p: *const u8) -> usize {
    let start = p as usize;
    let mut b = start & !63;
    let m = if start & (PAGE_MIN - 1) <= PAGE_MIN - 64 {
        zmask_unaligned(start)
    } else {
        zmask_block64(b) >> (start - b)
    };
    if m != 0 {
        return m.trailing_zeros() as usize;
    }
    // Either way no byte in [start, b + 64) is the NUL.
    b += 64;
    while b & 255 != 0 {
        let m = zmask_block64(b);
        if m != 0 {
            return b - start + m.trailing_zeros() as usize;
        }
        b += 64;
    }
    while zmask_block256_any(b) == 0 {
        b += 256;
    }
    // The NUL is in this 256-byte block: the four zero masks of the same
    // block (loaded again; it is known to be mapped) as two 128-bit masks.
    let [m0, m1, m2, m3] = zmasks_block256(b);
    let lo = m0 as u128 | (m1 as u128) << 64;
    if lo != 0 {
        return b - start + lo.trailing_zeros() as usize;
    }
    let hi = m2 as u128 | (m3 as u128) << 64;
    b - start + 128 + hi.trailing_zeros() as usize
}
