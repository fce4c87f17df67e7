//! x86-64 AVX2 variant, the entry points in assembly (`global_asm!`): the
//! copy, the fill (with `rep stosb` for long temporal fills) and strlen.
//! Streaming copies and fills tail-call the Rust loops in `x86.rs`
//! (`copy_avx2`, `set_avx2`).
//!
//! Why assembly: on an AMD EPYC (Zen 3, family 0x19 model 0x01), where the
//! rule (`rule.rs`) picks this variant, the Rust routines (the same
//! instructions, a linear chain of size compares, no alignment control) ran
//! 0.72-0.90x glibc 2.36's `__memmove_avx_unaligned_erms`,
//! `__memset_avx2_unaligned_erms` and `__strlen_avx2` at 64 B-1.4 KiB warm
//! (docs/mem.md). As in `avx512.rs`: 64-byte aligned entries,
//! 16-byte aligned branch targets after a `ret` or `jmp`, loops that do not
//! straddle a fetch window, the size classes reached in two or three
//! compares. The routines use ymm0-ymm8, whose upper
//! halves they dirty, so every path that touched a ymm register runs
//! `vzeroupper` before it returns or jumps away (as glibc's do); the paths
//! below 32 bytes use only VEX-encoded xmm forms, which leave no dirty state.
//! Safety contracts are the module's (`super` docs); every function here
//! requires AVX2, which `Variant::Avx2` checks.

use core::arch::global_asm;

