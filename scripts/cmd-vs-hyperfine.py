#!/usr/bin/env python3
"""kdelta's `cmd` family against hyperfine on one command, alternated.

    scripts/cmd-vs-hyperfine.py [--pairs K] [--control] [--kdelta PATH] COMMAND

K pairs (default 60), the order switched every pair: `hyperfine --warmup 3
--runs 10 COMMAND` and `kdelta run cmd --cmd =COMMAND --warmup 3` (10 samples,
the clean ones kept). Every run's wall time is pooled per tool and the two
medians compared. Both tools take the same number of runs per invocation:
left to its 3-second default, hyperfine takes more runs while the machine is
fast, which weights its pooled median towards fast moments. With --control,
hyperfine is run against itself: how far two invocations of one tool drift
apart on this machine, the resolution of the comparison.
Needs hyperfine (apt install hyperfine) and a release build of kdelta."""
import argparse, json, os, statistics, subprocess, sys, tempfile

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--pairs", type=int, default=60)
ap.add_argument("--control", action="store_true")
ap.add_argument("--kdelta", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../target/release/kdelta"))
ap.add_argument("command")
a = ap.parse_args()
if a.pairs < 1:
    sys.exit("cmd-vs-hyperfine: --pairs must be at least 1")
tmp = tempfile.mkdtemp(prefix="kdelta-vs-hf.")
hf_json, db = os.path.join(tmp, "hf.json"), os.path.join(tmp, "runs.db")

def hyperfine():
    subprocess.run(["hyperfine", "--warmup", "3", "--runs", "10", "--export-json", hf_json, "--", a.command],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    with open(hf_json) as f:
        return [t * 1e3 for t in json.load(f)["results"][0]["times"]]

def kdelta():
    out = subprocess.run([a.kdelta, "--db", db, "run", "cmd", "--cmd", "=" + a.command, "--warmup", "3", "--format", "json"],
                         capture_output=True, check=True).stdout
    r = json.loads(out)["results"][0]
    return [v for v, m in zip(r["samples"], r["samples_meta"]) if not m["disturbed"]]

try:
    tools = [("hyperfine", hyperfine), ("hyperfine" if a.control else "kdelta", hyperfine if a.control else kdelta)]
    runs = [[], []]
    for k in range(a.pairs):
        for side in ([0, 1] if k % 2 == 0 else [1, 0]):
            runs[side] += tools[side][1]()
    m = [statistics.median(r) for r in runs]
    print(f"{a.command!r}, {a.pairs} alternated pairs: {tools[0][0]} median {m[0]:.3f} ms (n={len(runs[0])}), "
          f"{tools[1][0]} median {m[1]:.3f} ms (n={len(runs[1])}), ratio {m[1] / m[0]:.4f}")
finally:
    subprocess.run(["rm", "-rf", tmp])
