#!/usr/bin/env python3
"""Summarise the per-phase timings of restores from a debug log.

Usage: PANDASTACK_LOG=debug build/bench/create 2>log; bench/phases.py log

Reads the key=value lines the engine writes at debug level
(event=vm.restore_phases, one per create; docs/engine.md, "Where a create's
time goes") and prints, for creates without and with the pool, the median
and the 90th percentile of every phase in ms.  Lines that do not parse are
skipped.
"""
import sys

PHASES = ["overlay", "net", "jail", "spawn", "qmp_connect", "caps", "migrate_start", "migrate_wait",
          "cont", "agent_connect", "hello", "restore_op", "vm_json", "finish"]


def parse(line):
    """The key=value pairs of one log line (values without spaces)."""
    out = {}
    for word in line.split():
        key, sep, val = word.partition("=")
        if sep:
            out[key] = val
    return out


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, (len(values) * p) // 100)]


def main(paths):
    rows = {"0": [], "1": []}
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                if "event=vm.restore_phases" not in line:
                    continue
                kv = parse(line)
                if kv.get("pooled") in rows:
                    rows[kv["pooled"]].append(kv)
    for pooled, name in (("0", "create (no pool)"), ("1", "create through the pool")):
        got = rows[pooled]
        if not got:
            continue
        print(f"{name}: {len(got)} restores; p50 / p90 ms")
        for ph in PHASES:
            vals = []
            for kv in got:
                try:
                    vals.append(float(kv[ph + "_ms"]))
                except (KeyError, ValueError):
                    pass
            if vals and (pooled == "0" or ph not in ("overlay", "net", "spawn", "qmp_connect", "caps")):
                print(f"  {ph:14s} {pct(vals, 50):7.1f} {pct(vals, 90):7.1f}")
        hellos = [int(kv["hellos"]) for kv in got if kv.get("hellos", "").isdigit()]
        if hellos:
            print(f"  hellos sent: 1 in {hellos.count(1)}, more in "
                  f"{len(hellos) - hellos.count(1)} (max {max(hellos)})")


if __name__ == "__main__":
    main(sys.argv[1:] or ["/dev/stdin"])
