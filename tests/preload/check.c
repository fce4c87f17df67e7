/* The preload library's exported routines against byte-loop references, at
 * random sizes, offsets and overlaps, with PROT_NONE guard pages on both
 * sides of every buffer. Built and run by tests/it/mem_preload.rs:
 *   check LIB SEED CASES
 * The library is opened with dlopen and its symbols called through
 * pointers, so the C library's routines cannot stand in for them. Exit 0
 * when every case matches; otherwise the first mismatch on stderr, exit 1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

typedef void *(*copy_fn)(void *, const void *, size_t);
typedef void *(*set_fn)(void *, int, size_t);
typedef size_t (*len_fn)(const char *);

static uint64_t rng;
static uint64_t next(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

/* Sizes: mostly short, some medium, a few past the non-temporal rule. */
static size_t pick_size(size_t max) {
    uint64_t r = next() % 100;
    size_t n;
    if (r < 50) n = next() % 300;
    else if (r < 85) n = next() % 9000;
    else if (r < 99 || next() % 4) n = next() % 300000;
    else n = max / 2 + next() % (max / 2);
    return n;
}

/* A region of `len` bytes with a PROT_NONE page on each side. */
static unsigned char *region(size_t len, size_t *mapped) {
    long pg = sysconf(_SC_PAGESIZE);
    size_t body = (len + pg - 1) / pg * pg;
    size_t total = body + 2 * pg;
    unsigned char *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("mmap"); exit(2); }
    if (mprotect(m, pg, PROT_NONE) || mprotect(m + pg + body, pg, PROT_NONE)) { perror("mprotect"); exit(2); }
    *mapped = total;
    return m + pg;
}

static void fill(unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)next();
}

static int fail(const char *what, size_t n, size_t a, size_t b, size_t at) {
    fprintf(stderr, "MISMATCH %s n=%zu a=%zu b=%zu at byte %zu\n", what, n, a, b, at);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: check LIB SEED CASES\n"); return 2; }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
    copy_fn k_memcpy = (copy_fn)dlsym(h, "memcpy");
    copy_fn k_memmove = (copy_fn)dlsym(h, "memmove");
    set_fn k_memset = (set_fn)dlsym(h, "memset");
    len_fn k_strlen = (len_fn)dlsym(h, "strlen");
    if (!k_memcpy || !k_memmove || !k_memset || !k_strlen) { fprintf(stderr, "missing symbol\n"); return 2; }
    /* The library's own, not the C library's (dlsym on a handle searches it first). */
    Dl_info info;
    if (!dladdr((void *)k_memcpy, &info) || !info.dli_fname) { fprintf(stderr, "dladdr failed\n"); return 2; }
    rng = strtoull(argv[2], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
    long cases = strtol(argv[3], NULL, 10);
    const size_t MAX = 72u << 20; /* past the rule's thresholds here (copies from 8 MiB, fills from 64 MiB) */
    size_t room = MAX + 8192, mapped;
    unsigned char *area = region(room, &mapped);
    unsigned char *want = malloc(room);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), body = mapped - 2 * pg;
    for (long c = 0; c < cases; c++) {
        int op = (int)(next() % 5);
        size_t n = pick_size(MAX);
        /* Buffers flush against a guard page half the time. */
        if (op == 0 || op == 1) {
            /* memcpy (disjoint) or memmove/memcpy with overlap. */
            size_t span = op == 0 ? 2 * n + 64 : n + (next() % (n + 1)) + 1;
            if (span > body) continue;
            size_t base = next() % 2 ? body - span : next() % (body - span + 1);
            size_t a, b; /* source and destination offsets from base */
            if (op == 0) {
                size_t gap = next() % 65; /* span - 2n - gap >= 0 */
                if (next() % 2) { a = 0; b = n + gap; } else { b = 0; a = n + gap; }
            } else {
                size_t d = span - n; /* 1..=n: the buffers overlap unless n == 0 */
                if (next() % 2) { a = 0; b = d; } else { a = d; b = 0; }
            }
            unsigned char *r = area + base;
            fill(r, span);
            for (size_t i = 0; i < span; i++) want[i] = r[i];
            /* reference memmove on `want` */
            if (b < a) for (size_t i = 0; i < n; i++) want[b + i] = want[a + i];
            else for (size_t i = n; i > 0; i--) want[b + i - 1] = want[a + i - 1];
            copy_fn f = next() % 2 ? k_memcpy : k_memmove;
            void *ret = f(r + b, r + a, n);
            if (ret != r + b) return fail("return value", n, a, b, 0);
            for (size_t i = 0; i < span; i++) if (r[i] != want[i]) return fail(op == 0 ? "copy" : "overlapping move", n, a, b, i);
        } else if (op == 2) {
            size_t span = n + 64;
            if (span > body) continue;
            size_t base = next() % 2 ? body - span : next() % (body - span + 1);
            size_t off = next() % 2 ? span - n : next() % 64;
            unsigned char *r = area + base;
            fill(r, span);
            int v = (int)next();
            for (size_t i = 0; i < span; i++) want[i] = (i >= off && i < off + n) ? (unsigned char)v : r[i];
            if (k_memset(r + off, v, n) != r + off) return fail("memset return", n, off, 0, 0);
            for (size_t i = 0; i < span; i++) if (r[i] != want[i]) return fail("memset", n, off, 0, i);
        } else {
            /* strlen: the string ends flush against the trailing guard, or starts at the leading one. */
            size_t len = n % 70000;
            if (len + 1 > body) continue;
            unsigned char *s = next() % 2 ? area + body - (len + 1) : area + (next() % 64 < 32 ? 0 : next() % 64);
            for (size_t i = 0; i < len; i++) s[i] = 1 + (unsigned char)(next() % 255);
            s[len] = 0;
            size_t got = k_strlen((const char *)s);
            if (got != len) return fail("strlen", len, (size_t)(s - area), got, 0);
        }
    }
    printf("ok %ld cases, library %s\n", cases, info.dli_fname);
    return 0;
}