// The copy (System V: rdi = d, rsi = s, rdx = n, rcx = nt_min). Contract:
// `d` valid for `n` writes, `s` for `n` reads, no overlap, AVX2 present.
// Size classes, each access in [s, s + n) and [d, d + n) because the class
// guarantees `n - width >= 0` for every tail access:
// - 0-31: two overlapping 1/2/4/8/16-byte moves (one for n = 1);
// - 32-64, 65-128, 129-256: two, four and eight 32-byte moves from both
//   ends (tails at n - 32k, k <= 4, and n >= 32k in each class);
// - above 256, not streaming (n < nt_min): the first 32 and the last 128
//   bytes are loaded before a loop of four 32-byte moves with aligned
//   stores, from i = 32 - (d mod 32) (1..=32, so d + i is 32-aligned) while
//   i < n - 128 (so i + 128 <= n); it runs at least once (i <= 32 <
//   n - 128) and leaves [0, i_start) and [i_end, n) to the head [0, 32) and
//   the tail [n - 128, n), stored after it. (No `rep movsb`: on Zen 3 this
//   loop ran 1.49-1.74x glibc's string move at 2896 B-11.5 KiB warm);
// - above 256, streaming: a tail call to `x86::copy_avx2` (the same loop
//   with streaming stores and a prefetch), with every register as it came,
//   before any ymm register is touched.
// Every class up to 256 bytes loads all its bytes before it stores any, so
// it is also a correct `memmove` (the preload library relies on it). Up to
// 256 bytes it returns `d` in rax, as `memcpy`; above, nothing.
global_asm!(
    ".pushsection .text.kdelta_copy_avx2,\"ax\",@progbits",
    ".p2align 6",
    ".globl kdelta_copy_avx2",
    ".hidden kdelta_copy_avx2",
    ".type kdelta_copy_avx2,@function",
    "kdelta_copy_avx2:",
    "mov rax, rdi",
    "cmp rdx, 32",
    "jb .Lkc2_below32",
    "cmp rdx, 64",
    "ja .Lkc2_above64",
    "vmovdqu ymm0, ymmword ptr [rsi]",
    "vmovdqu ymm1, ymmword ptr [rsi + rdx - 32]",
    "vmovdqu ymmword ptr [rdi], ymm0",
    "vmovdqu ymmword ptr [rdi + rdx - 32], ymm1",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lkc2_below32:",
    "cmp edx, 16",
    "jae .Lkc2_16_31",
    "cmp edx, 8",
    "jae .Lkc2_8_15",
    "cmp edx, 4",
    "jae .Lkc2_4_7",
    "cmp edx, 1",
    "ja .Lkc2_2_3",
    "jb .Lkc2_ret",
    "movzx ecx, byte ptr [rsi]",
    "mov byte ptr [rdi], cl",
    ".Lkc2_ret:",
    "ret",
    ".p2align 4",
    ".Lkc2_16_31:",
    "vmovdqu xmm0, xmmword ptr [rsi]",
    "vmovdqu xmm1, xmmword ptr [rsi + rdx - 16]",
    "vmovdqu xmmword ptr [rdi], xmm0",
    "vmovdqu xmmword ptr [rdi + rdx - 16], xmm1",
    "ret",
    ".p2align 4",
    ".Lkc2_8_15:",
    "mov rcx, qword ptr [rsi]",
    "mov r8, qword ptr [rsi + rdx - 8]",
    "mov qword ptr [rdi], rcx",
    "mov qword ptr [rdi + rdx - 8], r8",
    "ret",
    ".p2align 4",
    ".Lkc2_4_7:",
    "mov ecx, dword ptr [rsi]",
    "mov r8d, dword ptr [rsi + rdx - 4]",
    "mov dword ptr [rdi], ecx",
    "mov dword ptr [rdi + rdx - 4], r8d",
    "ret",
    ".p2align 4",
    ".Lkc2_2_3:",
    "movzx ecx, word ptr [rsi]",
    "movzx r8d, word ptr [rsi + rdx - 2]",
    "mov word ptr [rdi], cx",
    "mov word ptr [rdi + rdx - 2], r8w",
    "ret",
    ".p2align 4",
    ".Lkc2_above64:",
    "cmp rdx, 128",
    "ja .Lkc2_above128",
    "vmovdqu ymm0, ymmword ptr [rsi]",
    "vmovdqu ymm1, ymmword ptr [rsi + 32]",
    "vmovdqu ymm2, ymmword ptr [rsi + rdx - 64]",
    "vmovdqu ymm3, ymmword ptr [rsi + rdx - 32]",
    "vmovdqu ymmword ptr [rdi], ymm0",
    "vmovdqu ymmword ptr [rdi + 32], ymm1",
    "vmovdqu ymmword ptr [rdi + rdx - 64], ymm2",
    "vmovdqu ymmword ptr [rdi + rdx - 32], ymm3",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lkc2_above128:",
    "cmp rdx, 256",
    "ja .Lkc2_long",
    "vmovdqu ymm0, ymmword ptr [rsi]",
    "vmovdqu ymm1, ymmword ptr [rsi + 32]",
    "vmovdqu ymm2, ymmword ptr [rsi + 64]",
    "vmovdqu ymm3, ymmword ptr [rsi + 96]",
    "vmovdqu ymm4, ymmword ptr [rsi + rdx - 128]",
    "vmovdqu ymm5, ymmword ptr [rsi + rdx - 96]",
    "vmovdqu ymm6, ymmword ptr [rsi + rdx - 64]",
    "vmovdqu ymm7, ymmword ptr [rsi + rdx - 32]",
    "vmovdqu ymmword ptr [rdi], ymm0",
    "vmovdqu ymmword ptr [rdi + 32], ymm1",
    "vmovdqu ymmword ptr [rdi + 64], ymm2",
    "vmovdqu ymmword ptr [rdi + 96], ymm3",
    "vmovdqu ymmword ptr [rdi + rdx - 128], ymm4",
    "vmovdqu ymmword ptr [rdi + rdx - 96], ymm5",
    "vmovdqu ymmword ptr [rdi + rdx - 64], ymm6",
    "vmovdqu ymmword ptr [rdi + rdx - 32], ymm7",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lkc2_long:",
    "cmp rdx, rcx",
    "jae .Lkc2_stream",
    "vmovdqu ymm0, ymmword ptr [rsi]",
    "vmovdqu ymm1, ymmword ptr [rsi + rdx - 128]",
    "vmovdqu ymm2, ymmword ptr [rsi + rdx - 96]",
    "vmovdqu ymm3, ymmword ptr [rsi + rdx - 64]",
    "vmovdqu ymm4, ymmword ptr [rsi + rdx - 32]",
    "mov r8, rdi",
    "and r8, 31",
    "neg r8",
    "add r8, 32",
    "lea r9, [rdx - 128]",
    // The loop (63 bytes of code) on one 64-byte line, as the fill's.
    ".p2align 6",
    ".Lkc2_loop:",
    "vmovdqu ymm5, ymmword ptr [rsi + r8]",
    "vmovdqu ymm6, ymmword ptr [rsi + r8 + 32]",
    "vmovdqu ymm7, ymmword ptr [rsi + r8 + 64]",
    "vmovdqu ymm8, ymmword ptr [rsi + r8 + 96]",
    "vmovdqa ymmword ptr [rdi + r8], ymm5",
    "vmovdqa ymmword ptr [rdi + r8 + 32], ymm6",
    "vmovdqa ymmword ptr [rdi + r8 + 64], ymm7",
    "vmovdqa ymmword ptr [rdi + r8 + 96], ymm8",
    "sub r8, -128",
    "cmp r8, r9",
    "jb .Lkc2_loop",
    "vmovdqu ymmword ptr [rdi], ymm0",
    "vmovdqu ymmword ptr [rdi + rdx - 128], ymm1",
    "vmovdqu ymmword ptr [rdi + rdx - 96], ymm2",
    "vmovdqu ymmword ptr [rdi + rdx - 64], ymm3",
    "vmovdqu ymmword ptr [rdi + rdx - 32], ymm4",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lkc2_stream:",
    "jmp {long}",
    ".size kdelta_copy_avx2, . - kdelta_copy_avx2",
    ".popsection",
    long = sym super::x86::copy_avx2,
);

