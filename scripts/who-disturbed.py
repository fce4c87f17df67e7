#!/usr/bin/env python3
"""Who ran beside each sample: the tasks perf saw switched in on the
measured CPUs during each sample's window, against what kdelta judged.

Runs `kdelta run BENCHMARK --config CONFIG [ARGS...]` in a throwaway store
under `perf record -e sched:sched_switch` on CPUS, then prints one line per
sample: its figure, `D` where kdelta called it disturbed, the other work
kdelta measured (`others_s`) and the time each other task ran in the
sample's window (per-CPU kernel threads folded by name: `ksoftirqd/N`).
The last lines total each task's time over disturbed and clean samples.

    scripts/who-disturbed.py 0 lat.proc.fork up --runs 20
    scripts/who-disturbed.py 0,1 lat.pipe noht

The measured tasks' own names (the worker, `forker`, ...) are listed too;
perf needs root or kernel.perf_event_paranoid <= 0. KDELTA names the binary
(default target/release/kdelta).
"""

import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time

SWITCH = re.compile(r"\s*([\d.]+): .*==> next_comm=(.*?) next_pid=(\d+)")


def main():
    if len(sys.argv) < 4:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: scripts/who-disturbed.py CPUS BENCHMARK CONFIG [ARGS...]", file=sys.stderr)
        return 2
    cpus, bench, config, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    here = os.path.dirname(os.path.abspath(__file__))
    kdelta = os.environ.get("KDELTA", os.path.join(here, "..", "target", "release", "kdelta"))
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, KDELTA_DB=os.path.join(d, "db.sqlite"))
        data = os.path.join(d, "perf.data")
        # perf's timestamps are CLOCK_MONOTONIC; the samples' starts are Unix time.
        offset = time.time() - time.clock_gettime(time.CLOCK_MONOTONIC)
        cmd = [kdelta, "run", bench, "--config", config, *extra]
        rec = ["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-e", "sched:sched_switch", "-C", cpus, "-o", data]
        subprocess.run(rec + ["--"] + cmd, env=env, stdout=subprocess.DEVNULL, check=True)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "cpu,time,trace"], capture_output=True, text=True)
        export = subprocess.run([kdelta, "export", "1"], env=env, capture_output=True, text=True, check=True)
    runs = collections.defaultdict(list)
    for line in script.stdout.splitlines():
        m = re.match(r"\s*\[(\d+)\]\s*(.*)", line)
        s = m and SWITCH.match(m.group(2))
        if s:
            runs[int(m.group(1))].append((float(s.group(1)) + offset, s.group(2)))
    spans = [(a[0], b[0], a[1]) for ev in runs.values() for a, b in zip(ev, ev[1:])]
    totals = {True: collections.Counter(), False: collections.Counter()}
    for r in json.loads(export.stdout)["results"]:
        print(f"{r['benchmark']} [{r['config']}] ({r['unit']})")
        for fig, meta in zip(r["samples"], r["samples_meta"]):
            start, end = meta["t"], meta["t"] + meta["wall_s"]
            seen = collections.Counter()
            for a, b, comm in spans:
                overlap = min(end, b) - max(start, a)
                if overlap > 0 and not comm.startswith("swapper"):
                    seen[re.sub(r"/\d+$", "/N", re.sub(r"^kworker/.*", "kworker", comm))] += overlap * 1e3
            disturbed = bool(meta.get("disturbed"))
            totals[disturbed].update(seen)
            others = meta.get("others_s")
            shown = " ".join(f"{k} {v:.3f}" for k, v in seen.most_common())
            print(f"  {fig:10.4g} {'D' if disturbed else '.'} others_s {others * 1e3 if others is not None else float('nan'):.3f} ms | {shown}")
    for disturbed, label in ((True, "disturbed"), (False, "clean")):
        print(f"{label}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in totals[disturbed].most_common(8)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
