//! x86-64 AVX-512 variant: copies (64-byte vectors up to 2 KiB, `rep movsb`
//! from [`REP_MOVSB_MIN`]) and strlen (a 64-byte first window, then 32-byte
//! vectors), both written in assembly (`global_asm!`) so their entry and
//! branch targets are aligned; the fill is `avx512_set.rs`. Copies of
//! 2 KiB to `REP_MOVSB_MIN`, streaming copies and page clears use the AVX2
//! code (the variant requires AVX2 as well): on this Zen 4 a 64-byte store
//! issues as two 32-byte ones, and the 64-byte loops measured no faster there.
//! Safety contracts are the module's (`super` docs); every function here
//! requires AVX-512F, AVX-512BW, AVX-512VL and AVX2, which `Variant::Avx512`
//! checks.

use core::arch::global_asm;

/// Copies from this size up, when not streaming, are one `rep movsb`.
pub(super) const REP_MOVSB_MIN: usize = 16384;

// The copy is one routine in assembly, like strlen below and for the same
// reason: placement. Measured pinned on this Zen 4 with libc and tuned in
// alternating blocks, the Rust version (the same instructions) ran 0.91-0.93x
// libc at 728 B and 1448 B in one build and 1.0-1.1x in another; glibc's
// routine is assembly with aligned entry and branch targets. Here the entry
// is 64-byte aligned and every branch target that follows a `ret` or `jmp`
// is 16-byte aligned, so no padding is ever executed.
//
// Contract (System V: rdi = d, rsi = s, rdx = n, rcx = nt_min: stream when n >= nt_min): `d` valid for
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
// - REP_MOVSB_MIN and up without streaming: one `rep movsb`, as glibc
//   from 2112 bytes here (`__x86_rep_movsb_threshold`): the string move
//   writes whole destination lines without reading them first, and vector
//   loops ran 0.84-0.94x libc on copies not in cache from 23 KiB to 512 KiB
//   (docs/mem.md, the quiet sweep), while from 2 KiB to 16 KiB warm the loop is
//   1.1-1.4x (the string move's start-up);
// - 2 KiB up to that, or streaming: a tail call to the AVX2 routine (aligned 32-byte
//   stores, 128 bytes a step, streaming stores with prefetch above the
//   threshold), which measured faster than 64-byte steps from 2 KiB up here
//   (a 64-byte store issues as two 32-byte ones on Zen 4).
// Registers: rax, rcx, r8, r9, r10, zmm16-zmm24 (caller-saved); zmm16 and
// up leave no dirty upper state, so no `vzeroupper` is needed. Up to 512
// bytes it returns `d` in rax, as `memcpy` does (rax is set on entry and the
// short paths use rcx, which holds the threshold but is read only above 512
// bytes), so the preload library's `memcpy` can jump to it; the longer
// paths return nothing.
global_asm!(
    ".pushsection .text.kdelta_copy_avx512,\"ax\",@progbits",
    ".p2align 6",
    ".globl kdelta_copy_avx512",
    ".hidden kdelta_copy_avx512",
    ".type kdelta_copy_avx512,@function",
    "kdelta_copy_avx512:",
    "mov rax, rdi",
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
    "movzx ecx, byte ptr [rsi]",
    "mov byte ptr [rdi], cl",
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
    "mov rcx, qword ptr [rsi]",
    "mov r8, qword ptr [rsi + rdx - 8]",
    "mov qword ptr [rdi], rcx",
    "mov qword ptr [rdi + rdx - 8], r8",
    "ret",
    ".p2align 4",
    ".Lkdc_4_7:",
    "mov ecx, dword ptr [rsi]",
    "mov r8d, dword ptr [rsi + rdx - 4]",
    "mov dword ptr [rdi], ecx",
    "mov dword ptr [rdi + rdx - 4], r8d",
    "ret",
    ".p2align 4",
    ".Lkdc_2_3:",
    "movzx ecx, word ptr [rsi]",
    "movzx r8d, word ptr [rsi + rdx - 2]",
    "mov word ptr [rdi], cx",
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
    "cmp rdx, rcx",
    "jae .Lkdc_avx2",
    "cmp rdx, 2048",
    "jae .Lkdc_large",
    // The 64-byte loop for any n > 512 that does not stream (it needs only
    // n > 512 for its bounds, above); the `avx512-movsb` entry below jumps
    // here for 513 bytes up to its `rep movsb` size.
    ".globl kdelta_copy_avx512_loop64",
    ".hidden kdelta_copy_avx512_loop64",
    "kdelta_copy_avx512_loop64:",
    // (s - d) mod 4096 below 512: forward steps would load right behind
    // their own stores at the same page offsets (4K aliasing), so copy
    // backward, as glibc does.
    "mov r10d, esi",
    "sub r10d, edi",
    "test r10d, 3584",
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
    ".Lkdc_large:",
    "cmp rdx, {movsb_min}",
    "jb .Lkdc_avx2",
    // `rep movsb` moves the rcx bytes from rsi to rdi upward (the ABI keeps
    // the direction flag clear): exactly [s, s + n) to [d, d + n).
    "mov rcx, rdx",
    "rep movsb",
    "ret",
    ".p2align 4",
    ".Lkdc_avx2:",
    "jmp {avx2}",
    ".size kdelta_copy_avx512, . - kdelta_copy_avx512",
    ".popsection",
    movsb_min = const REP_MOVSB_MIN,
    avx2 = sym super::x86::copy_avx2,
);

