//! x86-64 AVX-512 variant (64-byte vectors): copies up to 512 bytes and
//! strlen. Longer copies, fills and page clears use the AVX2 code (the
//! variant requires AVX2 as well): on this Zen 4 a 64-byte store issues as
//! two 32-byte ones, and the 64-byte loops measured no faster.
//! Safety contracts are the module's (`super` docs); every function here
//! requires AVX-512F, AVX-512BW, AVX-512VL and AVX2, which `Variant::Avx512`
//! checks.

use super::portable::copy_le16;
use core::arch::asm;

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
    if n < ZMM_LOOP_BELOW && !nt {
        return copy_zmm_loop(d, s, n);
    }
    // Longer copies: the AVX2 loop (aligned 32-byte stores, 128 bytes a
    // step, streaming stores above the threshold), which measured faster
    // than 64-byte steps from a few KiB up on this Zen 4 (a 64-byte store
    // issues as two 32-byte ones there).
    super::x86::copy_avx2(d, s, n, nt)
}

/// Copies shorter than this (and longer than 512 bytes) run
/// [`copy_zmm_loop`]; measured pinned on Zen 4 (see `tests/mem_bars.rs`).
const ZMM_LOOP_BELOW: usize = 2048;

/// Copy of more than 512 bytes in 256-byte steps of four 64-byte moves with
/// aligned stores, the shape of glibc's AVX-512 memmove: the first 64 bytes
/// and the last 256 are loaded before the loop and stored after it, so the
/// loop stores only whole aligned blocks and needs no remainder code.
///
/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, no overlap, `n > 512`,
/// AVX-512F present.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
unsafe fn copy_zmm_loop(d: *mut u8, s: *const u8, n: usize) {
    debug_assert!(n > 512);
    // SAFETY: with i starting at 64 - (d mod 64) (1..=64), the loop moves
    // [i, i + 256) while i < n - 256, so i + 256 <= n: every load lies in
    // [s, s + n) and every store in [d, d + n), and `d + i` is 64-aligned
    // (`vmovdqa64` needs it). It runs at least once (i + 256 <= 320 < n).
    // On exit i >= n - 256, so the bytes it did not store, [0, i_start) and
    // [i_end, n), lie in the head [0, 64) and the tail [n - 256, n), both in
    // bounds as n > 512 (glibc's loop has the same bounds, so a copy of
    // 1024 bytes takes three steps, not four). zmm16 and up leave no dirty
    // upper state (no `vzeroupper` needed).
    asm!(
        "vmovdqu64 zmm16, zmmword ptr [{s}]",
        "vmovdqu64 zmm17, zmmword ptr [{s} + {n} - 256]",
        "vmovdqu64 zmm18, zmmword ptr [{s} + {n} - 192]",
        "vmovdqu64 zmm19, zmmword ptr [{s} + {n} - 128]",
        "vmovdqu64 zmm20, zmmword ptr [{s} + {n} - 64]",
        "mov {i}, {d}",
        "and {i}, 63",
        "neg {i}",
        "add {i}, 64",
        "lea {end}, [{n} - 256]",
        ".p2align 5",
        "2:",
        "vmovdqu64 zmm21, zmmword ptr [{s} + {i}]",
        "vmovdqu64 zmm22, zmmword ptr [{s} + {i} + 64]",
        "vmovdqu64 zmm23, zmmword ptr [{s} + {i} + 128]",
        "vmovdqu64 zmm24, zmmword ptr [{s} + {i} + 192]",
        "vmovdqa64 zmmword ptr [{d} + {i}], zmm21",
        "vmovdqa64 zmmword ptr [{d} + {i} + 64], zmm22",
        "vmovdqa64 zmmword ptr [{d} + {i} + 128], zmm23",
        "vmovdqa64 zmmword ptr [{d} + {i} + 192], zmm24",
        "add {i}, 256",
        "cmp {i}, {end}",
        "jb 2b",
        "vmovdqu64 zmmword ptr [{d}], zmm16",
        "vmovdqu64 zmmword ptr [{d} + {n} - 256], zmm17",
        "vmovdqu64 zmmword ptr [{d} + {n} - 192], zmm18",
        "vmovdqu64 zmmword ptr [{d} + {n} - 128], zmm19",
        "vmovdqu64 zmmword ptr [{d} + {n} - 64], zmm20",
        s = in(reg) s, d = in(reg) d, n = in(reg) n, i = out(reg) _, end = out(reg) _,
        out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _, out("zmm20") _,
        out("zmm21") _, out("zmm22") _, out("zmm23") _, out("zmm24") _,
        options(nostack)
    );
}