// The fill (System V: rdi = d, sil = c, rdx = n, rcx = nt_min). Contract:
// `d` valid for `n` writes, AVX2 present. glibc 2.36's
// `__memset_avx2_unaligned_erms` shape:
// - 0-31: two overlapping stores of the widest fitting width (1 byte alone
//   for n = 1), from the byte replicated in xmm0 (or its low 8 bytes in rax);
// - 32-64: two 32-byte stores from both ends;
// - above 64, streaming (n >= nt_min, the non-temporal rule): a tail call
//   to `x86::set_avx2` (its streaming loop above 128 bytes);
// - from `rule::REP_STOSB_MIN` up, not streaming: one `rep stosb`, as
//   glibc from its `rep_stosb_threshold` (2048) up: the string store writes
//   whole lines without reading them first, which temporal vector stores
//   cannot (the Rust loop ran 0.55-0.59x libc at 64 MiB, docs/mem.md);
// - else, in ascending address order, with r9 = d + n - 128: 65-128 bytes
//   [d, d + 64) and [r9 + 64, d + n) (n >= 64 each way); 129-256 the first
//   128 bytes and [r9, d + n) (r9 >= d + 1); 257 and up the first 128,
//   aligned 128-byte steps from r8 = (d + 128) & -32 (in (d + 96, d + 128],
//   so the steps meet the head) while r8 < r9 (each step ends before
//   d + n; the first is taken as n > 256 puts r8 <= d + 128 < r9; the last
//   ends at or past r9), then [r9, d + n).
// Registers: rax, rcx, r8, r9, ymm0 (caller-saved). Returns nothing.
global_asm!(
    ".pushsection .text.kdelta_set_avx2,\"ax\",@progbits",
    ".p2align 6",
    ".globl kdelta_set_avx2",
    ".hidden kdelta_set_avx2",
    ".type kdelta_set_avx2,@function",
    "kdelta_set_avx2:",
    "vmovd xmm0, esi",
    "cmp rdx, 32",
    "jb .Lkf2_below32",
    "vpbroadcastb ymm0, xmm0",
    "cmp rdx, 64",
    "ja .Lkf2_above64",
    "vmovdqu ymmword ptr [rdi], ymm0",
    "vmovdqu ymmword ptr [rdi + rdx - 32], ymm0",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lkf2_below32:",
    "vpbroadcastb xmm0, xmm0",
    "cmp edx, 16",
    "jae .Lkf2_16_31",
    "vmovq rax, xmm0",
    "cmp edx, 8",
    "jae .Lkf2_8_15",
    "cmp edx, 4",
    "jae .Lkf2_4_7",
    "cmp edx, 1",
    "ja .Lkf2_2_3",
    "jb .Lkf2_ret",
    "mov byte ptr [rdi], al",
    ".Lkf2_ret:",
    "ret",
    ".p2align 4",
    ".Lkf2_16_31:",
    "vmovdqu xmmword ptr [rdi], xmm0",
    "vmovdqu xmmword ptr [rdi + rdx - 16], xmm0",
    "ret",
    ".p2align 4",
    ".Lkf2_8_15:",
    "mov qword ptr [rdi], rax",
    "mov qword ptr [rdi + rdx - 8], rax",
    "ret",
    ".p2align 4",
    ".Lkf2_4_7:",
    "mov dword ptr [rdi], eax",
    "mov dword ptr [rdi + rdx - 4], eax",
    "ret",
    ".p2align 4",
    ".Lkf2_2_3:",
    "mov word ptr [rdi], ax",
    "mov word ptr [rdi + rdx - 2], ax",
    "ret",
    ".p2align 4",
    // Decided before any store: a string store or a streaming loop writes
    // everything itself. From here on glibc's layout: the size classes fall
    // through, so a long fill takes one branch to reach its loop.
    ".Lkf2_above64:",
    "cmp rdx, rcx",
    "jae .Lkf2_stream",
    "cmp rdx, {rep_min}",
    "jae .Lkf2_rep",
    "vmovdqu ymmword ptr [rdi], ymm0",
    "vmovdqu ymmword ptr [rdi + 32], ymm0",
    "lea r9, [rdi + rdx - 128]",
    "cmp rdx, 128",
    "jbe .Lkf2_last2",
    "vmovdqu ymmword ptr [rdi + 64], ymm0",
    "vmovdqu ymmword ptr [rdi + 96], ymm0",
    "cmp rdx, 256",
    "jbe .Lkf2_last4",
    "lea r8, [rdi + 128]",
    "and r8, -32",
    // The loop (32 bytes of code) in one 32-byte fetch window, as glibc's
    // starts on a 64-byte line: at 16-byte alignment it straddled one and
    // the fill ran 0.86-0.99x libc at 360 B-1448 B warm; aligned,
    // 0.96-1.07x (docs/mem.md, both under load).
    ".p2align 5",
    ".Lkf2_loop:",
    "vmovdqa ymmword ptr [r8], ymm0",
    "vmovdqa ymmword ptr [r8 + 32], ymm0",
    "vmovdqa ymmword ptr [r8 + 64], ymm0",
    "vmovdqa ymmword ptr [r8 + 96], ymm0",
    "sub r8, -128",
    "cmp r8, r9",
    "jb .Lkf2_loop",
    ".Lkf2_last4:",
    "vmovdqu ymmword ptr [r9], ymm0",
    "vmovdqu ymmword ptr [r9 + 32], ymm0",
    ".Lkf2_last2:",
    "vmovdqu ymmword ptr [r9 + 64], ymm0",
    "vmovdqu ymmword ptr [r9 + 96], ymm0",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lkf2_rep:",
    // `rep stosb` stores al to the rcx bytes from rdi upward (the ABI keeps
    // the direction flag clear): exactly [d, d + n).
    "vzeroupper",
    "mov eax, esi",
    "mov rcx, rdx",
    "rep stosb",
    "ret",
    ".p2align 4",
    ".Lkf2_stream:",
    "vzeroupper",
    "jmp {stream}",
    ".size kdelta_set_avx2, . - kdelta_set_avx2",
    ".popsection",
    rep_min = const super::rule::REP_STOSB_MIN,
    stream = sym super::x86::set_avx2,
);

