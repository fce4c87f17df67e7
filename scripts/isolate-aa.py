#!/usr/bin/env python3
"""What `--isolate` buys: an A/A comparison quiet, under a toggling CPU hog,
and under the hog with `--isolate`, taken in rounds so the three conditions
see the same hours of a shared machine.

Each round runs, in a rotating order,
  quiet:    kdelta run BENCH --config cpus=C,cpus=C+env=AA=1 --runs R
  hog:      the same while ../shared/tools/hog.sh toggle C SECS runs
  isolated: the same under the hog, with --isolate
and prints per condition the A/A change and how far each side's median moved
from the same round's quiet medians (their mean). The summary gives, per
condition, the largest move of a median against quiet and of the A/A change,
over all rounds.

usage: scripts/isolate-aa.py [-n ROUNDS] [-c CPU] [-r RUNS] [-s SECS] [-k KDELTA] [BENCH ...]
(root: --isolate moves other tasks; each run uses a private database.)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(kd, db, benches, cpu, runs, isolate):
    cfg = f"cpus={cpu},cpus={cpu}+env=AA=1"
    args = [kd, "--db", db, "run", *benches, "--config", cfg, "--runs", str(runs), "--format", "json"]
    if isolate:
        args.append("--isolate")
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"isolate-aa: {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()[-400:]}")
    v = json.loads(out.stdout)
    medians = {}
    for r in v["results"]:
        if r.get("status") == "ok" and "counter" not in r.get("extras", {}):
            key = (r["benchmark"], json.dumps(r.get("params", {}), sort_keys=True))
            medians.setdefault(key, {})[r["config"]] = r["median"]
    return medians


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=3, help="rounds (default 3)")
    p.add_argument("-c", type=int, default=1, help="the measured CPU, where the hog runs (default 1)")
    p.add_argument("-r", type=int, default=10, help="kdelta --runs (default 10)")
    p.add_argument("-s", type=int, default=2, help="hog toggle period, seconds (default 2)")
    p.add_argument("-k", default=os.path.join(HERE, "..", "target", "release", "kdelta"), help="kdelta binary")
    p.add_argument("bench", nargs="*", default=["lat.syscall", "aim9.add_int"])
    a = p.parse_args()
    hog_sh = os.path.join(HERE, "..", "..", "shared", "tools", "hog.sh")
    a_cfg, b_cfg = f"cpus={a.c}", f"cpus={a.c}+env=AA=1"
    conds = ["quiet", "hog", "isolated"]
    moves = {c: [] for c in conds}
    aa = {c: [] for c in conds}
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(a.n):
            order = conds[rnd % 3:] + conds[:rnd % 3]
            got = {}
            for c in order:
                hog = None
                if c != "quiet":
                    hog = subprocess.run([hog_sh, "toggle", str(a.c), str(a.s)], capture_output=True, text=True).stdout.strip()
                try:
                    got[c] = run(a.k, os.path.join(tmp, f"{rnd}-{c}.db"), a.bench, a.c, a.r, c == "isolated")
                finally:
                    if hog:
                        subprocess.run(["kill", hog])
            print(f"round {rnd + 1} (order {', '.join(order)}), load {os.getloadavg()[0]:.2f}")
            for key, q in got["quiet"].items():
                base = statistics.mean([q[a_cfg], q[b_cfg]])
                for c in conds:
                    m = got[c].get(key, {})
                    if a_cfg not in m or b_cfg not in m:
                        continue
                    change = (m[a_cfg] / m[b_cfg] - 1) * 100
                    mv = [(m[x] / base - 1) * 100 for x in (a_cfg, b_cfg)]
                    moves[c].extend(abs(x) for x in mv)
                    aa[c].append(abs(change))
                    print(f"  {key[0]:14} {c:9} A {m[a_cfg]:.4g}  A' {m[b_cfg]:.4g}  A/A {change:+6.2f} %"
                          f"  against quiet {mv[0]:+6.2f} % {mv[1]:+6.2f} %")
    print("summary (largest over all rounds and benchmarks; quiet against its own mean):")
    for c in conds:
        if moves[c]:
            print(f"  {c:9} median moved against quiet: up to {max(moves[c]):.2f} %   A/A change: up to {max(aa[c]):.2f} %")


if __name__ == "__main__":
    main()
