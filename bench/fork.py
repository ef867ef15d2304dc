#!/usr/bin/python3
"""bench/fork.py - snapshots, forks, pause and resume through the daemon,
against the template create of the same run.

Prints, each from a fresh daemon on a temporary data dir (no pool, so that
template creates and creates from a snapshot both start a QEMU):
  - template create: request to 201 (the guest agent has answered), p50/p99;
  - capture of a fresh sandbox and of one with ~50 MiB of changed memory
    (a numpy buffer written in a code context): request time, the time the
    guest was paused and the whole capture as the daemon logs them, the
    changed memory found and the bytes stored;
  - fork: request to the first fork answering (201, then 1+1 in the
    source's code context of the fork), p50/p99 over --forks forks of the
    50 MiB sandbox, one at a time;
  - 10 creates from one snapshot (later ones map a merged RAM image);
  - pause and resume of the 50 MiB sandbox, and the context's answer after;
  - where the time goes: the phases of the 50 MiB capture and the medians
    of the forks' restore phases, from the daemon's debug log.

  python3 bench/fork.py [--template code-interpreter] [--forks 10]
                        [--creates 10] [--changed-mib 50] [--json]
                        [--log FILE (keep the daemon's log)]
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from api import Client, pct, start_daemon  # noqa: E402


def ms_since(t0):
    return (time.monotonic() - t0) * 1000.0


def call(c, method, path, body=None, want=(200, 201, 204)):
    status, raw = c.call(method, path, body)
    if status not in want:
        sys.exit(f"{method} {path}: {status} {raw[:300]!r}")
    return json.loads(raw) if raw else None


def captures(log_path, since):
    """The daemon's snapshot.taken events logged after byte offset since."""
    text = log_path.read_bytes()[since:].decode(errors="replace")
    out = []
    for line in text.splitlines():
        if "event=snapshot.taken" in line:
            out.append({k: v for k, v in re.findall(r"(\w+)=(\S+)", line)})
    return out


def events(log_path, since, until, name):
    """The key=value fields of the daemon's name events logged between
    byte offsets since and until."""
    text = log_path.read_bytes()[since:until].decode(errors="replace")
    return [dict(re.findall(r"(\w+)=(\S+)", line)) for line in text.splitlines()
            if f"event={name} " in line]


def phase_medians(evs):
    """The median of every *_ms field over evs."""
    out = {}
    for k in evs[0] if evs else {}:
        if k.endswith("_ms"):
            vals = [float(e[k]) for e in evs if k in e]
            out[k[:-3]] = round(pct(vals, 50), 1)
    return out


