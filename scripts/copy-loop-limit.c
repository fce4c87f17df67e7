/* How close a warm copy gets to what this CPU's L1 data cache can do: bytes
 * per core cycle of several copy loops, of the C library's memcpy and of a
 * load-only and a store-only loop over the same buffers, for docs/mem.md
 * (issue 38, "memcpy 8-16 KiB warm").
 *
 *   cc -O2 -o /tmp/copy-loop-limit scripts/copy-loop-limit.c
 *   [SRC_OFF=n] [DST_OFF=n] taskset -c 1 /tmp/copy-loop-limit SIZE...
 *
 * The source and destination are separate page-aligned buffers (plus the
 * offsets), as in `kdelta run mem.memcpy --param cache=warm`; every call
 * copies the same SIZE bytes (warm). The core clock is measured, not
 * assumed: a chain of dependent `add`s (one cycle each on x86-64 cores)
 * timed by the TSC gives core cycles per TSC tick in every round (a VM's
 * clock boosts and throttles), cross-checked by a chain of `imul`s (three
 * cycles each). 61 rounds; each round times a block of calls of every
 * routine (order rotated each round) and the clock chain. Prints, for each
 * routine, the median over rounds of its bytes per core cycle, its GB/s,
 * and its speed over the C library's in the same round.
 *
 * The copy loops (x86-64, AVX2; only for sizes of 512 bytes and up):
 *   cur    kdelta's `avx2` copy above 256 bytes (src/bench/mem/tuned/avx2.rs):
 *          first 32 and last 128 bytes loaded first, 4 x 32 B per step,
 *          stores 32-byte aligned, indexed addressing;
 *   a64    the same, stores 64-byte aligned (each step two whole lines);
 *   ptr    the same with a source and a destination pointer stepped apart;
 *   u8     8 x 32 B per step;
 *   ahead  4 x 32 B per step, each step's loads one step ahead of its stores;
 *   pf     cur with the source prefetched (`prefetcht0`) 512 bytes ahead;
 *   pfw    cur with the destination prefetched for writing (`prefetchw`) 512 bytes ahead;
 *   movsb  one `rep movsb` (glibc's path here from 2112 bytes to the L2 size);
 *   load   loads only, 4 x 32 B aligned per step (the loads' limit);
 *   store  aligned stores only, 4 x 32 B per step (the stores' limit);
 * and where the CPU has AVX-512BW (else reported unavailable, not run):
 *   z64    a copy with 64-byte vectors, 4 x 64 B per step, stores 64-byte
 *          aligned (the first 64 and last 256 bytes loaded first);
 *   zstore aligned 64-byte stores only, 4 x 64 B per step. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

/* The parts kdelta's loop (`cur`) shares with the shapes tried against it:
   the first 32 and last 128 bytes loaded first and r8 set to align the
   destination to 32 bytes (COPY_ENDS; COPY_HEAD adds the loop's bound and
   entry); one 128-byte step; the head and tail stored last. */
#define COPY_ENDS \
    "  vmovdqu ymm0, [rsi]\n" \
    "  vmovdqu ymm1, [rsi + rdx - 128]\n" \
    "  vmovdqu ymm2, [rsi + rdx - 96]\n" \
    "  vmovdqu ymm3, [rsi + rdx - 64]\n" \
    "  vmovdqu ymm4, [rsi + rdx - 32]\n" \
    "  mov r8, rdi\n" \
    "  and r8, 31\n" \
    "  neg r8\n" \
    "  add r8, 32\n"
#define COPY_HEAD \
    COPY_ENDS \
    "  lea r9, [rdx - 128]\n" \
    "  .p2align 6\n" \
    "1:\n"
