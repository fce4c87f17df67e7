#!/usr/bin/env python3
# Import circles in src/: every .rs file is a module; edges come from the
# `crate::` and `super::` paths its code names (items under #[cfg(test)],
# comments, doc links and string literals do not count),
# resolved to the longest existing module, then each module is cut to its
# first DEPTH path components (default: every depth, each checked), so that
# `simulate::policy::modern` using `simulate::engine` while the engine uses
# `simulate::policy` is a circle. Prints the circles; exits 1 if there are any.
#   usage: scripts/import-cycles.py [DEPTH...]    (run from the repository root)
# Without DEPTH it also checks the layers (LAYERS, at the end).
import os, re, sys
from rustcode import code_only
root = 'src'
depths = [int(a) for a in sys.argv[1:]]
mods = {}
for d, _, fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)[:-3].split('/')
            if rel[-1] == 'mod': rel = rel[:-1]
            if rel in (['lib'], ['main']): continue
            # Test modules (`tests.rs`, `x_tests.rs`, `tests/`) and the tests'
            # own support (`testing/`: the fake machines) may reach anywhere.
            if rel[0] == 'testing' or any(r == 'tests' or r.endswith('_tests') for r in rel): continue
            mods['::'.join(rel)] = p
# By default every depth, from the top-level modules down to the deepest file.
depths = depths or list(range(1, max(len(m.split('::')) for m in mods) + 1))
def resolve(parts):
    for k in range(len(parts), 0, -1):
        c = '::'.join(parts[:k])
        if c in mods: return c
    return None
def without_tests(code):
    """The code without its `#[cfg(test)]` items (a test module, inline or
    in its own file, or a `use` only tests need)."""
    out = []; i = 0
    while True:
        j = code.find('#[cfg(test)]', i)
        if j < 0:
            out.append(code[i:]); return ''.join(out)
        out.append(code[i:j])
        k = j + len('#[cfg(test)]')
        while True:  # further attributes of the same item
            m = re.match(r'\s*#\[[^\]]*\]', code[k:])
            if not m: break
            k += m.end()
        semi, brace = code.find(';', k), code.find('{', k)
        if brace < 0 or (0 <= semi < brace):
            i = len(code) if semi < 0 else semi + 1
        else:
            depth = 0; i = brace
            while i < len(code):
                if code[i] == '{': depth += 1
                elif code[i] == '}':
                    depth -= 1
                    if depth == 0: i += 1; break
                i += 1
edges = {}
for m, p in mods.items():
    src = without_tests(code_only(open(p).read()))
    here = m.split('::')
    isdir = p.endswith('mod.rs')
    for path in re.findall(r'\b((?:crate|super)(?:::(?:super|[a-z_0-9]+))+)', src):
        parts = path.split('::')
        if parts[0] == 'crate':
            tgt = resolve(parts[1:])
        else:
            base = here if isdir else here[:-1]
            base = list(base)
            i = 0
            while i < len(parts) and parts[i] == 'super':
                if i > 0: base = base[:-1]
                i += 1
            # first `super` from a file module means its parent directory module
            tgt = resolve(base + parts[i:])
        if tgt and tgt != m and not m.startswith(tgt + '::') and not tgt.startswith(m + '::'):
            edges.setdefault(m, set()).add(tgt)
def cut(m, depth):
    return '::'.join(m.split('::')[:depth])
raw = edges
found = False
for depth in depths:
  edges = {}
  for a, bs in raw.items():
    for b in bs:
        x, y = cut(a, depth), cut(b, depth)
        if x != y:
            edges.setdefault(x, set()).add(y)
  nodes = set(edges) | {y for v in edges.values() for y in v}
  sys.setrecursionlimit(10000)
  idx = {}; low = {}; st = []; on = set(); sccs = []; c = [0]
  def strong(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in idx: strong(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: sccs.append(sorted(comp))
  for v in sorted(nodes):
    if v not in idx: strong(v)
  print(f"depth {depth}: {len(nodes)} modules, {sum(len(v) for v in edges.values())} edges, circles: {sccs if sccs else 'none'}")
  for comp in sccs:
    # The edges inside each circle, with the modules that make them, so that
    # the one to cut can be chosen.
    for a, bs in sorted(raw.items()):
      for b in sorted(bs):
        x, y = cut(a, depth), cut(b, depth)
        if x != y and x in comp and y in comp:
          print(f"  {x} -> {y}  ({a} uses {b})")
  found = found or bool(sccs)
# The layers of ARCHITECTURE.md ("Layers"), lowest first: a top-level module
# imports only modules of its own layer or below (and, by the check above,
# never in a circle). A module in no layer is an error: place it there first.
LAYERS = [
    ('ground floor', ['cpuset', 'error', 'model']),
    ('pure computation', ['stats', 'simulate']),
    ('the machine', ['topology', 'sys', 'child']),
    ('measuring', ['measure']),
    ('benchmarks', ['bench', 'place']),
    ('keeping and judging', ['config', 'store', 'report']),
    ('orchestration', ['harness']),
    ('advice', ['doctor']),
    ('studies', ['study']),
    ('fleet', ['fleet']),
    ('command line', ['cli']),
    ('top', ['app']),
]
if not sys.argv[1:]:
  level = {m: i for i, (_, ms) in enumerate(LAYERS) for m in ms}
  tops = {m.split('::')[0] for m in mods}
  for m in sorted(tops - set(level)):
    print(f"layers: module {m} is in no layer (scripts/import-cycles.py LAYERS, ARCHITECTURE.md)")
    found = True
  up = sorted({(a.split('::')[0], b.split('::')[0], a, b) for a, bs in raw.items() for b in bs
               if level.get(a.split('::')[0], 99) < level.get(b.split('::')[0], -1)})
  for x, y, a, b in up:
    print(f"layers: {x} ({LAYERS[level[x]][0]}) imports {y} ({LAYERS[level[y]][0]}), a layer above it ({a} uses {b})")
  found = found or bool(up)
  if not up and tops <= set(level):
    print(f"layers: {len(LAYERS)} layers, no module imports one above its own")
sys.exit(1 if found else 0)
