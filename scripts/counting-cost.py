#!/usr/bin/env python3
"""What `--counters` costs a benchmark's figure, measured interleaved.

`kdelta run BENCH --config up,up+counters=on` measures counting on and off in
the same workers, sample by sample (for a benchmark that takes turns:
`lat.syscall`, `lat.read`, `lat.write`, `mem.*`, `cmd`). On a VM whole workers
differ from each other by several per cent (lat.syscall here is bimodal, about
0.20 or 0.26 us a call, whichever worker), so this script reads the cost
within each worker: the median of its counted samples over the median of its
uncounted ones (clean samples only). It runs both orders of the two
configurations, N times each, and prints the median cost over all workers
with a 95 % sign-test interval.

usage: scripts/counting-cost.py [-n N] [-r RUNS] [-k KDELTA] [BENCH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from math import comb

HERE = os.path.dirname(os.path.abspath(__file__))
ON, OFF = "up+counters=on", "up"


def per_worker(v):
    """{job: [clean samples]} of each configuration, then the cost per job."""
    rs = {r["config"]: r for r in v["results"] if r.get("status") == "ok" and "counter" not in r.get("extras", {})}

    def by_job(r):
        d = {}
        for x, m in zip(r["samples"], r["samples_meta"]):
            if not m.get("disturbed"):
                d.setdefault(m["job"], []).append(x)
        return d

    on, off = by_job(rs[ON]), by_job(rs[OFF])
    out = []
    for j in sorted(set(on) & set(off)):
        if len(on[j]) >= 3 and len(off[j]) >= 3:
            out.append((statistics.median(on[j]) / statistics.median(off[j]) - 1) * 100)
    return out


def sign_interval(xs):
    """The 95 % sign-test interval of the median of sorted `xs`."""
    n = len(xs)
    tail = 0.0
    k = -1
    for i in range(n):
        tail += comb(n, i) / 2**n
        if tail > 0.025:
            break
        k = i
    return (xs[k], xs[n - 1 - k]) if k >= 0 else (None, None)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=6, help="runs of each order (default 6)")
    p.add_argument("-r", type=int, default=100, help="kdelta --runs (default 100)")
    p.add_argument("-k", default=os.path.join(HERE, "..", "target", "release", "kdelta"), help="kdelta binary")
    p.add_argument("bench", nargs="?", default="lat.syscall")
    a = p.parse_args()
    costs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.n):
            for order in (f"{OFF},{ON}", f"{ON},{OFF}"):
                db = os.path.join(tmp, f"{i}.db")
                args = [a.k, "--db", db, "run", a.bench, "--config", order, "--runs", str(a.r), "--format", "json"]
                out = subprocess.run(args, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"counting-cost: {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()[-400:]}")
                costs.setdefault(order, []).extend(per_worker(json.loads(out.stdout)))
                os.remove(db)
    every = sorted(x for xs in costs.values() for x in xs)
    if not every:
        sys.exit("counting-cost: no worker had clean samples of both sides")
    for order, xs in costs.items():
        print(f"--config {order}: {len(xs)} workers, median cost {statistics.median(xs):+.2f} %")
    lo, hi = sign_interval(every)
    ci = f", 95 % interval [{lo:+.2f}, {hi:+.2f}] %" if lo is not None else ""
    print(f"{a.bench}: counting costs {statistics.median(every):+.2f} % (median of {len(every)} workers{ci}; "
          f"load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
