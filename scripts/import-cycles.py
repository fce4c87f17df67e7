#!/usr/bin/env python3
# Import circles in src/: every .rs file is a module; edges come from the
# `crate::` and `super::` paths it names (before its first #[cfg(test)]),
# resolved to the longest existing module, then each module is cut to its
# first DEPTH path components (default: 1 and 2, both checked), so that
# `simulate::policy::modern` using `simulate::engine` while the engine uses
# `simulate::policy` is a circle. Prints the circles; exits 1 if there are any.
#   usage: scripts/import-cycles.py [DEPTH...]    (run from the repository root)
import os, re, sys
root = 'src'
depths = [int(a) for a in sys.argv[1:]] or [1, 2]
mods = {}
for d, _, fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)[:-3].split('/')
            if rel[-1] == 'mod': rel = rel[:-1]
            if rel in (['lib'], ['main']): continue
            mods['::'.join(rel)] = p
def resolve(parts):
    for k in range(len(parts), 0, -1):
        c = '::'.join(parts[:k])
        if c in mods: return c
    return None
edges = {}
for m, p in mods.items():
    src = open(p).read().split('#[cfg(test)]')[0]
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
  found = found or bool(sccs)
sys.exit(1 if found else 0)