#define COPY_STEP \
    "  vmovdqu ymm5, [rsi + r8]\n" \
    "  vmovdqu ymm6, [rsi + r8 + 32]\n" \
    "  vmovdqu ymm7, [rsi + r8 + 64]\n" \
    "  vmovdqu ymm8, [rsi + r8 + 96]\n" \
    "  vmovdqa [rdi + r8], ymm5\n" \
    "  vmovdqa [rdi + r8 + 32], ymm6\n" \
    "  vmovdqa [rdi + r8 + 64], ymm7\n" \
    "  vmovdqa [rdi + r8 + 96], ymm8\n" \
    "  sub r8, -128\n" \
    "  cmp r8, r9\n" \
    "  jb 1b\n"
#define COPY_TAIL \
    "  vmovdqu [rdi], ymm0\n" \
    "  vmovdqu [rdi + rdx - 128], ymm1\n" \
    "  vmovdqu [rdi + rdx - 96], ymm2\n" \
    "  vmovdqu [rdi + rdx - 64], ymm3\n" \
    "  vmovdqu [rdi + rdx - 32], ymm4\n" \
    "  vzeroupper\n" \
    "  ret\n"

__asm__(
    ".intel_syntax noprefix\n"
    ".text\n"
    /* rdi = chains of 100 dependent adds (imuls) to run. */
    ".p2align 6\n"
    "lab_clock_add:\n"
    "  xor eax, eax\n"
    "1:\n"
    "  .rept 100\n"
    "  add rax, 1\n"
    "  .endr\n"
    "  dec rdi\n"
    "  jnz 1b\n"
    "  ret\n"
    ".p2align 6\n"
    "lab_clock_imul:\n"
    "  mov eax, 3\n"
    "1:\n"
    "  .rept 100\n"
    "  imul rax, rax\n"
    "  .endr\n"
    "  dec rdi\n"
    "  jnz 1b\n"
    "  ret\n"

    /* rdi = d, rsi = s, rdx = n (>= 512). */
    ".p2align 6\n"
    "lab_cur:\n"
    COPY_HEAD
    COPY_STEP
    COPY_TAIL

    ".p2align 6\n"
    "lab_pf:\n"
    COPY_HEAD
    "  prefetcht0 [rsi + r8 + 512]\n"
    "  prefetcht0 [rsi + r8 + 576]\n"
    COPY_STEP
    COPY_TAIL

    ".p2align 6\n"
    "lab_pfw:\n"
    COPY_HEAD
    "  prefetchw [rdi + r8 + 512]\n"
    "  prefetchw [rdi + r8 + 576]\n"
    COPY_STEP
    COPY_TAIL

    ".p2align 6\n"
    "lab_a64:\n"
    "  vmovdqu ymm0, [rsi]\n"
    "  vmovdqu ymm9, [rsi + 32]\n"
    "  vmovdqu ymm1, [rsi + rdx - 128]\n"
    "  vmovdqu ymm2, [rsi + rdx - 96]\n"
    "  vmovdqu ymm3, [rsi + rdx - 64]\n"
    "  vmovdqu ymm4, [rsi + rdx - 32]\n"
    "  mov r8, rdi\n"
    "  and r8, 63\n"
    "  neg r8\n"
    "  add r8, 64\n"
    "  lea r9, [rdx - 128]\n"
    "  .p2align 6\n"
    "1:\n"
    COPY_STEP
    "  vmovdqu [rdi], ymm0\n"
    "  vmovdqu [rdi + 32], ymm9\n"
    "  vmovdqu [rdi + rdx - 128], ymm1\n"
    "  vmovdqu [rdi + rdx - 96], ymm2\n"
    "  vmovdqu [rdi + rdx - 64], ymm3\n"
    "  vmovdqu [rdi + rdx - 32], ymm4\n"
    "  vzeroupper\n"
    "  ret\n"

    /* Two pointers: r10 = d + i (aligned), r11 = s + i, r9 = d + n - 128. */
    ".p2align 6\n"
    "lab_ptr:\n"
    "  vmovdqu ymm0, [rsi]\n"
    "  vmovdqu ymm1, [rsi + rdx - 128]\n"
    "  vmovdqu ymm2, [rsi + rdx - 96]\n"
    "  vmovdqu ymm3, [rsi + rdx - 64]\n"
    "  vmovdqu ymm4, [rsi + rdx - 32]\n"
    "  lea r10, [rdi + 32]\n"
    "  and r10, -32\n"
    "  mov r11, rsi\n"
    "  sub r11, rdi\n"
    "  add r11, r10\n"
    "  lea r9, [rdi + rdx - 128]\n"
    "  .p2align 6\n"
    "1:\n"
    "  vmovdqu ymm5, [r11]\n"
    "  vmovdqu ymm6, [r11 + 32]\n"
    "  vmovdqu ymm7, [r11 + 64]\n"
    "  vmovdqu ymm8, [r11 + 96]\n"
    "  sub r11, -128\n"
    "  vmovdqa [r10], ymm5\n"
    "  vmovdqa [r10 + 32], ymm6\n"
    "  vmovdqa [r10 + 64], ymm7\n"
    "  vmovdqa [r10 + 96], ymm8\n"
    "  sub r10, -128\n"
    "  cmp r10, r9\n"
    "  jb 1b\n"
    COPY_TAIL

    /* 256 bytes a step while i < n - 256, then one 128-byte step if
     * i < n - 128, then the tail [n - 128, n). */
    ".p2align 6\n"
    "lab_u8:\n"
    COPY_ENDS
    "  lea r9, [rdx - 256]\n"
    "  .p2align 6\n"
    "1:\n"
    "  vmovdqu ymm5, [rsi + r8]\n"
    "  vmovdqu ymm6, [rsi + r8 + 32]\n"
    "  vmovdqu ymm7, [rsi + r8 + 64]\n"
    "  vmovdqu ymm8, [rsi + r8 + 96]\n"
    "  vmovdqu ymm9, [rsi + r8 + 128]\n"
    "  vmovdqu ymm10, [rsi + r8 + 160]\n"
    "  vmovdqu ymm11, [rsi + r8 + 192]\n"
    "  vmovdqu ymm12, [rsi + r8 + 224]\n"
    "  vmovdqa [rdi + r8], ymm5\n"
    "  vmovdqa [rdi + r8 + 32], ymm6\n"
    "  vmovdqa [rdi + r8 + 64], ymm7\n"
    "  vmovdqa [rdi + r8 + 96], ymm8\n"
    "  vmovdqa [rdi + r8 + 128], ymm9\n"
    "  vmovdqa [rdi + r8 + 160], ymm10\n"
    "  vmovdqa [rdi + r8 + 192], ymm11\n"
    "  vmovdqa [rdi + r8 + 224], ymm12\n"
    "  add r8, 256\n"
    "  cmp r8, r9\n"
    "  jb 1b\n"
    "  lea r9, [rdx - 128]\n"
    "  cmp r8, r9\n"
    "  jae 2f\n"
    "  vmovdqu ymm5, [rsi + r8]\n"
    "  vmovdqu ymm6, [rsi + r8 + 32]\n"
    "  vmovdqu ymm7, [rsi + r8 + 64]\n"
    "  vmovdqu ymm8, [rsi + r8 + 96]\n"
    "  vmovdqa [rdi + r8], ymm5\n"
    "  vmovdqa [rdi + r8 + 32], ymm6\n"
    "  vmovdqa [rdi + r8 + 64], ymm7\n"
    "  vmovdqa [rdi + r8 + 96], ymm8\n"
    "2:\n"
    COPY_TAIL

    /* Loads one step ahead: step k stores what step k - 1 loaded. The first
     * block is loaded before the loop; the loop loads block i + 128 while
     * i + 128 < n - 128, storing block i; the last loaded block is stored
     * after it. */
    ".p2align 6\n"
    "lab_ahead:\n"
    COPY_ENDS
    "  lea r9, [rdx - 256]\n"
    "  vmovdqu ymm5, [rsi + r8]\n"
    "  vmovdqu ymm6, [rsi + r8 + 32]\n"
    "  vmovdqu ymm7, [rsi + r8 + 64]\n"
    "  vmovdqu ymm8, [rsi + r8 + 96]\n"
    "  cmp r8, r9\n"
    "  jae 2f\n"
    "  .p2align 6\n"
    "1:\n"
    "  vmovdqu ymm9, [rsi + r8 + 128]\n"
    "  vmovdqu ymm10, [rsi + r8 + 160]\n"
    "  vmovdqu ymm11, [rsi + r8 + 192]\n"
    "  vmovdqu ymm12, [rsi + r8 + 224]\n"
    "  vmovdqa [rdi + r8], ymm5\n"
    "  vmovdqa [rdi + r8 + 32], ymm6\n"
    "  vmovdqa [rdi + r8 + 64], ymm7\n"
    "  vmovdqa [rdi + r8 + 96], ymm8\n"
    "  vmovdqa ymm5, ymm9\n"
    "  vmovdqa ymm6, ymm10\n"
    "  vmovdqa ymm7, ymm11\n"
    "  vmovdqa ymm8, ymm12\n"
    "  sub r8, -128\n"
    "  cmp r8, r9\n"
    "  jb 1b\n"
    "2:\n"
    "  vmovdqa [rdi + r8], ymm5\n"
    "  vmovdqa [rdi + r8 + 32], ymm6\n"
    "  vmovdqa [rdi + r8 + 64], ymm7\n"
    "  vmovdqa [rdi + r8 + 96], ymm8\n"
    COPY_TAIL

    /* 64-byte vectors (AVX-512F): rdi = d, rsi = s, rdx = n (>= 512). */
    ".p2align 6\n"
    "lab_z64:\n"
    "  vmovdqu64 zmm0, [rsi]\n"
    "  vmovdqu64 zmm1, [rsi + rdx - 256]\n"
    "  vmovdqu64 zmm2, [rsi + rdx - 192]\n"
    "  vmovdqu64 zmm3, [rsi + rdx - 128]\n"
    "  vmovdqu64 zmm4, [rsi + rdx - 64]\n"
    "  mov r8, rdi\n"
    "  and r8, 63\n"
    "  neg r8\n"
    "  add r8, 64\n"
    "  lea r9, [rdx - 256]\n"
    "  .p2align 6\n"
    "1:\n"
    "  vmovdqu64 zmm5, [rsi + r8]\n"
    "  vmovdqu64 zmm6, [rsi + r8 + 64]\n"
    "  vmovdqu64 zmm7, [rsi + r8 + 128]\n"
    "  vmovdqu64 zmm8, [rsi + r8 + 192]\n"
    "  vmovdqa64 [rdi + r8], zmm5\n"
    "  vmovdqa64 [rdi + r8 + 64], zmm6\n"
    "  vmovdqa64 [rdi + r8 + 128], zmm7\n"
    "  vmovdqa64 [rdi + r8 + 192], zmm8\n"
    "  add r8, 256\n"
    "  cmp r8, r9\n"
    "  jb 1b\n"
    "  vmovdqu64 [rdi], zmm0\n"
    "  vmovdqu64 [rdi + rdx - 256], zmm1\n"
    "  vmovdqu64 [rdi + rdx - 192], zmm2\n"
    "  vmovdqu64 [rdi + rdx - 128], zmm3\n"
    "  vmovdqu64 [rdi + rdx - 64], zmm4\n"
    "  vzeroupper\n"
    "  ret\n"

    /* 64-byte stores only: aligned 256-byte steps over [d rounded up to 64, d + n - 256). */
    ".p2align 6\n"
    "lab_zstore:\n"
    "  vpxord zmm5, zmm5, zmm5\n"
    "  lea r8, [rdi + 63]\n"
    "  and r8, -64\n"
    "  lea r9, [rdi + rdx - 256]\n"
    "  .p2align 6\n"
    "1:\n"
    "  vmovdqa64 [r8], zmm5\n"
    "  vmovdqa64 [r8 + 64], zmm5\n"
    "  vmovdqa64 [r8 + 128], zmm5\n"
    "  vmovdqa64 [r8 + 192], zmm5\n"
    "  add r8, 256\n"
    "  cmp r8, r9\n"
    "  jb 1b\n"
    "  vzeroupper\n"
    "  ret\n"

    ".p2align 6\n"
    "lab_movsb:\n"
    "  mov rax, rdi\n"
    "  mov rcx, rdx\n"
    "  rep movsb\n"
    "  ret\n"

    /* Loads only: the aligned 128-byte blocks of [s & -32, s + n). */
    ".p2align 6\n"
    "lab_load:\n"
    "  mov r8, rsi\n"
    "  and r8, -32\n"
    "  lea r9, [rsi + rdx - 128]\n"
    "  .p2align 6\n"
    "1:\n"
    "  vmovdqa ymm5, [r8]\n"
    "  vmovdqa ymm6, [r8 + 32]\n"
    "  vmovdqa ymm7, [r8 + 64]\n"
    "  vmovdqa ymm8, [r8 + 96]\n"
    "  sub r8, -128\n"
    "  cmp r8, r9\n"
    "  jb 1b\n"
    "  vzeroupper\n"
    "  ret\n"

    /* Stores only: aligned 128-byte steps over [d rounded up to 32, d + n - 128). */
    ".p2align 6\n"
    "lab_store:\n"
    "  vpxor xmm5, xmm5, xmm5\n"
    "  lea r8, [rdi + 31]\n"
    "  and r8, -32\n"
    "  lea r9, [rdi + rdx - 128]\n"
    "  .p2align 6\n"
    "1:\n"
    "  vmovdqa [r8], ymm5\n"
    "  vmovdqa [r8 + 32], ymm5\n"
    "  vmovdqa [r8 + 64], ymm5\n"
    "  vmovdqa [r8 + 96], ymm5\n"
    "  sub r8, -128\n"
    "  cmp r8, r9\n"
    "  jb 1b\n"
    "  vzeroupper\n"
    "  ret\n"
    ".att_syntax prefix\n"
    ".section .note.GNU-stack,\"\",@progbits\n"
    ".text\n");

