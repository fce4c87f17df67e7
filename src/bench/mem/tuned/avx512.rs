//! x86-64 AVX-512 variant (64-byte vectors): copies up to 512 bytes and
//! strlen. Longer copies, fills and page clears use the AVX2 code (the
//! variant requires AVX2 as well): on this Zen 4 a 64-byte store issues as
//! two 32-byte ones, and the 64-byte loops measured no faster.
//! Safety contracts are the module's (`super` docs); every function here
//! requires AVX-512F, AVX-512BW, AVX-512VL and AVX2, which `Variant::Avx512`
//! checks.

use super::portable::copy_le16;
use core::arch::asm;

/// The smallest page size on x86-64; every page size is a multiple of it.
const PAGE_MIN: usize = 4096;

/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, no overlap, AVX-512F/BW/VL present.
///
/// Up to 512 bytes: size classes of a few overlapping unaligned moves from
/// both ends, no loop (glibc's AVX-512 memmove does the same; the branch
/// tree is kept shallow: two compares reach every class up to 128 bytes).
/// Longer copies run the AVX2 loop.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
pub(super) unsafe fn copy_avx512(d: *mut u8, s: *const u8, n: usize, nt: bool) {
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
    // n > 512: the AVX2 loop (aligned 32-byte stores, 128 bytes a step,
    // streaming stores above the threshold). Measured pinned on this Zen 4,
    // where a 64-byte store issues as two 32-byte ones: a 64-byte loop was
    // 0.87x libc at 728 B and no faster from 16 KiB up, and sixteen
    // overlapping 64-byte moves for 513-1024 B were slower still.
    super::x86::copy_avx2(d, s, n, nt)
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

/// Scan aligned 128-byte blocks from `addr` until one holds a 0 byte; return
/// that block's address and the zero-byte masks of its first 64 bytes (`m0`)
/// and of the byte-wise minimum of its two 64-byte halves (`m01`). The loop
/// is one assembly block so the exit needs no reload: the masks come from
/// registers. (128 rather than 256 bytes per step: fewer wasted loads for
/// strings of a few hundred bytes, and no slower on long ones here.)
///
/// # Safety
/// `addr` is 128-aligned, every byte from `addr` up to a 0 byte is mapped and
/// a 0 byte follows (a C string's tail): then each block loaded holds a byte
/// at or before that 0 byte, so it is mapped (128 divides the page size).
/// AVX-512F/BW present.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn scan_blocks128(addr: usize) -> (usize, u64, u64) {
    let mut b = addr;
    let (m0, m01): (u64, u64);
    asm!(
        "2:",
        "vmovdqa64 zmm16, zmmword ptr [{b}]",
        "vpminub zmm17, zmm16, zmmword ptr [{b} + 64]",
        "vptestnmb k1, zmm17, zmm17",
        "kortestq k1, k1",
        "jnz 3f",
        "add {b}, 128",
        "jmp 2b",
        "3:",
        "vptestnmb k2, zmm16, zmm16",
        "kmovq {m01}, k1",
        "kmovq {m0}, k2",
        b = inout(reg) b, m0 = lateout(reg) m0, m01 = lateout(reg) m01,
        out("zmm16") _, out("zmm17") _, out("k1") _, out("k2") _,
        options(pure, readonly, nostack)
    );
    (b, m0, m01)
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
/// - then the next four aligned 64-byte blocks, then aligned 128-byte blocks
///   from the boundary at or below the first unchecked byte, each starting
///   at or before a byte not yet known to follow the NUL (the NUL has not
///   been seen in any byte before it);
/// - the position in the block holding the NUL comes from registers.
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
    // Either way no byte in [start, b + 64) is the NUL. The next four
    // aligned blocks one by one, unrolled (no loop control for short
    // strings); each is loaded only when all bytes before it are non-NUL.
    b += 64;
    let m = zmask_block64(b);
    if m != 0 {
        return b - start + m.trailing_zeros() as usize;
    }
    let m = zmask_block64(b + 64);
    if m != 0 {
        return b + 64 - start + m.trailing_zeros() as usize;
    }
    let m = zmask_block64(b + 128);
    if m != 0 {
        return b + 128 - start + m.trailing_zeros() as usize;
    }
    let m = zmask_block64(b + 192);
    if m != 0 {
        return b + 192 - start + m.trailing_zeros() as usize;
    }
    // No NUL in [start, b + 256). Round down to a 128-byte boundary: the
    // block at `b` then starts after `start` and at or before `b + 256`, the
    // first byte not yet known, so it holds a byte that must be read (a few
    // bytes are compared twice, harmlessly).
    b = (b + 256) & !127;
    let (b, m0, m01) = scan_blocks128(b);
    // The NUL is in the block at `b`: in its first 64 bytes iff their own
    // mask is non-zero, else at the first set bit of the minimum's mask (the
    // first half has no 0 byte then).
    if m0 != 0 {
        b - start + m0.trailing_zeros() as usize
    } else {
        b + 64 - start + m01.trailing_zeros() as usize
    }
}
