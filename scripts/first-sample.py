#!/usr/bin/env python3
"""Print the first sample kdelta took (earliest round, then earliest time) of
the first result in a `kdelta run --format json` document read from standard
input: the one sample taken before any retake or extra round, as a single
run of another tool is. Used by dbench-vs-kdelta.sh and dbench-four-way.sh.

usage: kdelta run ... --format json | scripts/first-sample.py [DECIMALS]
"""
import json
import sys

decimals = int(sys.argv[1]) if len(sys.argv) > 1 else 2
r = json.load(sys.stdin)["results"][0]
m = r.get("samples_meta") or [{}] * len(r["samples"])
i = min(range(len(r["samples"])), key=lambda i: (m[i].get("round", 0), m[i].get("t", 0)))
print(f"%.{decimals}f" % r["samples"][i])