void lab_clock_add(uint64_t n);
void lab_clock_imul(uint64_t n);
typedef void *(*copy_fn)(void *, const void *, size_t);
void *lab_cur(void *, const void *, size_t);
void *lab_a64(void *, const void *, size_t);
void *lab_pf(void *, const void *, size_t);
void *lab_pfw(void *, const void *, size_t);
void *lab_ptr(void *, const void *, size_t);
void *lab_u8(void *, const void *, size_t);
void *lab_ahead(void *, const void *, size_t);
void *lab_movsb(void *, const void *, size_t);
void *lab_load(void *, const void *, size_t);
void *lab_store(void *, const void *, size_t);
void *lab_z64(void *, const void *, size_t);
void *lab_zstore(void *, const void *, size_t);

enum { ROUNDS = 61, CHAINS = 2000 };

struct routine {
    const char *name;
    copy_fn f;
    int copies; /* checked to copy */
    int avx512; /* needs AVX-512F and BW */
};

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return v[n / 2];
}
static uint64_t ticks(void) {
    unsigned aux;
    return __rdtscp(&aux);
}

/* TSC ticks per second, from the TSC against CLOCK_MONOTONIC over 200 ms. */
static double tsc_hz(void) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t t0 = ticks();
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec) < 2e8);
    uint64_t t1 = ticks();
    return (t1 - t0) / ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: [SRC_OFF=n] [DST_OFF=n] %s SIZE...\n", argv[0]);
        return 2;
    }
    size_t so = getenv("SRC_OFF") ? strtoul(getenv("SRC_OFF"), 0, 0) : 0;
    size_t dof = getenv("DST_OFF") ? strtoul(getenv("DST_OFF"), 0, 0) : 0;
    struct routine r[] = {
        {"libc", memcpy, 1},       {"cur", lab_cur, 1},     {"a64", lab_a64, 1},
        {"ptr", lab_ptr, 1},       {"u8", lab_u8, 1},       {"ahead", lab_ahead, 1},
        {"pf", lab_pf, 1},        {"pfw", lab_pfw, 1},
        {"movsb", lab_movsb, 1},   {"load", lab_load, 0},   {"store", lab_store, 0},
        {"z64", lab_z64, 1, 1},    {"zstore", lab_zstore, 0, 1},
    };
    enum { NR_ALL = sizeof r / sizeof r[0] };
    /* The AVX-512 loops are the last two: left out where the CPU lacks it. */
    int z = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    const int NR = z ? NR_ALL : NR_ALL - 2;
    double hz = tsc_hz();
    printf("TSC %.1f MHz; source page offset %zu, destination %zu\n", hz / 1e6, so, dof);
    if (!z) printf("z64, zstore: unavailable (this CPU lacks AVX-512F/BW)\n");
    for (int a = 1; a < argc; a++) {
        size_t n = strtoul(argv[a], 0, 0);
        if (n < 512 || so > 4095 || dof > 4095) {
            fprintf(stderr, "SIZE %zu: need SIZE >= 512 and offsets < 4096\n", n);
            return 2;
        }
        size_t len = (n + 8192) & ~(size_t)4095;
        unsigned char *sb = aligned_alloc(4096, len), *db = aligned_alloc(4096, len);
        if (!sb || !db) return 1;
        for (size_t i = 0; i < len; i++) sb[i] = (unsigned char)(i * 131 + 7), db[i] = 0x55;
        unsigned char *s = sb + so, *d = db + dof;
        for (int i = 0; i < NR; i++) {
            if (!r[i].copies) continue;
            memset(db, 0x55, len);
            r[i].f(d, s, n);
            if (memcmp(d, s, n) || (dof && db[dof - 1] != 0x55) || d[n] != 0x55) {
                fprintf(stderr, "%s copies %zu bytes wrongly\n", r[i].name, n);
                return 1;
            }
        }
        /* About 40 us a block: calls = 40e3 ns * ~60 B/ns / n. */
        int calls = (int)(2.4e6 / n) + 1;
        double bpc[NR_ALL][ROUNDS], gbs[NR_ALL][ROUNDS], rel[NR_ALL][ROUNDS], cpt_add[ROUNDS], cpt_imul[ROUNDS];
        for (int k = 0; k < ROUNDS; k++) {
            uint64_t t0 = ticks();
            lab_clock_add(CHAINS);
            uint64_t t1 = ticks();
            lab_clock_imul(CHAINS / 3);
            uint64_t t2 = ticks();
            cpt_add[k] = 100.0 * CHAINS / (t1 - t0);
            cpt_imul[k] = 300.0 * (CHAINS / 3) / (t2 - t1);
            double t[NR_ALL];
            for (int j = 0; j < NR; j++) {
                int i = (j + k) % NR;
                r[i].f(d, s, n);
                uint64_t u0 = ticks();
                for (int c = 0; c < calls; c++) r[i].f(d, s, n);
                t[i] = ticks() - u0;
            }
            for (int i = 0; i < NR; i++) {
                bpc[i][k] = (double)n * calls / (t[i] * cpt_add[k]);
                gbs[i][k] = (double)n * calls / (t[i] / hz) / 1e9;
                rel[i][k] = t[0] / t[i];
            }
        }
        double ca = median(cpt_add, ROUNDS), ci = median(cpt_imul, ROUNDS);
        printf("size %zu: core clock %.0f MHz by add chain, %.0f MHz by imul chain (medians of %d rounds)\n",
               n, ca * hz / 1e6, ci * hz / 1e6, ROUNDS);
        printf("  %-6s %8s %8s %9s\n", "", "B/cycle", "GB/s", "x libc");
        for (int i = 0; i < NR; i++)
            printf("  %-6s %8.2f %8.1f %9.3f\n", r[i].name, median(bpc[i], ROUNDS), median(gbs[i], ROUNDS),
                   median(rel[i], ROUNDS));
        free(sb);
        free(db);
    }
    return 0;
}