// strlen (System V: rdi = p; rax = the length). glibc 2.36's
// `strlen-avx2.S` shape, the AVX2 form of `kdelta_strlen_avx512` (whose
// comment gives the reasons). Loads, each inside one page that holds a byte
// of the string or its NUL (module docs, THE SAFETY ARGUMENT):
// - first, when `[p, p + 32)` does not cross a 4096-byte boundary
//   (p mod 4096 <= 4064), one unaligned 32-byte load at p, inside the
//   4096-byte chunk holding p; otherwise the aligned 32-byte block holding
//   p, the bytes before p shifted out of the mask (`shr eax, cl` counts cl
//   mod 32 = p - (p & -32)). Either way, with rdx = p & -32, no NUL lies
//   in [p, rdx + 32);
// - then the four aligned 32-byte blocks at rdx + 32 .. rdx + 128, each
//   loaded only when no byte before it is the NUL;
// - then aligned 128-byte steps from b = (rdx + 160) & -128 (at or below
//   the first unchecked byte rdx + 160, and above p): each step is one
//   128-byte aligned block, taken only when no NUL came before it, so it
//   holds a byte of the string or its NUL; 128 divides the page size, so
//   it lies in that byte's page. The four vectors are folded by byte-wise
//   minimum; on a hit the NUL's position comes from the step's registers.
// Registers: rax, rcx, rdx, ymm0-ymm5 (caller-saved).
global_asm!(
    ".pushsection .text.kdelta_strlen_avx2,\"ax\",@progbits",
    // To `label` when the aligned 32 bytes at rdx + off hold a NUL, with
    // eax = their zero-byte mask (ymm0 is zero).
    ".macro ks2_test32 off, label",
    "vpcmpeqb ymm1, ymm0, ymmword ptr [rdx + \\off]",
    "vpmovmskb eax, ymm1",
    "test eax, eax",
    "jnz \\label",
    ".endm",
    ".p2align 6",
    ".globl kdelta_strlen_avx2",
    ".hidden kdelta_strlen_avx2",
    ".type kdelta_strlen_avx2,@function",
    "kdelta_strlen_avx2:",
    "vpxor xmm0, xmm0, xmm0",
    "mov eax, edi",
    "and eax, 4095",
    "cmp eax, 4064",
    "ja .Lks2_cross",
    "vpcmpeqb ymm1, ymm0, ymmword ptr [rdi]",
    "vpmovmskb eax, ymm1",
    "test eax, eax",
    "jz .Lks2_more",
    "tzcnt eax, eax",
    "vzeroupper",
    "ret",
    // The NUL is in the 32 bytes at rdx + 32 * i, eax its mask.
    ".p2align 4",
    ".Lks2_x1:",
    "tzcnt eax, eax",
    "sub rdx, rdi",
    "lea rax, [rdx + rax + 32]",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lks2_x2:",
    "tzcnt eax, eax",
    "sub rdx, rdi",
    "lea rax, [rdx + rax + 64]",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lks2_x3:",
    "tzcnt eax, eax",
    "sub rdx, rdi",
    "lea rax, [rdx + rax + 96]",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lks2_x4:",
    "tzcnt eax, eax",
    "sub rdx, rdi",
    "lea rax, [rdx + rax + 128]",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lks2_cross:",
    "mov rdx, rdi",
    "and rdx, -32",
    "vpcmpeqb ymm1, ymm0, ymmword ptr [rdx]",
    "vpmovmskb eax, ymm1",
    "mov ecx, edi",
    "shr eax, cl",
    "test eax, eax",
    "jz .Lks2_checks",
    "tzcnt eax, eax",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lks2_more:",
    "mov rdx, rdi",
    "and rdx, -32",
    ".Lks2_checks:",
    "ks2_test32 32, .Lks2_x1",
    "ks2_test32 64, .Lks2_x2",
    "ks2_test32 96, .Lks2_x3",
    "ks2_test32 128, .Lks2_x4",
    // No NUL in [p, rdx + 160): the loop loads at rdx + 128 with
    // rdx = b - 128 = (rdx + 32) & -128.
    "add rdx, 32",
    "and rdx, -128",
    ".p2align 4",
    ".Lks2_loop:",
    "vmovdqa ymm1, ymmword ptr [rdx + 128]",
    "vpminub ymm2, ymm1, ymmword ptr [rdx + 160]",
    "vmovdqa ymm3, ymmword ptr [rdx + 192]",
    "vpminub ymm4, ymm3, ymmword ptr [rdx + 224]",
    "vpminub ymm5, ymm2, ymm4",
    "vpcmpeqb ymm5, ymm5, ymm0",
    "vpmovmskb ecx, ymm5",
    "sub rdx, -128",
    "test ecx, ecx",
    "jz .Lks2_loop",
    // The NUL is in the 128 bytes at rdx; ecx marks where any of the four
    // vectors is zero. The first vector's own mask, then ymm2 = min(first,
    // second) (its zeros are the second's once the first has none); else
    // the NUL is in the last 64 bytes, the lowest set bit of (ecx << 32 |
    // the third vector's mask), ecx's low half standing for the fourth's
    // zeros there. Each vector is tested on its own before the next, as in
    // glibc: a tail that first tests ymm2 and then rebuilds the first
    // vector's mask ran strlen 5792 B warm (the NUL in the first vector)
    // at about 0.90x glibc in kdelta's timed loop (docs/mem.md).
    "sub rdx, rdi",
    "vpcmpeqb ymm1, ymm1, ymm0",
    "vpmovmskb eax, ymm1",
    "test eax, eax",
    "jnz .Lks2_y1",
    "vpcmpeqb ymm2, ymm2, ymm0",
    "vpmovmskb eax, ymm2",
    "test eax, eax",
    "jnz .Lks2_y2",
    "vpcmpeqb ymm3, ymm3, ymm0",
    "vpmovmskb eax, ymm3",
    "shl rcx, 32",
    "or rax, rcx",
    "tzcnt rax, rax",
    "lea rax, [rdx + rax + 64]",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lks2_y1:",
    "tzcnt eax, eax",
    "add rax, rdx",
    "vzeroupper",
    "ret",
    ".p2align 4",
    ".Lks2_y2:",
    "tzcnt eax, eax",
    "lea rax, [rdx + rax + 32]",
    "vzeroupper",
    "ret",
    ".size kdelta_strlen_avx2, . - kdelta_strlen_avx2",
    ".purgem ks2_test32",
    ".popsection",
);

extern "C" {
    /// The copy above (C calling convention, which is System V here).
    ///
    /// # Safety
    /// `d` valid for `n` writes, `s` for `n` reads, no overlap; AVX2 present.
    pub(super) fn kdelta_copy_avx2(d: *mut u8, s: *const u8, n: usize, nt_min: usize);

    /// The fill above.
    ///
    /// # Safety
    /// `d` valid for `n` writes; AVX2 present.
    pub(super) fn kdelta_set_avx2(d: *mut u8, c: u8, n: usize, nt_min: usize);

    /// The strlen above.
    ///
    /// # Safety
    /// `p` starts a NUL-terminated string; AVX2 present.
    pub(super) fn kdelta_strlen_avx2(p: *const u8) -> usize;
}
