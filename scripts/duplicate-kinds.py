#!/usr/bin/env python3
"""What the pairs that the `duplicates` tool lists are made of: struct
declarations (field lists, their attributes and derives), tests, or code.

    scripts/duplicate-kinds.py [KIND]

`duplicates` shows at most 200 rows, so it is run on the whole tree and on
src/, each folder of src/ and tests/, and the rows are joined (a pair between
two folders is seen only in the whole tree's first 200). A side is a struct
declaration when 60 % or more of its lines (blank lines, comments and lone
braces passed over, as `duplicates` does) are fields, attributes or a
`struct`/`enum` line; a pair is "struct declarations" when both sides are.
Prints the tally; with KIND ("struct", "tests", "code", "test vs code"),
also the rows of that kind.
"""

import os
import re
import subprocess
import sys
from collections import Counter

FIELD = re.compile(r"^\s*(pub(\([a-z]+\))?\s+)?[a-z_0-9]+:\s*[^=]+,\s*$")
DECL = re.compile(r"^\s*(pub(\([a-z]+\))?\s+)?(struct|enum)\s")


def rows(repo):
    out = subprocess.run(["duplicates", "--most", "200", "--repo", repo], capture_output=True, text=True).stdout
    prefix = "" if repo == "." else repo.rstrip("/") + "/"
    for line in out.splitlines():
        if line.startswith("D"):
            f = line.split()
            yield prefix + f[1], prefix + f[3], " ".join(f[4:])


def side(spec):
    path, span = spec.rsplit(":", 1)
    a, b = map(int, span.split("-"))
    text = open(path, encoding="utf-8", errors="replace").read().split("\n")
    lines = [x for x in text[a - 1 : b] if x.strip() and not x.strip().startswith("//") and x.strip() not in "{}();,"]
    in_test = path.startswith("tests/") or "/tests" in path or path.endswith("tests.rs") or "#[cfg(test)]" in "\n".join(text[:a])
    decl = sum(1 for x in lines if FIELD.match(x) or x.strip().startswith("#[") or DECL.match(x))
    return in_test, decl / max(1, len(lines))


def kind(a, b):
    (ta, da), (tb, db) = side(a), side(b)
    if da >= 0.6 and db >= 0.6:
        return "struct"
    if ta and tb:
        return "tests"
    return "test vs code" if ta or tb else "code"


def main():
    repos = [".", "src"] + sorted(os.path.join("src", d) for d in os.listdir("src") if os.path.isdir(os.path.join("src", d)))
    repos.append("tests")
    seen = {}
    for r in repos:
        for a, b, line in rows(r):
            seen.setdefault((a, b), line)
    tally = Counter()
    for (a, b), notes in sorted(seen.items()):
        k = kind(a, b)
        tally[k] += 1
        if len(sys.argv) > 1 and k == sys.argv[1]:
            print(f"{a} ~ {b} {notes}".rstrip())
    print(f"{len(seen)} pairs seen: " + ", ".join(f"{k} {n}" for k, n in tally.most_common()))


if __name__ == "__main__":
    main()
