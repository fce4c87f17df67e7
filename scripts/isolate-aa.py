#!/usr/bin/env python3
"""What `--isolate` buys: an A/A comparison quiet, under a toggling CPU hog,
and under the hog with `--isolate`, taken in rounds so the three conditions
see the same hours of a shared machine.

Each round runs, in a rotating order,
  quiet:    kdelta run BENCH --config cpus=C,cpus=C+env=AA=1 --runs R
  hog:      the same while ../shared/tools/hog.sh toggle C SECS runs
  isolated: the same under the hog, with --isolate
With --persistent-hog the hog is kdelta's own toggler instead of hog.sh: under
--isolate hog.sh's `taskset -c C` is refused (C belongs to kdelta's exclusive
cpuset, as with `cset shield`), so hog.sh exits at its next on-phase and the
machine is quiet for the rest of the run; the persistent toggler then runs its
loop wherever it is allowed (the other CPUs), so the noise stays on the
machine and what is compared is noise kept off the measured CPU against noise
on it.

It prints per condition the A/A change and how far each side's median moved
from the same round's quiet medians (their mean). The summary gives, per
condition, the largest move of a median against quiet and of the A/A change,
over all rounds.

usage: scripts/isolate-aa.py [-n ROUNDS] [-c CPU] [-r RUNS] [-s SECS] [-k KDELTA] [-p PARAM]... [BENCH ...]
(root: --isolate moves other tasks; each run uses a private database.)
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(kd, db, benches, params, cpu, runs, isolate):
    cfg = f"cpus={cpu},cpus={cpu}+env=AA=1"
    args = [kd, "--db", db, "run", *benches, "--config", cfg, "--runs", str(runs), "--format", "json"]
    for p in params:
        args += ["--param", p]
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


def persistent_toggle(cpu, secs):
    """Fork a toggler: every SECS a CPU-bound loop on CPU (or, where that is
    refused, on any CPU it may use), then SECS off. Returns its PID."""
    pid = os.fork()
    if pid:
        return str(pid)
    os.setsid()
    loop = None

    def stop(*_):
        if loop and loop.poll() is None:
            loop.kill()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    while True:
        loop = subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"],
                                stderr=subprocess.DEVNULL)
        time.sleep(0.1)
        if loop.poll() is not None:
            loop = subprocess.Popen(["sh", "-c", "while :; do :; done"])
            time.sleep(0.1)
        time.sleep(max(secs - 0.1, 0))
        loop.kill()
        loop.wait()
        loop = None
        time.sleep(secs)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=3, help="rounds (default 3)")
    p.add_argument("-c", type=int, default=1, help="the measured CPU, where the hog runs (default 1)")
    p.add_argument("-r", type=int, default=10, help="kdelta --runs (default 10)")
    p.add_argument("-s", type=int, default=2, help="hog toggle period, seconds (default 2)")
    p.add_argument("-k", default=os.path.join(HERE, "..", "target", "release", "kdelta"), help="kdelta binary")
    p.add_argument("--persistent-hog", action="store_true",
                   help="a toggler that keeps running, off the measured CPU, when --isolate refuses it that CPU")
    p.add_argument("-p", action="append", default=[], metavar="PARAM",
                   help="passed to kdelta as --param PARAM (repeatable), e.g. period=3s to make every aim9 "
                        "sample longer than the hog's period, so no retake can dodge it")
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
                    if a.persistent_hog:
                        hog = persistent_toggle(a.c, a.s)
                    else:
                        hog = subprocess.run([hog_sh, "toggle", str(a.c), str(a.s)], capture_output=True,
                                             text=True).stdout.strip()
                try:
                    got[c] = run(a.k, os.path.join(tmp, f"{rnd}-{c}.db"), a.bench, a.p, a.c, a.r, c == "isolated")
                finally:
                    if hog:
                        subprocess.run(["kill", hog], stderr=subprocess.DEVNULL)
                        if a.persistent_hog:
                            os.waitpid(int(hog), 0)
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
