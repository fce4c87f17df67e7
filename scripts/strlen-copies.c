/* strlen of several libraries against the C library's, in one process, on
 * one set of strings, for docs/mem.md (issue 21, "strlen at 8 KiB").
 *
 *   cc -O2 -o /tmp/strlen-copies scripts/strlen-copies.c -ldl
 *   [OFF=64] [WARM=1] taskset -c 1 /tmp/strlen-copies SIZE STRIDE LIB...
 *
 * SIZE bytes a string (NUL included), one string every STRIDE bytes from a
 * page boundary plus OFF, over 64 MiB walked with a co-prime step (as
 * kdelta's cold walk), or one string (WARM=1). Each LIB is a shared object
 * whose `strlen` is taken, `libc` (the C library's own), or `ns:PATH`: PATH
 * loaded with dlmopen into a namespace of its own, so a byte-identical copy
 * of the C library (`cp /lib/x86_64-linux-gnu/libc.so.6 /tmp/c.so.6`, then
 * `ns:/tmp/c.so.6`) runs the C library's own strlen from other pages.
 * 61 rounds; each round times a block of calls of every routine by the
 * thread's CPU clock, the order rotated each round. Prints, for each LIB,
 * the median over rounds of its GB/s over the C library's in that round. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef size_t (*len_fn)(const char *);
enum { ROUNDS = 61, MAXF = 9 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static size_t gcd(size_t a, size_t b) {
    while (b) { size_t t = a % b; a = b; b = t; }
    return a;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static len_fn load(const char *name) {
    if (!strcmp(name, "libc")) return strlen;
    void *h = !strncmp(name, "ns:", 3) ? dlmopen(LM_ID_NEWLM, name + 3, RTLD_NOW)
                                       : dlopen(name, RTLD_NOW | RTLD_LOCAL);
    len_fn f = h ? (len_fn)dlsym(h, "strlen") : NULL;
    if (!f) { fprintf(stderr, "%s: %s\n", name, h ? "no strlen" : dlerror()); exit(2); }
    return f;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc - 3 > MAXF - 1) {
        fprintf(stderr, "usage: [OFF=n] [WARM=1] %s SIZE STRIDE LIB... (at most %d)\n", argv[0], MAXF - 1);
        return 2;
    }
    size_t size = strtoul(argv[1], 0, 0), st = strtoul(argv[2], 0, 0);
    size_t off = getenv("OFF") ? strtoul(getenv("OFF"), 0, 0) : 0;
    if (size < 1 || st < size + off) { fprintf(stderr, "need 1 <= SIZE and SIZE + OFF <= STRIDE\n"); return 2; }
    int nf = argc - 3;
    len_fn f[MAXF];
    f[0] = strlen;
    for (int i = 0; i < nf; i++) f[i + 1] = load(argv[3 + i]);

    size_t slots = getenv("WARM") ? 1 : (64u << 20) / st;
    if (!slots) slots = 1;
    unsigned char *b = aligned_alloc(4096, (slots * st + 4095) / 4096 * 4096 + 4096);
    memset(b, 1, slots * st);
    for (size_t i = 0; i < slots; i++) {
        for (size_t j = 0; j + 1 < size; j++) b[i * st + off + j] = 'a' + j % 26;
        b[i * st + off + size - 1] = 0;
    }
    size_t step = slots > 1 ? (size_t)(slots * 0.618) : 0;
    while (slots > 1 && gcd(step, slots) != 1) step++;

    static double ratio[MAXF][ROUNDS];
    size_t cur = 0, calls = (size_t)(2e7 / size) + 1;
    for (int r = 0; r < ROUNDS; r++) {
        double gbs[MAXF];
        for (int k = 0; k <= nf; k++) {
            int w = (k + r) % (nf + 1);
            size_t acc = 0;
            double t0 = now();
            for (size_t c = 0; c < calls; c++) {
                acc += f[w]((const char *)b + cur * st + off);
                cur += step;
                if (cur >= slots) cur -= slots;
            }
            double t = now() - t0;
            if (acc != (size - 1) * calls) { fprintf(stderr, "%s: wrong length\n", w ? argv[2 + w] : "libc"); return 1; }
            gbs[w] = calls * (double)size / t / 1e9;
        }
        for (int i = 1; i <= nf; i++) ratio[i][r] = gbs[i] / gbs[0];
    }
    printf("%zu B every %zu B + %zu, %s:", size, st, off, slots > 1 ? "cold" : "warm");
    for (int i = 1; i <= nf; i++) {
        qsort(ratio[i], ROUNDS, sizeof(double), cmp);
        printf(" %.3f", ratio[i][ROUNDS / 2]);
    }
    printf("\n");
    return 0;
}
