#!/usr/bin/env python3
"""How often `kdelta check ... --within` finds a change, and how often it
calls an identical copy regressed: the detection and false-alarm rates of
issue 51, measured by trying.

    scripts/verdict-rates.py [-n TRIES] [--ratio R] [--hog none|toggle|toggle-self]
                             [--iters N] [--kdelta PATH] [-- EXTRA CHECK ARGS]

Each try runs `kdelta check cmd --cmd base=spin N --cmd new=spin N*R --within`
(scripts/spin.c, built into a temporary directory) into a throwaway store and
records its exit status and wall time. `--hog toggle` runs
../shared/tools/hog.sh toggle 0 2 (a loop on CPU 0, 2 s on, 2 s off) for the
whole series; `toggle-self` a loop switching 0.7 s on / 0.7 s off on the CPU
the commands are measured on (`--config cpus=0`). Prints one line per try and
a tally: exit 0 / 1 / 125 / other, and the wall times' median and maximum.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=10)
    ap.add_argument("--ratio", type=float, default=1.03)
    ap.add_argument("--iters", type=int, default=8_500_000)
    ap.add_argument("--hog", choices=["none", "toggle", "toggle-self"], default="none")
    ap.add_argument("--kdelta", default=os.path.join(HERE, "..", "target", "release", "kdelta"))
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="verdict-rates.")
    spin = os.path.join(tmp, "spin")
    subprocess.run(["cc", "-O2", "-o", spin, os.path.join(HERE, "spin.c")], check=True)
    new_iters = int(round(a.iters * a.ratio))
    hog = None
    hog_sh = os.path.join(HERE, "..", "..", "shared", "tools", "hog.sh")
    if a.hog != "none":
        secs = "2" if a.hog == "toggle" else "0.7"
        hog = int(subprocess.run([hog_sh, "toggle", "0", secs], capture_output=True, text=True, check=True).stdout)
    config = ["--config", "cpus=0"] if a.hog == "toggle-self" else []
    codes, walls = [], []
    try:
        for i in range(a.n):
            db = os.path.join(tmp, f"try{i}.db")
            cmd = [a.kdelta, "check", "cmd", "--cmd", f"base={spin} {a.iters}", "--cmd", f"new={spin} {new_iters}",
                   "--within", *config, *a.extra]
            t0 = time.monotonic()
            p = subprocess.run(cmd, env={**os.environ, "KDELTA_DB": db}, capture_output=True, text=True)
            wall = time.monotonic() - t0
            codes.append(p.returncode)
            walls.append(wall)
            last = [l for l in p.stdout.splitlines() if l.strip()]
            print(f"try {i + 1}: exit {p.returncode} in {wall:.1f} s: {last[0] if last else p.stderr.strip()[-200:]}",
                  flush=True)
    finally:
        if hog is not None:
            os.kill(hog, signal.SIGTERM)
    tally = {c: codes.count(c) for c in sorted(set(codes))}
    print(f"ratio {a.ratio} hog {a.hog}: exits {tally}; wall median {statistics.median(walls):.1f} s, "
          f"max {max(walls):.1f} s")


if __name__ == "__main__":
    sys.exit(main())
