#!/usr/bin/env python3
"""The bounds ARCHITECTURE.md promises of the source, checked (run by .ci/run):

- every file under src/ has at most 600 lines, test files excepted
  (`tests.rs`, `*_tests.rs`, files under a `tests/` folder, and `captures.rs`,
  the topology captures' test harness);
- every function outside tests has at most 80 lines, from its `fn` line to
  its closing brace (`#[cfg(test)]` modules, the test files above and
  `bench/testing.rs`, the test benchmarks' table, excepted);
- no source file says "issue NN" (history belongs in docs and commits).

Exits 1 naming each file or function over a bound, 0 when all hold.
"""

import os
import re
import sys

from rustcode import code_only

MAX_LINES = 600
MAX_FN_LINES = 80
ISSUE = re.compile(r"\bissue \d+", re.IGNORECASE)
FN = re.compile(r'^[ \t]*(pub(\([^)]*\))?\s+)?((const|async|unsafe|extern(\s+"C")?)\s+)*fn\s+(?P<name>\w+)', re.M)
TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def is_test(path):
    name = os.path.basename(path)
    return name == "tests.rs" or name.endswith("_tests.rs") or "/tests/" in path or name == "captures.rs"


def closing(code, k):
    """Where the brace opened at `code[k]` closes."""
    depth = 0
    for e in range(k, len(code)):
        if code[e] == "{":
            depth += 1
        elif code[e] == "}":
            depth -= 1
            if depth == 0:
                return e
    return len(code) - 1


def signature_end(code, k):
    """Where the body of the function whose signature starts at `k` opens, or
    None where the signature ends in `;` (a declaration); a `;` inside
    brackets (`[u8; 4]`) is part of a type."""
    depth = 0
    for e in range(k, len(code)):
        if code[e] in "([":
            depth += 1
        elif code[e] in ")]":
            depth -= 1
        elif depth == 0 and code[e] in "{;":
            return e if code[e] == "{" else None
    return None


def fn_spans(text):
    """(name, first line, last line, lines) of each function with a body,
    outside `#[cfg(test)]` modules."""
    code = code_only(text)
    skip = [(m.start(), closing(code, m.end() - 1)) for m in TEST_MOD.finditer(code)]
    spans = []
    for m in FN.finditer(code):
        if any(a <= m.start() <= b for a, b in skip):
            continue
        body = signature_end(code, m.end())
        if body is None:
            continue
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, closing(code, body)) + 1
        spans.append((m.group("name"), first, last, last - first + 1))
    return spans


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
            if not is_test(path) and path != os.path.join("src", "bench", "testing.rs"):
                for name, first, last, n in fn_spans(text):
                    if n > MAX_FN_LINES:
                        bad.append(f"{path}:{first}-{last}: fn {name} has {n} lines (at most {MAX_FN_LINES})")
            for n, line in enumerate(text.splitlines(), 1):
                if ISSUE.search(line):
                    bad.append(f"{path}:{n}: names an issue: {line.strip()}")
    for b in bad:
        print(b)
    print(f"source bounds: {'broken' if bad else 'kept'} ({len(bad)} finding(s))")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