def summary(values):
    return {"n": len(values), "p50_ms": round(pct(values, 50), 1),
            "p99_ms": round(pct(values, 99), 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--template", default="code-interpreter")
    ap.add_argument("--forks", type=int, default=10)
    ap.add_argument("--creates", type=int, default=10)
    ap.add_argument("--changed-mib", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--log", help="copy the daemon's (debug) log here")
    args = ap.parse_args()
    os.environ.setdefault("PANDASTACK_LOG", "debug")  # the phase lines
    cache = os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack")
    work = pathlib.Path(tempfile.mkdtemp(prefix="pandastack-bench-fork-"))
    proc, url, key = start_daemon(cache, work, 20, pool_size=0)
    log = work / "daemon.log"
    c = Client(url, key)
    res = {}
    made = []
    try:
        # template creates
        t = []
        for _ in range(5):
            t0 = time.monotonic()
            s = call(c, "POST", "/v1/sandboxes", {"template": args.template, "ttl_seconds": 1800})
            t.append(ms_since(t0))
            made.append(s["id"])
        res["template_create"] = summary(t)
        fresh = made[0]
        for sid in made[1:]:
            call(c, "DELETE", f"/v1/sandboxes/{sid}")
        made = [fresh]

        # capture of a fresh sandbox
        def capture(sid):
            off = log.stat().st_size
            t0 = time.monotonic()
            snap = call(c, "POST", f"/v1/sandboxes/{sid}/snapshots", {})
            ms = ms_since(t0)
            ev = (captures(log, off) or [{}])[-1]
            return snap, {"request_ms": round(ms, 1), "paused_ms": float(ev.get("paused_ms", "nan")),
                          "capture_ms": float(ev.get("total_ms", "nan")),
                          "changed_mib": float(ev.get("private_mib", "nan")),
                          "stored_mib": float(ev.get("stored_mib", "nan")),
                          "size_bytes": snap["size_bytes"]}

        _, res["capture_fresh"] = capture(fresh)

        # a sandbox with ~N MiB of changed memory in a code context
        ctx = call(c, "POST", f"/v1/sandboxes/{fresh}/contexts", {})["id"]
        code = (f"import numpy as np\nbuf = np.full({args.changed_mib} << 20, 7, dtype=np.uint8)\n"
                "print(int(buf[-1]))")
        out = call(c, "POST", f"/v1/sandboxes/{fresh}/contexts/{ctx}/run_code", {"code": code})
        if out.get("stdout") != "7\n":
            sys.exit(f"the buffer was not written: {out}")
        off = log.stat().st_size
        snap, res["capture_changed"] = capture(fresh)
        end = log.stat().st_size
        res["capture_changed"]["phases"] = phase_medians(events(log, off, end, "snapshot.capture"))
        res["capture_changed"]["phases"].update(
            phase_medians(events(log, off, end, "snapshot.copy")))

        # forks, one at a time: request to 201, and to 1+1 in the fork's context
        to_201, to_answer = [], []
        off = log.stat().st_size
        for _ in range(args.forks):
            t0 = time.monotonic()
            f = call(c, "POST", f"/v1/sandboxes/{fresh}/fork", {"count": 1})["sandboxes"][0]["id"]
            to_201.append(ms_since(t0))
            r = call(c, "POST", f"/v1/sandboxes/{f}/contexts/{ctx}/run_code", {"code": "1+1"})
            to_answer.append(ms_since(t0))
            if r.get("error"):
                sys.exit(f"the fork's context failed: {r}")
            call(c, "DELETE", f"/v1/sandboxes/{f}")
        end = log.stat().st_size
        res["fork_phases"] = {
            "capture": phase_medians(events(log, off, end, "snapshot.capture")),
            "restore": phase_medians(events(log, off, end, "vm.restore_phases")),
            "restore_total": phase_medians(events(log, off, end, "vm.restore_snapshot")),
            "create": phase_medians([{"create_ms": e["ms"]} for e in
                                     events(log, off, end, "sandbox.create")])}
        res["fork_to_201"] = summary(to_201)
        res["fork_to_first_answer"] = summary(to_answer)

        # creates from one snapshot
        t, ids = [], []
        for _ in range(args.creates):
            t0 = time.monotonic()
            s = call(c, "POST", "/v1/sandboxes", {"snapshot": snap["id"], "ttl_seconds": 600})
            t.append(ms_since(t0))
            ids.append(s["id"])
            if len(ids) > 3:  # keep the host's memory in check
                call(c, "DELETE", f"/v1/sandboxes/{ids.pop(0)}")
        for sid in ids:
            call(c, "DELETE", f"/v1/sandboxes/{sid}")
        res["create_from_snapshot"] = summary(t)
        res["create_from_snapshot"]["each_ms"] = [round(x) for x in t]

        # pause and resume
        t0 = time.monotonic()
        call(c, "POST", f"/v1/sandboxes/{fresh}/pause")
        pause_ms = ms_since(t0)
        t0 = time.monotonic()
        call(c, "POST", f"/v1/sandboxes/{fresh}/resume")
        resume_ms = ms_since(t0)
        r = call(c, "POST", f"/v1/sandboxes/{fresh}/contexts/{ctx}/run_code",
                 {"code": "print(int(buf[0]))"})
        res["pause_resume"] = {"pause_ms": round(pause_ms, 1), "resume_ms": round(resume_ms, 1),
                               "resume_to_answer_ms": round(resume_ms + r["duration_ms"], 1),
                               "context_kept": r.get("stdout") == "7\n"}
        res["accelerator"] = call(c, "GET", "/healthz")["accelerator"]
    finally:
        for sid in made:
            c.call("DELETE", f"/v1/sandboxes/{sid}")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        if args.log:
            shutil.copyfile(log, args.log)
        shutil.rmtree(work, ignore_errors=True)

    if args.json:
        print(json.dumps(res, indent=1))
        return
    print(f"accelerator: {res['accelerator']}")
    tc = res["template_create"]
    print(f"template create      p50 {tc['p50_ms']:7.1f} ms  p99 {tc['p99_ms']:7.1f} ms  (n={tc['n']})")
    for k, what in (("capture_fresh", "fresh sandbox"),
                    ("capture_changed", f"~{args.changed_mib} MiB changed")):
        x = res[k]
        print(f"capture, {what:18s} request {x['request_ms']:7.1f} ms  paused {x['paused_ms']:6.1f} ms"
              f"  capture {x['capture_ms']:6.1f} ms  changed {x['changed_mib']:6.1f} MiB"
              f"  stored {x['stored_mib']:6.1f} MiB  on disk {x['size_bytes'] / 1048576:6.1f} MiB")
    for k, what in (("fork_to_201", "fork, request to 201"),
                    ("fork_to_first_answer", "fork, to first answer")):
        x = res[k]
        print(f"{what:22s} p50 {x['p50_ms']:7.1f} ms  p99 {x['p99_ms']:7.1f} ms  (n={x['n']})")
    x = res["create_from_snapshot"]
    print(f"create from snapshot p50 {x['p50_ms']:7.1f} ms  p99 {x['p99_ms']:7.1f} ms  "
          f"each {x['each_ms']}")
    x = res["pause_resume"]
    print(f"pause {x['pause_ms']:.1f} ms, resume {x['resume_ms']:.1f} ms, context kept: "
          f"{x['context_kept']}")

    def phases(title, ph):
        print(f"  {title}: " + " ".join(f"{k}={v:g}" for k, v in ph.items() if v))

    print("where the time goes (ms, medians; zero phases left out):")
    phases(f"capture, ~{args.changed_mib} MiB changed", res["capture_changed"]["phases"])
    for k in ("capture", "restore", "restore_total", "create"):
        phases(f"fork {k}", res["fork_phases"][k])


if __name__ == "__main__":
    main()