// strlen is one routine in assembly (`global_asm!`) rather than Rust around
// inline-assembly blocks, for one reason: placement. Measured pinned on this
// Zen 4, the Rust version's speed on 64-128-byte strings moved between 0.88x
// and 1.4x libc from one build to the next as unrelated code changed where
// the linker put it; stable Rust cannot align a function. Here the entry is
// 64-byte aligned and the branch targets and loop heads are 16-byte aligned
// (padding runs at most once per call, on entering a loop, never on the
// short-string paths), the 2001 study's first technique ("branch targets
// aligned to fetch blocks"). It works in
// zmm16-zmm17 and k1-k2 only, which leave no dirty upper state, so no
// `vzeroupper` is needed on return.
//
// Loads, each inside one page that holds a byte of the string (module docs):
// - first, when `[p, p + 64)` does not cross a 4096-byte boundary, one
//   *unaligned* 64-byte load at `p`: it lies in the 4096-byte chunk holding
//   `p`, which is mapped because `p` is the string's first byte (or its NUL).
//   Otherwise the aligned 64-byte block holding `p`, with the bytes before
//   `p` shifted out of the mask;
// - then the next four aligned 64-byte blocks one by one (no loop control for
//   short strings), each loaded only when no byte before it is the NUL;
// - then aligned 128-byte blocks from the 128-byte boundary at or below the
//   first unchecked byte, up to a 256-byte boundary 512-768 bytes on (fewer
//   wasted loads for strings of a few hundred bytes), then aligned 256-byte
//   blocks (four loads folded by byte-wise minimum, one test). Each block
//   starts at or before a byte not yet known to follow the NUL, so it holds
//   a byte that must be read; 64, 128 and 256 divide the page size, so the
//   block lies in that byte's page, which is mapped. On a hit the 64-byte
//   parts of the block are tested again in order to find the first NUL.
core::arch::global_asm!(
    ".pushsection .text.kdelta_strlen_avx512,\"ax\",@progbits",
    ".p2align 6",
    ".globl kdelta_strlen_avx512",
    ".hidden kdelta_strlen_avx512",
    ".type kdelta_strlen_avx512,@function",
    "kdelta_strlen_avx512:",
    // rdi = p; rdx = p & -64 (the aligned block holding p).
    "mov rdx, rdi",
    "and rdx, -64",
    "mov eax, edi",
    "and eax, 4095",
    "cmp eax, 4032",
    "ja .Lkds_cross",
    "vmovdqu64 zmm16, zmmword ptr [rdi]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "test rax, rax",
    "jz .Lkds_next",
    "tzcnt rax, rax",
    "ret",
    ".p2align 4",
    ".Lkds_cross:",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "mov ecx, edi", // shr by cl uses cl mod 64 = p - rdx
    "shr rax, cl",
    "test rax, rax",
    "jz .Lkds_next",
    "tzcnt rax, rax",
    "ret",
    // No NUL in [p, rdx + 64): the next four aligned blocks.
    ".p2align 4",
    ".Lkds_next:",
    "add rdx, 64",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "test rax, rax",
    "jnz .Lkds_found",
    "add rdx, 64",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "test rax, rax",
    "jnz .Lkds_found",
    "add rdx, 64",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "test rax, rax",
    "jnz .Lkds_found",
    "add rdx, 64",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "test rax, rax",
    "jnz .Lkds_found",
    // No NUL in [p, rdx + 64). 128-byte steps from (rdx + 64) rounded down
    // to 128, until r8 = (that + 768) rounded down to 256.
    "add rdx, 64",
    "and rdx, -128",
    "lea r8, [rdx + 768]",
    "and r8, -256",
    ".p2align 4",
    ".Lkds_loop128:",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vpminub zmm17, zmm16, zmmword ptr [rdx + 64]",
    "vptestnmb k1, zmm17, zmm17",
    "kortestq k1, k1",
    "jnz .Lkds_in128",
    "add rdx, 128",
    "cmp rdx, r8",
    "jb .Lkds_loop128",
    ".p2align 4",
    ".Lkds_loop256:",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vmovdqa64 zmm17, zmmword ptr [rdx + 128]",
    "vpminub zmm16, zmm16, zmmword ptr [rdx + 64]",
    "vpminub zmm17, zmm17, zmmword ptr [rdx + 192]",
    "vpminub zmm16, zmm16, zmm17",
    "vptestnmb k1, zmm16, zmm16",
    "kortestq k1, k1",
    "jnz .Lkds_in256",
    "add rdx, 256",
    "jmp .Lkds_loop256",
    // The NUL is in the 256 bytes at rdx: test its 64-byte parts in order.
    ".p2align 4",
    ".Lkds_in256:",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "test rax, rax",
    "jnz .Lkds_found",
    "add rdx, 64",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "test rax, rax",
    "jnz .Lkds_found",
    "add rdx, 64",
    // The NUL is in the 128 bytes at rdx.
    ".Lkds_in128:",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "test rax, rax",
    "jnz .Lkds_found",
    "add rdx, 64",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "jmp .Lkds_found",
    // rax = the zero-byte mask of the 64-byte block at rdx, not zero.
    ".p2align 4",
    ".Lkds_found:",
    "tzcnt rax, rax",
    "sub rdx, rdi",
    "add rax, rdx",
    "ret",
    ".size kdelta_strlen_avx512, . - kdelta_strlen_avx512",
    ".popsection",
);

extern "sysv64" {
    /// The routine above: clobbers rax, rcx, rdx, r8, zmm16, zmm17, k1 (all
    /// caller-saved in the System V ABI, as its calling convention says).
    fn kdelta_strlen_avx512(p: *const u8) -> usize;
}

/// # Safety
/// `p` starts a NUL-terminated string; AVX-512F/BW present.
pub(super) unsafe fn strlen_avx512(p: *const u8) -> usize {
    // SAFETY: the routine's loads are bounded as documented above it; the
    // caller guarantees the string and the CPU features.
    unsafe { kdelta_strlen_avx512(p) }
}
