//! x86-64 AVX-512 variant (64-byte vectors): copies up to 2 KiB and strlen,
//! both written in assembly (`global_asm!`) so their entry and branch
//! targets are aligned. Longer copies, fills and page clears use the AVX2
//! code (the variant requires AVX2 as well): on this Zen 4 a 64-byte store
//! issues as two 32-byte ones, and the 64-byte loops measured no faster there.
//! Safety contracts are the module's (`super` docs); every function here
//! requires AVX-512F, AVX-512BW, AVX-512VL and AVX2, which `Variant::Avx512`
//! checks.

use core::arch::global_asm;

// The copy is one routine in assembly, like strlen below and for the same
// reason: placement. Measured pinned on this Zen 4 with libc and tuned in
// alternating blocks, the Rust version (the same instructions) ran 0.91-0.93x
// libc at 728 B and 1448 B in one build and 1.0-1.1x in another; glibc's
// routine is assembly with aligned entry and branch targets. Here the entry
// is 64-byte aligned and every branch target that follows a `ret` or `jmp`
// is 16-byte aligned, so no padding is ever executed.
//
// Contract (System V: rdi = d, rsi = s, rdx = n, cl = nt): `d` valid for
// `n` writes, `s` for `n` reads, no overlap, AVX-512F/BW/VL and AVX2
// present. Bounds, per size class, every access lying in [s, s + n) and
// [d, d + n) because the class guarantees `n - width >= 0` for each tail:
// - 0-16 bytes: two overlapping 1/2/4/8-byte moves (one for n = 1);
// - 17-32, 33-64, 65-128: two overlapping 16-, 32-, 64-byte moves;
// - 129-256 and 257-512: four and eight 64-byte moves from both ends;
// - 513-2047 without streaming stores: glibc's shape. The first 64 and the
//   last 256 bytes are loaded before a loop of four 64-byte moves with
//   aligned stores, from i = 64 - (d mod 64) (1..=64, so d + i is 64-aligned)
//   while i < n - 256 (so i + 256 <= n); it runs at least once (i + 256 <=
//   320 < n) and leaves [0, i_start) and [i_end, n) to the head [0, 64) and
//   the tail [n - 256, n), both in bounds as n > 512. When (s - d) mod 4096
//   is below 512 the steps run backward instead (glibc's rule against 4K
//   aliasing): the first 256 and the last 64 bytes are loaded first; with
//   j = ((d + n) rounded down to 64) - d (n - 63..=n, so d + j is aligned),
//   each step moves [j - 256, j) and lowers j by 256 while j > 256, so
//   j - 256 > 0 and every access is in bounds; it runs at least once
//   (j >= n - 63 > 449); on exit j <= 256, so [0, j) lies in the head
//   [0, 256) and [j_start, n) in the tail [n - 64, n);
// - longer, or streaming: a tail call to the AVX2 routine (aligned 32-byte
//   stores, 128 bytes a step, streaming stores with prefetch above the
//   threshold), which measured faster than 64-byte steps from 2 KiB up here
//   (a 64-byte store issues as two 32-byte ones on Zen 4).
// Registers: rax, r8, r9, zmm16-zmm24 (caller-saved); zmm16 and up leave no
// dirty upper state, so no `vzeroupper` is needed.
global_asm!(
    ".pushsection .text.kdelta_copy_avx512,\"ax\",@progbits",
    ".p2align 6",
    ".globl kdelta_copy_avx512",
    ".hidden kdelta_copy_avx512",
    ".type kdelta_copy_avx512,@function",
    "kdelta_copy_avx512:",
    "cmp rdx, 64",
    "jb .Lkdc_below64",
    "cmp rdx, 128",
    "ja .Lkdc_above128",
    "vmovdqu64 zmm16, zmmword ptr [rsi]",
    "vmovdqu64 zmm17, zmmword ptr [rsi + rdx - 64]",
    "vmovdqu64 zmmword ptr [rdi], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm17",
    "ret",
    ".p2align 4",
    ".Lkdc_below64:",
    "cmp edx, 32",
    "ja .Lkdc_33_63",
    "cmp edx, 16",
    "ja .Lkdc_17_32",
    "cmp edx, 8",
    "jae .Lkdc_8_16",
    "cmp edx, 4",
    "jae .Lkdc_4_7",
    "cmp edx, 1",
    "ja .Lkdc_2_3",
    "jb .Lkdc_ret",
    "movzx eax, byte ptr [rsi]",
    "mov byte ptr [rdi], al",
    ".Lkdc_ret:",
    "ret",
    ".p2align 4",
    ".Lkdc_33_63:",
    "vmovdqu64 ymm16, ymmword ptr [rsi]",
    "vmovdqu64 ymm17, ymmword ptr [rsi + rdx - 32]",
    "vmovdqu64 ymmword ptr [rdi], ymm16",
    "vmovdqu64 ymmword ptr [rdi + rdx - 32], ymm17",
    "ret",
    ".p2align 4",
    ".Lkdc_17_32:",
    "vmovdqu64 xmm16, xmmword ptr [rsi]",
    "vmovdqu64 xmm17, xmmword ptr [rsi + rdx - 16]",
    "vmovdqu64 xmmword ptr [rdi], xmm16",
    "vmovdqu64 xmmword ptr [rdi + rdx - 16], xmm17",
    "ret",
    ".p2align 4",
    ".Lkdc_8_16:",
    "mov rax, qword ptr [rsi]",
    "mov r8, qword ptr [rsi + rdx - 8]",
    "mov qword ptr [rdi], rax",
    "mov qword ptr [rdi + rdx - 8], r8",
    "ret",
    ".p2align 4",
    ".Lkdc_4_7:",
    "mov eax, dword ptr [rsi]",
    "mov r8d, dword ptr [rsi + rdx - 4]",
    "mov dword ptr [rdi], eax",
    "mov dword ptr [rdi + rdx - 4], r8d",
    "ret",
    ".p2align 4",
    ".Lkdc_2_3:",
    "movzx eax, word ptr [rsi]",
    "movzx r8d, word ptr [rsi + rdx - 2]",
    "mov word ptr [rdi], ax",
    "mov word ptr [rdi + rdx - 2], r8w",
    "ret",
    ".p2align 4",
    ".Lkdc_above128:",
    "cmp rdx, 256",
    "ja .Lkdc_above256",
    "vmovdqu64 zmm16, zmmword ptr [rsi]",
    "vmovdqu64 zmm17, zmmword ptr [rsi + 64]",
    "vmovdqu64 zmm18, zmmword ptr [rsi + rdx - 128]",
    "vmovdqu64 zmm19, zmmword ptr [rsi + rdx - 64]",
    "vmovdqu64 zmmword ptr [rdi], zmm16",
    "vmovdqu64 zmmword ptr [rdi + 64], zmm17",
    "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm18",
    "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm19",
    "ret",
    ".p2align 4",
    ".Lkdc_above256:",
    "cmp rdx, 512",
    "ja .Lkdc_above512",
    "vmovdqu64 zmm16, zmmword ptr [rsi]",
    "vmovdqu64 zmm17, zmmword ptr [rsi + 64]",
    "vmovdqu64 zmm18, zmmword ptr [rsi + 128]",
    "vmovdqu64 zmm19, zmmword ptr [rsi + 192]",
    "vmovdqu64 zmm20, zmmword ptr [rsi + rdx - 256]",
    "vmovdqu64 zmm21, zmmword ptr [rsi + rdx - 192]",
    "vmovdqu64 zmm22, zmmword ptr [rsi + rdx - 128]",
    "vmovdqu64 zmm23, zmmword ptr [rsi + rdx - 64]",
    "vmovdqu64 zmmword ptr [rdi], zmm16",
    "vmovdqu64 zmmword ptr [rdi + 64], zmm17",
    "vmovdqu64 zmmword ptr [rdi + 128], zmm18",
    "vmovdqu64 zmmword ptr [rdi + 192], zmm19",
    "vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm20",
    "vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm21",
    "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm22",
    "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm23",
    "ret",
    ".p2align 4",
    ".Lkdc_above512:",
    "cmp rdx, 2048",
    "jae .Lkdc_avx2",
    "test cl, cl",
    "jnz .Lkdc_avx2",
    // (s - d) mod 4096 below 512: forward steps would load right behind
    // their own stores at the same page offsets (4K aliasing), so copy
    // backward, as glibc does.
    "mov eax, esi",
    "sub eax, edi",
    "test eax, 3584",
    "jz .Lkdc_backward",
    "vmovdqu64 zmm16, zmmword ptr [rsi]",
    "vmovdqu64 zmm17, zmmword ptr [rsi + rdx - 256]",
    "vmovdqu64 zmm18, zmmword ptr [rsi + rdx - 192]",
    "vmovdqu64 zmm19, zmmword ptr [rsi + rdx - 128]",
    "vmovdqu64 zmm20, zmmword ptr [rsi + rdx - 64]",
    "mov r8, rdi",
    "and r8, 63",
    "neg r8",
    "add r8, 64",
    "lea r9, [rdx - 256]",
    ".p2align 4",
    ".Lkdc_loop:",
    "vmovdqu64 zmm21, zmmword ptr [rsi + r8]",
    "vmovdqu64 zmm22, zmmword ptr [rsi + r8 + 64]",
    "vmovdqu64 zmm23, zmmword ptr [rsi + r8 + 128]",
    "vmovdqu64 zmm24, zmmword ptr [rsi + r8 + 192]",
    "vmovdqa64 zmmword ptr [rdi + r8], zmm21",
    "vmovdqa64 zmmword ptr [rdi + r8 + 64], zmm22",
    "vmovdqa64 zmmword ptr [rdi + r8 + 128], zmm23",
    "vmovdqa64 zmmword ptr [rdi + r8 + 192], zmm24",
    "add r8, 256",
    "cmp r8, r9",
    "jb .Lkdc_loop",
    "vmovdqu64 zmmword ptr [rdi], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm17",
    "vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm18",
    "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm19",
    "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm20",
    "ret",
    ".p2align 4",
    ".Lkdc_backward:",
    "vmovdqu64 zmm16, zmmword ptr [rsi]",
    "vmovdqu64 zmm17, zmmword ptr [rsi + 64]",
    "vmovdqu64 zmm18, zmmword ptr [rsi + 128]",
    "vmovdqu64 zmm19, zmmword ptr [rsi + 192]",
    "vmovdqu64 zmm20, zmmword ptr [rsi + rdx - 64]",
    "lea r8, [rdi + rdx]",
    "and r8, -64",
    "sub r8, rdi",
    ".p2align 4",
    ".Lkdc_bloop:",
    "sub r8, 256",
    "vmovdqu64 zmm21, zmmword ptr [rsi + r8 + 192]",
    "vmovdqu64 zmm22, zmmword ptr [rsi + r8 + 128]",
    "vmovdqu64 zmm23, zmmword ptr [rsi + r8 + 64]",
    "vmovdqu64 zmm24, zmmword ptr [rsi + r8]",
    "vmovdqa64 zmmword ptr [rdi + r8 + 192], zmm21",
    "vmovdqa64 zmmword ptr [rdi + r8 + 128], zmm22",
    "vmovdqa64 zmmword ptr [rdi + r8 + 64], zmm23",
    "vmovdqa64 zmmword ptr [rdi + r8], zmm24",
    "cmp r8, 256",
    "ja .Lkdc_bloop",
    "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm20",
    "vmovdqu64 zmmword ptr [rdi + 192], zmm19",
    "vmovdqu64 zmmword ptr [rdi + 128], zmm18",
    "vmovdqu64 zmmword ptr [rdi + 64], zmm17",
    "vmovdqu64 zmmword ptr [rdi], zmm16",
    "ret",
    ".p2align 4",
    ".Lkdc_avx2:",
    "jmp {avx2}",
    ".size kdelta_copy_avx512, . - kdelta_copy_avx512",
    ".popsection",
    avx2 = sym super::x86::copy_avx2,
);

