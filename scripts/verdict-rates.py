#!/usr/bin/env python3
"""How often `kdelta check ... --within` finds a change, and how often it
calls an identical copy regressed: the detection and false-alarm rates of
issue 51, measured by trying.

    scripts/verdict-rates.py [-n TRIES] [--ratio R] [--hog none|toggle|toggle-self]
                             [--interleave MODE[,MODE...]] [--iters N]
                             [--kdelta PATH] [-- EXTRA CHECK ARGS]

Each try runs `kdelta check cmd --cmd base=spin N --cmd new=spin N*R --within`
(scripts/spin.c, built into a temporary directory) into a throwaway store and
records its exit status and wall time. `--hog toggle` runs
../shared/tools/hog.sh toggle 0 2 (a loop on CPU 0, 2 s on, 2 s off) for the
whole series; `toggle-self` a loop switching 0.7 s on / 0.7 s off on the CPU
the commands are measured on (`--config cpus=0`; a duet needs two CPUs, so
it runs on both, the loop on one of them). Prints one line per try and
a tally: exit 0 / 1 / 125 / other, the wall times' median and maximum, and
from each try's stored comparison (`kdelta export --format json`) the paired
estimate's 99.5 % interval width and one pair's spread (medians over tries):
what tells the interleave modes apart on a host. Several modes
(`--interleave samples,lockstep,duet`) take turns try by try, so whatever
the machine does meets each alike, and each gets its own tally.
"""
import argparse
import json
import shutil
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
    ap.add_argument("--interleave", default="default",
                    help="default (no --interleave: what kdelta doctor chose), samples, lockstep, duet, or a comma list")
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
    modes = a.interleave.split(",")
    for m in modes:
        if m not in ("default", "samples", "lockstep", "duet"):
            sys.exit(f"--interleave {m!r}: one of default (kdelta's own choice), samples, lockstep, duet")
    got = {m: ([], [], [], []) for m in modes}
    try:
        for i in range(a.n * len(modes)):
            mode = modes[i % len(modes)]
            codes, walls, widths, spreads = got[mode]
            db = os.path.join(tmp, f"try{i}.db")
            cmd = [a.kdelta, "check", "cmd", "--cmd", f"base={spin} {a.iters}", "--cmd", f"new={spin} {new_iters}",
                   "--within", *([] if mode == "default" else ["--interleave", mode]),
               *([] if mode == "duet" else config), *a.extra]
            t0 = time.monotonic()
            p = subprocess.run(cmd, env={**os.environ, "KDELTA_DB": db}, capture_output=True, text=True)
            wall = time.monotonic() - t0
            codes.append(p.returncode)
            walls.append(wall)
            last = [l for l in p.stdout.splitlines() if l.strip()]
            pc = paired(a.kdelta, db)
            if pc:
                widths.append(100 * (pc["high"] / pc["low"] - 1))
                spreads.append(pc["pair_cv_pct"])
            shown = (f" [pairs {pc['pairs']}, interval {pc['low']:.4f}-{pc['high']:.4f}, pair spread {pc['pair_cv_pct']:.1f}%]"
                     if pc else "")
            print(f"try {i + 1} {mode}: exit {p.returncode} in {wall:.1f} s{shown}: "
                  f"{last[0] if last else p.stderr.strip()[-200:]}", flush=True)
    finally:
        if hog is not None:
            os.kill(hog, signal.SIGTERM)
        shutil.rmtree(tmp, ignore_errors=True)
    for mode, (codes, walls, widths, spreads) in got.items():
        tally(a, mode, codes, walls, widths, spreads)


def tally(a, mode, codes, walls, widths, spreads):
    counts = {c: codes.count(c) for c in sorted(set(codes))}
    judged = (f"; interval width median {statistics.median(widths):.2f}%, pair spread median "
              f"{statistics.median(spreads):.1f}% ({len(widths)} tries paired)" if widths else "; no try paired")
    print(f"ratio {a.ratio} hog {a.hog} interleave {mode}: exits {counts}; wall median "
          f"{statistics.median(walls):.1f} s, max {max(walls):.1f} s{judged}")


def paired(kdelta, db):
    """The paired estimate of the first comparison of the store's last run, if any."""
    p = subprocess.run([kdelta, "export", "1", "--format", "json"], env={**os.environ, "KDELTA_DB": db},
                       capture_output=True, text=True)
    try:
        v = json.loads(p.stdout)
    except ValueError:
        return None
    for c in v.get("comparisons", []) if isinstance(v, dict) else []:
        got = find_paired(c)
        if got:
            return got
    return None


def find_paired(x):
    if isinstance(x, dict):
        if isinstance(x.get("paired"), dict):
            return x["paired"]
        for y in x.values():
            got = find_paired(y)
            if got:
                return got
    elif isinstance(x, list):
        for y in x:
            got = find_paired(y)
            if got:
                return got
    return None


if __name__ == "__main__":
    sys.exit(main())