// The `avx512-movsb` copy (the rule's Intel shape, `rule.rs`): the same
// routine with its 2-16 KiB band moved. Up to 512 bytes the size classes
// above (one more compare and jump); streaming copies the AVX2 routine as
// above; 513 bytes up to `MOVSB_FSRM` the 64-byte loop above (whose bounds
// hold for any n > 512); from `MOVSB_FSRM` one `rep movsb`, where glibc 2.36
// starts it on CPUs with fast short string moves. Same contract and
// registers as `kdelta_copy_avx512`.
global_asm!(
    ".pushsection .text.kdelta_copy_avx512_movsb,\"ax\",@progbits",
    ".p2align 6",
    ".globl kdelta_copy_avx512_movsb",
    ".hidden kdelta_copy_avx512_movsb",
    ".type kdelta_copy_avx512_movsb,@function",
    "kdelta_copy_avx512_movsb:",
    "cmp rdx, 512",
    "jbe kdelta_copy_avx512",
    "cmp rdx, rcx",
    "jae {avx2}",
    "cmp rdx, {movsb_min}",
    "jb kdelta_copy_avx512_loop64",
    // [s, s + n) to [d, d + n) upward (the ABI keeps the direction flag clear).
    "mov rcx, rdx",
    "rep movsb",
    "ret",
    ".size kdelta_copy_avx512_movsb, . - kdelta_copy_avx512_movsb",
    ".popsection",
    movsb_min = const super::rule::MOVSB_FSRM,
    avx2 = sym super::x86::copy_avx2,
);

