#!/usr/bin/env python3
"""The bounds ARCHITECTURE.md promises of the source, checked (run by .ci/run):

- every file under src/ has at most 600 lines, test files excepted
  (`tests.rs`, `*_tests.rs`, files under a `tests/` folder, and `captures.rs`,
  the topology captures' test harness);
- no source file says "issue NN" (history belongs in docs and commits).

Exits 1 naming each file over a bound, 0 when all hold.
"""

import os
import re
import sys

MAX_LINES = 600
ISSUE = re.compile(r"\bissue \d+", re.IGNORECASE)


def is_test(path):
    name = os.path.basename(path)
    return name == "tests.rs" or name.endswith("_tests.rs") or "/tests/" in path or name == "captures.rs"


def main():
    bad = []
    for root, _, files in os.walk("src"):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            lines = text.count("\n")
            if lines > MAX_LINES and not is_test(path):
                bad.append(f"{path}: {lines} lines (at most {MAX_LINES})")
            for n, line in enumerate(text.splitlines(), 1):
                if ISSUE.search(line):
                    bad.append(f"{path}:{n}: names an issue: {line.strip()}")
    for b in bad:
        print(b)
    print(f"source bounds: {'broken' if bad else 'kept'} ({len(bad)} finding(s))")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
