#!/usr/bin/python3
"""bench/contexts.py - code contexts through the daemon's REST API.

Figures (each a median over its repetitions, with p90 where useful):
  - run_code round trip of `1+1` in a warm context (--runs, default 200),
    and the kernel's own time for it (the Execution's duration_ms);
  - for the first, second and third context of a new sandbox, one right
    after the other: the time to create it and its first `1+1` (the
    template holds warm_kernels warm kernels, 2 on code-interpreter: the
    first two take one each; the third starts a kernel, as the pool
    refills only once the sandbox has been idle);
  - end to end: POST /v1/sandboxes, then a context, then `1+1`;
  - peers in the same run, on the same sandbox: the same `1+1` through
    POST .../exec of `python3 -c 'print(1+1)'` and through the one-shot
    POST .../run_code (a fresh interpreter each time).

By default it starts build/pandastackd ($PANDASTACKD) on a temporary data
dir (template cache from --cache / PANDASTACK_CACHE); --url and --key use
a running daemon instead.

  python3 bench/contexts.py [--template code-interpreter] [--runs 200]
                            [--sandboxes 5] [--peer-runs 20] [--url URL --key KEY]
                            [--json]
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from api import Client, pct, start_daemon  # noqa: E402  (bench/api.py)


def call_json(c, method, path, body=None, want=200):
    st, raw = c.call(method, path, body)
    if st != want:
        sys.exit(f"{method} {path}: {st} {raw[:300]!r}")
    return json.loads(raw) if raw else None


def timed(fn):
    t = time.perf_counter()
    v = fn()
    return (time.perf_counter() - t) * 1000, v


def stats(ms):
    return {"median_ms": round(statistics.median(ms), 1), "p90_ms": round(pct(ms, 90), 1),
            "n": len(ms)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--template", default="code-interpreter")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--sandboxes", type=int, default=5)
    ap.add_argument("--peer-runs", type=int, default=20)
    ap.add_argument("--cache", default=os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack"))
    ap.add_argument("--url")
    ap.add_argument("--key")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args()

    workdir = proc = None
    if a.url:
        url, key = a.url, a.key or os.environ.get("PANDASTACK_API_KEY")
    else:
        workdir = pathlib.Path(tempfile.mkdtemp(prefix="bench-contexts-"))
        proc, url, key = start_daemon(a.cache, workdir, a.sandboxes + 1)
    c = Client(url, key)
    ids = []

    def new_sandbox():
        s = call_json(c, "POST", "/v1/sandboxes", {"template": a.template, "ttl_seconds": 3600},
                      201)
        ids.append(s["id"])
        return s["id"]

    def new_context(sid):
        return call_json(c, "POST", f"/v1/sandboxes/{sid}/contexts", {}, 201)["id"]

    def run(sid, cid, code):
        ex = call_json(c, "POST", f"/v1/sandboxes/{sid}/contexts/{cid}/run_code", {"code": code})
        if ex["error"]:
            sys.exit(f"run failed: {ex['error']}")
        return ex

    try:
        health = call_json(c, "GET", "/healthz")
        # --- create-sandbox-then-first-1+1; first, second, third context -------------
        e2e = []
        create = {1: [], 2: [], 3: []}
        first_run = {1: [], 2: [], 3: []}
        for _ in range(a.sandboxes):
            t0 = time.perf_counter()
            sid = new_sandbox()
            for k in (1, 2, 3):
                ms, cid = timed(lambda: new_context(sid))
                create[k].append(ms)
                ms, ex = timed(lambda: run(sid, cid, "1+1"))
                first_run[k].append(ms)
                if k == 1:
                    e2e.append((time.perf_counter() - t0) * 1000)
            call_json(c, "DELETE", f"/v1/sandboxes/{sid}", want=204)
            ids.remove(sid)

        # --- warm 1+1 round trips -------------------------------------------------------
        sid = new_sandbox()
        cid = new_context(sid)
        for _ in range(5):
            run(sid, cid, "1+1")
        rt, kernel = [], []
        for _ in range(a.runs):
            ms, ex = timed(lambda: run(sid, cid, "1+1"))
            rt.append(ms)
            kernel.append(ex["duration_ms"])

        # --- peers: a fresh python3 per call ------------------------------------------
        exec_ms, shot_ms = [], []
        for _ in range(a.peer_runs):
            ms, r = timed(lambda: call_json(c, "POST", f"/v1/sandboxes/{sid}/exec",
                                            {"cmd": "python3 -c 'print(1+1)'"}))
            if r["stdout"] != "2\n":
                sys.exit(f"exec peer: {r}")
            exec_ms.append(ms)
            ms, r = timed(lambda: call_json(c, "POST", f"/v1/sandboxes/{sid}/run_code",
                                            {"code": "print(1+1)", "language": "python"}))
            if r["stdout"] != "2\n":
                sys.exit(f"run_code peer: {r}")
            shot_ms.append(ms)

        res = {
            "accelerator": health.get("accelerator"),
            "template": a.template,
            "warm_1plus1_round_trip": stats(rt),
            "warm_1plus1_kernel_duration": stats(kernel),
            "first_context_create": stats(create[1]),
            "first_context_first_run": stats(first_run[1]),
            "second_context_create": stats(create[2]),
            "second_context_first_run": stats(first_run[2]),
            "third_context_create": stats(create[3]),
            "third_context_first_run": stats(first_run[3]),
            "create_sandbox_to_first_1plus1": stats(e2e),
            "peer_exec_python3_c": stats(exec_ms),
            "peer_one_shot_run_code": stats(shot_ms),
        }
        ratio = res["peer_exec_python3_c"]["median_ms"] / max(0.1, res["warm_1plus1_round_trip"]["median_ms"])
        res["exec_over_warm_context_ratio"] = round(ratio, 1)
        if a.json:
            print(json.dumps(res))
        else:
            def line(name, k):
                s = res[k]
                print(f"  {name:40s} median {s['median_ms']:8.1f} ms   p90 {s['p90_ms']:8.1f} ms"
                      f"   (n={s['n']})")
            print(f"bench/contexts: {a.template} on {res['accelerator']}")
            line("1+1 in a warm context (round trip)", "warm_1plus1_round_trip")
            line("  of which the kernel (duration_ms)", "warm_1plus1_kernel_duration")
            line("first context create", "first_context_create")
            line("  its first 1+1", "first_context_first_run")
            line("second context create", "second_context_create")
            line("  its first 1+1", "second_context_first_run")
            line("third context create", "third_context_create")
            line("  its first 1+1", "third_context_first_run")
            line("create sandbox -> context -> 1+1", "create_sandbox_to_first_1plus1")
            line("peer: exec python3 -c 'print(1+1)'", "peer_exec_python3_c")
            line("peer: one-shot run_code print(1+1)", "peer_one_shot_run_code")
            print(f"  exec of python3 -c / warm context round trip: {res['exec_over_warm_context_ratio']}x")
        return 0
    finally:
        for s in ids:
            try:
                c.call("DELETE", f"/v1/sandboxes/{s}")
            except Exception:  # noqa: BLE001
                pass
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