// strlen is one routine in assembly (`global_asm!`) rather than Rust around
// inline-assembly blocks, for one reason: placement. Measured pinned on this
// Zen 4, the Rust version's speed on 64-128-byte strings moved between 0.88x
// and 1.4x libc from one build to the next as unrelated code changed where
// the linker put it; stable Rust cannot align a function. Here the entry is
// 64-byte aligned and the branch targets and loop heads are 16-byte aligned
// (padding runs at most once per call, on entering a loop, never on the
// short-string paths), the 2001 study's first technique ("branch targets
// aligned to fetch blocks"). It works in
// zmm16-zmm17 and k1 only, which leave no dirty upper state, so no
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
// - then aligned 128-byte blocks (two loads folded by byte-wise minimum, one
//   test) from the 128-byte boundary at or below the first unchecked byte.
//   Each block starts at or before a byte not yet known to follow the NUL,
//   so it holds a byte that must be read; 64 and 128 divide the page size,
//   so the block lies in that byte's page, which is mapped. On a hit the
//   64-byte parts of the block are tested again in order to find the first
//   NUL.
//
// The loop's step is 128 bytes, as glibc's `strlen-evex.S` steps (four
// 32-byte vectors there, two 64-byte ones here). An earlier version went on
// to 256-byte steps (four 64-byte loads, one test) past 512-768 bytes: as
// fast as the C library on cached strings, but 0.65-0.74x on strings not in
// cache, at every size (issue 21). Measured pinned, alternating libc and
// tuned in short blocks timed by the thread's CPU clock, 61 pairs, on cold
// strings (a 64 MiB rotation): the 256-byte loop 0.84-0.90x libc at 4 KiB,
// 1 MiB and 16 MiB; 256-byte steps of eight 32-byte loads 0.90-0.97x; a
// software prefetch 512 or 1024 bytes ahead 0.64-0.76x (it disturbs the
// hardware prefetcher); 128-byte steps of 32-byte vectors (glibc's loop)
// 0.98-1.02x cold but 0.79-0.92x warm at 512 B-4 KiB; these 128-byte steps
// of 64-byte vectors 0.98-1.07x cold and 0.99-1.01x warm (docs/mem.md).
global_asm!(
    ".pushsection .text.kdelta_strlen_avx512,\"ax\",@progbits",
    // rax = the zero-byte mask of the aligned 64 bytes at rdx.
    ".macro kds_zmask",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    ".endm",
    // To .Lkds_found if the 64 bytes at rdx hold a NUL, else rdx += 64.
    ".macro kds_test_next",
    "kds_zmask",
    "test rax, rax",
    "jnz .Lkds_found",
    "add rdx, 64",
    ".endm",
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
    "kds_zmask",
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
    "kds_test_next",
    "kds_test_next",
    "kds_test_next",
    "kds_test_next",
    // No NUL in [p, rdx). 128-byte steps from rdx rounded down to 128.
    "and rdx, -128",
    ".p2align 4",
    ".Lkds_loop128:",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vpminub zmm17, zmm16, zmmword ptr [rdx + 64]",
    "vptestnmb k1, zmm17, zmm17",
    "kortestq k1, k1",
    "jnz .Lkds_in128",
    "add rdx, 128",
    "jmp .Lkds_loop128",
    // The NUL is in the 128 bytes at rdx: test its 64-byte parts in order.
    ".p2align 4",
    ".Lkds_in128:",
    "kds_test_next",
    "kds_zmask",
    "jmp .Lkds_found",
    // rax = the zero-byte mask of the 64-byte block at rdx, not zero.
    ".p2align 4",
    ".Lkds_found:",
    "tzcnt rax, rax",
    "sub rdx, rdi",
    "add rax, rdx",
    "ret",
    ".size kdelta_strlen_avx512, . - kdelta_strlen_avx512",
    ".purgem kds_test_next",
    ".purgem kds_zmask",
    ".popsection",
);

extern "C" {
    /// The copy above (C calling convention, which is System V here).
    ///
    /// # Safety
    /// `d` valid for `n` writes, `s` for `n` reads, no overlap;
    /// AVX-512F/BW/VL and AVX2 present.
    pub(super) fn kdelta_copy_avx512(d: *mut u8, s: *const u8, n: usize, nt: bool);

    /// The strlen above: clobbers rax, rcx, rdx, zmm16, zmm17, k1, all
    /// caller-saved.
    ///
    /// # Safety
    /// `p` starts a NUL-terminated string; AVX-512F/BW present.
    pub(super) fn kdelta_strlen_avx512(p: *const u8) -> usize;
}
