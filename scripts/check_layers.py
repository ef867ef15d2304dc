#!/usr/bin/python3
"""scripts/check_layers.py - the layers of src/, checked (make check-layers).

docs/architecture.md draws the map; this script holds the code to it. It
reads every `#include "..."` of src/ and fails when:
  1. a file includes the private header (*_int.h) of another folder;
  2. a file includes a header of a component or folder its own may not use
     (the ALLOWED table below: the direction of calls, top to bottom);
  3. the includes between folders (and the top-level files of daemon/,
     engine/ and agent/, each a node of its own) make a circle.

  --self-test   first plant two bad includes (another folder's _int.h, and
                an include that runs up) and check that each is caught: the
                check's own positive control; then check the tree.
"""
import collections
import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

# Components of src/ and what each may include (besides itself).
COMPONENTS = {
    "common": [],
    "client": ["common"],
    "mcp": ["client", "common"],
    "cli": ["mcp", "client", "common"],
    "engine": ["common"],
    "enginectl": ["engine", "common"],
    "agent": ["common"],
    "daemon": ["engine", "mcp", "client", "common"],
}

# Inside a component: the folders, bottom to top, and what each may include
# (besides itself).  "base" is the component's top-level files other than
# main.c (what every part shares: daemon.h, config, the error table, the
# counters; engine/paths); a top-level main.c may include everything.
# agent/'s top-level files are the protocol server and init, around the
# folders: they are checked for circles only.
BASE = "base"
FOLDERS = {
    "daemon": {
        "store": [BASE],
        "net": ["store", BASE],
        "http": ["net", "store", BASE],
        "sandbox": ["http", "net", "store", BASE],
        "ports": ["sandbox", "http", "net", "store", BASE],
        "cluster": ["sandbox", "http", "net", "store", BASE],
        "api": ["cluster", "ports", "sandbox", "http", "net", "store", BASE],
        BASE: [],
    },
    "engine": {
        "qemu": [BASE],
        "guest": [BASE],
        "template": ["qemu", BASE],
        "vm": ["template", "guest", "qemu", BASE],
        BASE: [],
    },
    "agent": {
        "jupyter": [BASE],
        "kernel": ["jupyter", BASE],
        "ops": ["kernel", "jupyter", BASE],
        BASE: None,  # top-level files: circles only
    },
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    for p in sorted(SRC.rglob("*")):
        if p.suffix in (".c", ".h", ".def") and p.is_file():
            yield p.relative_to(SRC).as_posix()


def includes(rel):
    text = (SRC / rel).read_text(errors="replace")
    return [m.group(1) for m in INCLUDE.finditer(text) if (SRC / m.group(1)).is_file()]


def place(rel):
    """(component, folder, node): folder is a sub-folder, BASE or "main";
    node is the name used for circles (a folder, or a top-level file)."""
    parts = rel.split("/")
    comp = parts[0]
    if len(parts) > 2:
        return comp, parts[1], f"{comp}/{parts[1]}/"
    stem = re.sub(r"\.(c|h|def)$", "", parts[-1])
    folder = "main" if stem == "main" else BASE
    return comp, folder, f"{comp}/{stem}"


def check(planted=()):
    """Problems of the tree, with the planted (file, include) pairs added."""
    problems = []
    graph = collections.defaultdict(set)
    edges = [(f, i) for f in sources() for i in includes(f)] + list(planted)
    for f, inc in edges:
        fc, ff, fn = place(f)
        ic, iff, inode = place(inc)
        where = f"src/{f} includes {inc}"
        if inc.endswith("_int.h") and os.path.dirname(inc) != os.path.dirname(f):
            problems.append(f"{where}: the private header of another folder")
        if fc != ic:
            if fc in COMPONENTS and ic not in COMPONENTS[fc]:
                problems.append(f"{where}: {fc} may not use {ic}")
            continue
        if fn != inode and fc in FOLDERS:
            graph[fn].add(inode)
        table = FOLDERS.get(fc)
        if not table or ff == iff or ff == "main":
            continue
        allowed = table.get(ff)
        if allowed is None:
            continue
        if iff == "main" or iff not in allowed:
            problems.append(f"{where}: {fc}/{ff} may not use {fc}/{iff} (it runs up)")
    # circles between nodes (Tarjan's strongly connected components)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    problems += [f"a circle of includes: {' <-> '.join(c)}" for c in out]
    return problems


def main():
    if "--self-test" in sys.argv:
        plants = [
            [("daemon/api/api_fs.c", "daemon/net/net_int.h")],     # another folder's _int.h
            [("daemon/store/store.c", "daemon/api/api.h")],       # runs up
            [("engine/qemu/qmp.c", "engine/vm/vm.h")],             # runs up
            [("engine/vm/vm.c", "engine/template/template_int.h")],  # another folder's _int.h
            [("common/util.c", "daemon/daemon.h")],                # a component it may not use
            [("daemon/config.h", "daemon/daemon.h")],              # a circle (daemon.h includes config.h)
        ]
        for p in plants:
            found = check(p)
            if not found:
                print(f"check-layers: the planted include {p[0]} was not caught", file=sys.stderr)
                return 1
        print(f"check-layers: {len(plants)} planted includes caught (positive control)",
              flush=True)
    problems = check()
    for p in problems:
        print(f"check-layers: {p}", file=sys.stderr)
    if problems:
        return 1
    print("check-layers: every include of src/ runs down its layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