// strlen is one routine in assembly (`global_asm!`) rather than Rust around
// inline-assembly blocks, for one reason: placement. Measured pinned on this
// Zen 4, the Rust version's speed on 64-128-byte strings moved between 0.88x
// and 1.4x libc from one build to the next as unrelated code changed where
// the linker put it; stable Rust cannot align a function. Here the entry is
// 64-byte aligned and the branch targets and loop head are 16-byte aligned
// (padding runs at most once per call, on entering the loop, never on the
// short-string paths), the 2001 study's first technique ("branch targets
// aligned to fetch blocks"). It works in zmm16-zmm21 and k1-k3 only, which
// leave no dirty upper state, so no `vzeroupper` is needed on return.
//
// Loads, each inside one page that holds a byte of the string (module docs).
// THE SAFETY ARGUMENT: strlen never reads across into a page it does not
// own. Every load but the first is an *aligned* block of 32 bytes whose
// first byte is at or before the first byte not yet checked, so (no NUL
// having been found before it) the block holds a byte of the string or its
// NUL; 32 divides the page size, so the block lies inside that byte's page,
// which is mapped. The first load is either 64 bytes inside the 4096-byte
// chunk holding the start, or an aligned 64-byte block holding the start:
// - first, when `[p, p + 64)` does not cross a 4096-byte boundary, one
//   *unaligned* 64-byte load at `p`: it lies in the 4096-byte chunk holding
//   `p`, which is mapped because `p` is the string's first byte (or its NUL).
//   Otherwise the aligned 64-byte block holding `p`, with the bytes before
//   `p` shifted out of the mask. Either way no NUL lies in `[p, e)` with
//   `e = (p & -32) + 64` (the non-crossing window ends at `p + 64 >= e`; the
//   aligned block at `p & -64` ends at `(p & -64) + 64`, and there `rdx` is
//   `p & -64`, so `e` is that end);
// - then the four aligned 32-byte blocks from `e` one by one (no loop
//   control for short strings; a compare of the memory operand against a
//   zeroed register), each loaded only when no byte before it is the NUL;
// - then a loop of aligned 128-byte steps from the 128-byte boundary at or
//   below the first unchecked byte `e + 128`, each step four aligned 32-byte
//   loads folded pairwise by byte-wise minimum and tested with one
//   `kortest`. Each 32-byte block of a step starts at or before a byte not
//   yet known to follow the NUL (the step is only taken when no NUL came
//   before it), so the argument above holds for each. On a hit the NUL's
//   position comes from the registers of the step (the first vector's own
//   mask below the pair's), with no second load.
//
// This is glibc 2.36's `strlen-evex.S` shape (32-byte vectors in the loop,
// 128 bytes a step) with a 64-byte first window. Measured pinned on this
// Zen 4 against the C library in alternating blocks (thread CPU time, 81
// rounds, median per-round ratio; docs/mem.md): the 64-byte-vector loop of the
// previous version (two 64-byte loads a step, and a second load of the
// block on a hit) ran 1.06-1.10x libc on warm strings of 512 B-2 KiB but
// 0.91-0.95x on strings not in cache (4 KiB-16 MiB), at every try; a loop of
// four 32-byte loads a step ran 0.98-1.01x on cold strings. Re-testing the
// block on a hit cost 3-6% on warm 1-4 KiB strings, and 64-byte checks
// before the loop (which then re-read up to 64 bytes) another 2-3%. Hybrids
// (64-byte vectors for the first 1-4 KiB, then 32-byte) moved the loss to
// whichever of warm and cold strings they favoured less. So the loop takes
// glibc's shape (docs/mem.md has the figures).
global_asm!(
    ".pushsection .text.kdelta_strlen_avx512,\"ax\",@progbits",
    // To `label` when the aligned 32 bytes at rdx + off hold a NUL, with
    // eax = their zero-byte mask (zmm21 is zero).
    ".macro kds_test32 off, label",
    "vpcmpeqb k1, ymm21, ymmword ptr [rdx + \\off]",
    "kmovd eax, k1",
    "test eax, eax",
    "jnz \\label",
    ".endm",
    ".p2align 6",
    ".globl kdelta_strlen_avx512",
    ".hidden kdelta_strlen_avx512",
    ".type kdelta_strlen_avx512,@function",
    "kdelta_strlen_avx512:",
    "mov eax, edi",
    "and eax, 4095",
    "cmp eax, 4032",
    "ja .Lkds_cross",
    "vmovdqu64 zmm16, zmmword ptr [rdi]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "test rax, rax",
    "jz .Lkds_more",
    "tzcnt rax, rax",
    "ret",
    // The NUL is in the 32 bytes at rdx + 64 + 32 * (i - 1), eax its mask.
    ".p2align 4",
    ".Lkds_x1:",
    "tzcnt eax, eax",
    "sub rdx, rdi",
    "lea rax, [rdx + rax + 64]",
    "ret",
    ".p2align 4",
    ".Lkds_x2:",
    "tzcnt eax, eax",
    "sub rdx, rdi",
    "lea rax, [rdx + rax + 96]",
    "ret",
    ".p2align 4",
    ".Lkds_x3:",
    "tzcnt eax, eax",
    "sub rdx, rdi",
    "lea rax, [rdx + rax + 128]",
    "ret",
    ".p2align 4",
    ".Lkds_x4:",
    "tzcnt eax, eax",
    "sub rdx, rdi",
    "lea rax, [rdx + rax + 160]",
    "ret",
    // [p, p + 64) would cross a 4096-byte boundary: the aligned 64-byte
    // block holding p, the bytes before p shifted out of the mask.
    ".p2align 4",
    ".Lkds_cross:",
    "mov rdx, rdi",
    "and rdx, -64",
    "vmovdqa64 zmm16, zmmword ptr [rdx]",
    "vptestnmb k1, zmm16, zmm16",
    "kmovq rax, k1",
    "mov ecx, edi", // shr by cl uses cl mod 64 = p - rdx
    "shr rax, cl",
    "test rax, rax",
    "jz .Lkds_checks",
    "tzcnt rax, rax",
    "ret",
    // No NUL in [p, rdx + 64), rdx 32-aligned: the next four aligned
    // 32-byte blocks.
    ".p2align 4",
    ".Lkds_more:",
    "mov rdx, rdi",
    "and rdx, -32",
    ".Lkds_checks:",
    "vpxorq xmm21, xmm21, xmm21",
    "kds_test32 64, .Lkds_x1",
    "kds_test32 96, .Lkds_x2",
    "kds_test32 128, .Lkds_x3",
    "kds_test32 160, .Lkds_x4",
    // No NUL in [p, rdx + 192). Steps of 128 bytes from the 128-byte
    // boundary at or below rdx + 192; the loop loads at rdx + 128.
    "add rdx, 64",
    "and rdx, -128",
    ".p2align 4",
    ".Lkds_loop:",
    "vmovdqa64 ymm17, ymmword ptr [rdx + 128]",
    "vpminub ymm18, ymm17, ymmword ptr [rdx + 160]",
    "vmovdqa64 ymm19, ymmword ptr [rdx + 192]",
    "vpminub ymm20, ymm19, ymmword ptr [rdx + 224]",
    "vptestnmb k1, ymm18, ymm18",
    "vptestnmb k2, ymm20, ymm20",
    "sub rdx, -128",
    "kortestd k1, k2",
    "jz .Lkds_loop",
    // The NUL is in the 128 bytes at rdx. k1 marks where the first or the
    // second vector is zero: if any, the first NUL is the lowest set bit of
    // (k1 << 32 | the first vector's own mask), since a NUL in the first
    // vector comes before any in the second and, when the first has none,
    // k1's bits are the second's. Else the same with k2 and the third.
    "kmovd eax, k1",
    "sub rdx, rdi",
    "test eax, eax",
    "jz .Lkds_second",
    "vptestnmb k3, ymm17, ymm17",
    "kmovd ecx, k3",
    "shl rax, 32",
    "or rax, rcx",
    "tzcnt rax, rax",
    "add rax, rdx",
    "ret",
    ".p2align 4",
    ".Lkds_second:",
    "vptestnmb k3, ymm19, ymm19",
    "kunpckdq k3, k2, k3",
    "kmovq rax, k3",
    "tzcnt rax, rax",
    "lea rax, [rdx + rax + 64]",
    "ret",
    ".size kdelta_strlen_avx512, . - kdelta_strlen_avx512",
    ".purgem kds_test32",
    ".popsection",
);

extern "C" {
    /// The copy above (C calling convention, which is System V here).
    ///
    /// # Safety
    /// `d` valid for `n` writes, `s` for `n` reads, no overlap;
    /// AVX-512F/BW/VL and AVX2 present.
    pub(super) fn kdelta_copy_avx512(d: *mut u8, s: *const u8, n: usize, nt_min: usize);

    /// The `avx512-movsb` copy above: the same contract.
    ///
    /// # Safety
    /// As `kdelta_copy_avx512`.
    pub(super) fn kdelta_copy_avx512_movsb(d: *mut u8, s: *const u8, n: usize, nt_min: usize);

    /// The strlen above: clobbers rax, rcx, rdx, zmm16-zmm21, k1-k3, all
    /// caller-saved.
    ///
    /// # Safety
    /// `p` starts a NUL-terminated string; AVX-512F/BW present.
    pub(super) fn kdelta_strlen_avx512(p: *const u8) -> usize;
}
