//! x86-64 AVX-512 fill: `memset`'s shape on this machine's C library.
//!
//! glibc 2.36 picks `__memset_avx512_unaligned_erms` on this Zen 4 (gdb's
//! `info symbol` on the resolved `memset`): 64-byte stores, and `rep stosb`
//! from 2 KiB up. kdelta's fill used the AVX2 routine (32-byte stores, no
//! string store) and ran 0.77-0.88x libc at 128-512 bytes warm and
//! 0.88-0.96x on buffers not in cache from 1448 B to 16 MiB (docs/mem.md,
//! the quiet sweep). This routine takes the C library's shape:
//!
//! - 0-63 bytes: two overlapping stores of the widest fitting width (1 byte
//!   alone for n = 1), from a byte replicated into a general register or
//!   the low part of `zmm16`;
//! - 64-128, 129-256, 257-512: two, four and eight 64-byte stores from both
//!   ends (each tail offset `n - 64k >= 0` by the class);
//! - 513-2048: the first 256 bytes and the last 256, and between them a
//!   loop of four *aligned* 64-byte stores, as glibc's (a loop that began
//!   at the first 64-byte boundary re-wrote the head: 16 stores for 728
//!   bytes where 12 do, 0.74x libc);
//! - from `rule::REP_STOSB_MIN` (2049) without streaming: one `rep stosb` (the string store
//!   writes whole lines without reading them first, which temporal vector
//!   stores cannot: `mem.clear_page`'s measurement in docs/mem.md);
//! - streaming (`n >= nt_min`, the non-temporal rule's size) above 512 bytes: a tail
//!   call to the AVX2 routine's streaming loop.
//!
//! In assembly (`global_asm!`) for the reason the copy and strlen are:
//! aligned entry and branch targets. Registers: rax, rcx, r8, r9, zmm16
//! (caller-saved); zmm16 leaves no dirty upper state, so no `vzeroupper`.
//! Contract (System V: rdi = d, sil = c, rdx = n, rcx = nt_min: stream when n >= nt_min): `d` valid for `n`
//! writes; AVX-512F/BW/VL and AVX2 present.

use core::arch::global_asm;

global_asm!(
    ".pushsection .text.kdelta_set_avx512,\"ax\",@progbits",
    ".p2align 6",
    ".globl kdelta_set_avx512",
    ".hidden kdelta_set_avx512",
    ".type kdelta_set_avx512,@function",
    "kdelta_set_avx512:",
    "vpbroadcastb zmm16, esi",
    "cmp rdx, 64",
    "jb .Lkdf_below64",
    "cmp rdx, 128",
    "ja .Lkdf_above128",
    "vmovdqu64 zmmword ptr [rdi], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
    "ret",
    ".p2align 4",
    ".Lkdf_below64:",
    "cmp edx, 32",
    "jae .Lkdf_32_63",
    "cmp edx, 16",
    "jae .Lkdf_16_31",
    "vmovq rax, xmm16",
    "cmp edx, 8",
    "jae .Lkdf_8_15",
    "cmp edx, 4",
    "jae .Lkdf_4_7",
    "cmp edx, 1",
    "ja .Lkdf_2_3",
    "jb .Lkdf_ret",
    "mov byte ptr [rdi], al",
    ".Lkdf_ret:",
    "ret",
    ".p2align 4",
    ".Lkdf_32_63:",
    "vmovdqu64 ymmword ptr [rdi], ymm16",
    "vmovdqu64 ymmword ptr [rdi + rdx - 32], ymm16",
    "ret",
    ".p2align 4",
    ".Lkdf_16_31:",
    "vmovdqu64 xmmword ptr [rdi], xmm16",
    "vmovdqu64 xmmword ptr [rdi + rdx - 16], xmm16",
    "ret",
    ".p2align 4",
    ".Lkdf_8_15:",
    "mov qword ptr [rdi], rax",
    "mov qword ptr [rdi + rdx - 8], rax",
    "ret",
    ".p2align 4",
    ".Lkdf_4_7:",
    "mov dword ptr [rdi], eax",
    "mov dword ptr [rdi + rdx - 4], eax",
    "ret",
    ".p2align 4",
    ".Lkdf_2_3:",
    "mov word ptr [rdi], ax",
    "mov word ptr [rdi + rdx - 2], ax",
    "ret",
    ".p2align 4",
    ".Lkdf_above128:",
    "cmp rdx, 512",
    "ja .Lkdf_above512",
    // Stores in ascending address order, as glibc's (the tail's first at
    // 360 bytes: 0.90x libc when it came first).
    "vmovdqu64 zmmword ptr [rdi], zmm16",
    "vmovdqu64 zmmword ptr [rdi + 64], zmm16",
    "cmp rdx, 256",
    "ja .Lkdf_257_512",
    "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
    "ret",
    ".p2align 4",
    ".Lkdf_257_512:",
    "vmovdqu64 zmmword ptr [rdi + 128], zmm16",
    "vmovdqu64 zmmword ptr [rdi + 192], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
    "ret",
    ".p2align 4",
    // Decided before any store: a string store or a streaming loop writes
    // everything itself.
    ".Lkdf_above512:",
    "cmp rdx, rcx",
    "jae .Lkdf_stream",
    "cmp rdx, {rep_min}",
    "jae .Lkdf_rep",
    "vmovdqu64 zmmword ptr [rdi], zmm16",
    "vmovdqu64 zmmword ptr [rdi + 64], zmm16",
    "vmovdqu64 zmmword ptr [rdi + 128], zmm16",
    "vmovdqu64 zmmword ptr [rdi + 192], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16",
    "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
    // 513..REP_STOSB_MIN - 1: [d, d + 256) and [d + n - 256, d + n) are
    // written above. Aligned 256-byte steps from r8 = (d & -64) + 256 (in
    // (d + 192, d + 256], so the steps meet the head) while r8 < r9 =
    // d + n - 256: each step [r8, r8 + 256) ends before d + n, the first is
    // taken (n > 512 puts r8 <= d + 256 < r9), and the last ends at or past
    // r9, where the tail begins.
    "mov r8, rdi",
    "and r8, -64",
    "add r8, 256",
    "lea r9, [rdi + rdx - 256]",
    ".p2align 4",
    ".Lkdf_loop:",
    "vmovdqa64 zmmword ptr [r8], zmm16",
    "vmovdqa64 zmmword ptr [r8 + 64], zmm16",
    "vmovdqa64 zmmword ptr [r8 + 128], zmm16",
    "vmovdqa64 zmmword ptr [r8 + 192], zmm16",
    "add r8, 256",
    "cmp r8, r9",
    "jb .Lkdf_loop",
    "ret",
    ".p2align 4",
    ".Lkdf_rep:",
    // `rep stosb` stores al to the rcx bytes from rdi upward (the ABI keeps
    // the direction flag clear): exactly [d, d + n).
    "mov eax, esi",
    "mov rcx, rdx",
    "rep stosb",
    "ret",
    ".p2align 4",
    ".Lkdf_stream:",
    "jmp {avx2}",
    ".size kdelta_set_avx512, . - kdelta_set_avx512",
    ".popsection",
    rep_min = const super::rule::REP_STOSB_MIN,
    avx2 = sym super::x86::set_avx2,
);

extern "C" {
    /// The fill above (C calling convention, which is System V here).
    ///
    /// # Safety
    /// `d` valid for `n` writes; AVX-512F/BW/VL and AVX2 present.
    pub(super) fn kdelta_set_avx512(d: *mut u8, c: u8, n: usize, nt_min: usize);
}
