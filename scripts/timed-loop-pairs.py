#!/usr/bin/env python3
"""kdelta's AVX2 strlen or fill against the C library's, called from kdelta's
own timed loop (`kdelta_time_calls`, src/bench/mem/calls.rs), one process at
a time, to tell a routine's cost from the state a process or the host is in.

Both assembly blocks are taken from the sources (of the work tree, or of a
commit with --rev, for an A/B of two versions), assembled into a small C
driver that calls each routine through the loop on one warm buffer, 200000
calls a block, 21 alternating blocks, and keeps each side's best block. Every
process prints one line; the last lines give the median per-process ratio
(C library time / kdelta time, so above 1 means kdelta is faster) and how many
processes fell below 0.95.

  scripts/timed-loop-pairs.py strlen 5792 -n 20
  scripts/timed-loop-pairs.py set 256 -n 20 --rev HEAD~3 --cpu 0

Used for the strlen 5792 B and memset 184-256 B figures in docs/mem.md
(issue 38). Run from the repository's top directory; needs cc, python3 and
an x86-64 CPU with AVX2.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROUTINES = {
    # name: (source file, the routine's symbol and section, the C library's symbol)
    "strlen": ("src/bench/mem/tuned/avx2.rs", "kdelta_strlen_avx2", "strlen"),
    "set": ("src/bench/mem/tuned/avx2.rs", "kdelta_set_avx2", "memset"),
}

DRIVER = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
struct Loop { size_t f, a, b, b_mask, size, extra, step, limit; unsigned long count; size_t start; };
size_t kdelta_time_calls(struct Loop *);
void ROUTINE(void);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
  size_t size = strtoul(argv[1], 0, 0);
  int is_strlen = LIBC_IS_STRLEN;
  void *libc = dlsym(RTLD_DEFAULT, LIBC_NAME);
  char *buf = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(buf, 'a', 1 << 20);
  if (is_strlen) buf[size - 1] = 0;
  void *f[2] = {libc, (void *)ROUTINE};
  double best[2] = {1e9, 1e9};
  long n = 200000;
  for (int r = 0; r < 21; r++)
    for (int k = 0; k < 2; k++) {
      int j = (k + r) % 2;
      /* strlen: rdi = the string; the fill: rdi = d, rsi = the byte, rdx = n, rcx = its streaming size (never reached). */
      struct Loop l = {(size_t)f[j], (size_t)buf, is_strlen ? 0 : 0x5a, 0, size, (size_t)1 << 40, 0, 1, n, 0};
      double t = now();
      size_t sum = kdelta_time_calls(&l);
      t = (now() - t) / n * 1e9;
      if (is_strlen && sum != (size_t)n * (size - 1)) { fprintf(stderr, "wrong length\n"); return 1; }
      if (t < best[j]) best[j] = t;
    }
  printf("%zu libc %.2f ns kdelta %.2f ns ratio %.3f\n", size, best[0], best[1], best[0] / best[1]);
  return 0;
}
"""


def source(path, rev):
    if rev is None:
        return open(path).read()
    return subprocess.run(["git", "show", f"{rev}:{path}"], check=True, capture_output=True, text=True).stdout


def asm_block(text, section, consts):
    """The strings of the global_asm! block that pushes `.text.<section>`, as assembly."""
    start = text.index(f'".pushsection .text.{section}')
    end = text.index('".popsection"', start) + len('".popsection"')
    lines = re.findall(r'^\s*"(.*)",?\s*$', text[start:end], re.M)
    asm = "\n".join(lines).replace('\\"', '"').replace("\\\\", "\\")
    asm = asm.replace(f".hidden {section}", "")
    for k, v in consts.items():
        asm = asm.replace("{" + k + "}", v)
    return asm


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("routine", choices=sorted(ROUTINES))
    ap.add_argument("size", type=int)
    ap.add_argument("-n", type=int, default=20, help="processes (default 20)")
    ap.add_argument("--rev", help="take kdelta's routine from this commit (the timed loop from the work tree)")
    ap.add_argument("--cpu", help="pin every process to this CPU (taskset)")
    a = ap.parse_args()
    if a.routine == "strlen" and a.size < 1:
        sys.exit("timed-loop-pairs: a strlen size counts the NUL: 1 or more")
    if a.size < 0 or a.size > (1 << 19):
        sys.exit(f"timed-loop-pairs: size {a.size} is not allowed: 0 to 524288 bytes")
    path, section, libc_name = ROUTINES[a.routine]
    rule = open("src/bench/mem/tuned/rule.rs").read()
    rep_min = re.search(r"REP_STOSB_MIN: usize = (\d+)", rule).group(1)
    loop = asm_block(open("src/bench/mem/calls.rs").read(), "kdelta_time_calls", {})
    routine = asm_block(source(path, a.rev), section, {"rep_min": rep_min, "stream": "abort"})
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "k.S"), "w") as f:
            f.write(".intel_syntax noprefix\n" + loop + "\n" + routine + "\n")
            f.write('.section .note.GNU-stack,"",@progbits\n')
        with open(os.path.join(d, "d.c"), "w") as f:
            f.write(
                DRIVER.replace("ROUTINE", section)
                .replace("LIBC_NAME", f'"{libc_name}"')
                .replace("LIBC_IS_STRLEN", "1" if a.routine == "strlen" else "0")
            )
        exe = os.path.join(d, "pairs")
        subprocess.run(["cc", "-O2", "-o", exe, os.path.join(d, "d.c"), os.path.join(d, "k.S"), "-ldl"], check=True)
        cmd = (["taskset", "-c", a.cpu] if a.cpu else []) + [exe, str(a.size)]
        ratios = []
        for _ in range(a.n):
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
            print(out)
            ratios.append(float(out.split()[-1]))
    print(f"median ratio {statistics.median(ratios):.3f}; below 0.95 in {sum(r < 0.95 for r in ratios)} of {len(ratios)} processes")


if __name__ == "__main__":
    main()
