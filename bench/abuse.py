#!/usr/bin/python3
"""bench/abuse.py - what hostile guests cost their neighbours.

Starts build/pandastackd on a temporary data dir and one neighbour sandbox
whose `exec true` round trip is timed throughout.  Then, each in a sandbox
of its own: a memory hog (Python allocating until the guest's OOM killer
acts), a fork bomb, a disk fill (dd until ENOSPC), four guests spinning on
their CPU, 1 GiB of stdout through exec, and a guest kernel panic.  For each
it prints how long the abuse took, what it cost the host (disk, the daemon's
RSS, the QEMU's peak memory), the neighbour's exec latency (p50/p99 against
the idle baseline measured in the same run) and, under the spinners,
GET /v1/sandboxes p50/p99.  The containment itself is asserted by
tests/integration/test_jail_limits.py and test_guest_abuse.py; this prints
figures only.

  python3 bench/abuse.py [--template code-interpreter] [--json]
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from api import Client, pct, start_daemon  # noqa: E402


class Neighbour(threading.Thread):
    """Times `exec true` in one sandbox, back to back, and keeps the samples
    by phase."""

    def __init__(self, url, key, sid):
        super().__init__(daemon=True)
        self.c = Client(url, key)
        self.sid = sid
        self.phase = "idle"
        self.samples = {}
        self.stop = False

    def run(self):
        while not self.stop:
            t0 = time.perf_counter()
            st, _ = self.c.call("POST", f"/v1/sandboxes/{self.sid}/exec", {"cmd": "true"})
            ms = (time.perf_counter() - t0) * 1000
            self.samples.setdefault(self.phase, []).append(ms if st == 200 else float("inf"))
            time.sleep(0.05)


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cgroup_peak(data, sid):
    """The sandbox's QEMU memory high-water mark from its cgroup, MiB."""
    try:
        pid = int((data / "sandboxes" / sid / "qemu.pid").read_text())
        for line in open(f"/proc/{pid}/cgroup"):
            _, ctrl, path = line.strip().split(":", 2)
            if ctrl == "memory":
                f = pathlib.Path("/sys/fs/cgroup/memory") / path.lstrip("/") / "memory.max_usage_in_bytes"
                return int(f.read_text()) >> 20
            if ctrl == "":
                f = pathlib.Path("/sys/fs/cgroup") / path.lstrip("/") / "memory.peak"
                if f.exists():
                    return int(f.read_text()) >> 20
    except (OSError, ValueError):
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--template", default="code-interpreter")
    ap.add_argument("--cache", default=os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--phases", default="memory_hog,fork_bomb,disk_fill,four_spinners,stdout_1gib,kernel_panic",
                    help="comma-separated subset to run")
    ap.add_argument("--keep", action="store_true", help="keep the daemon's folder and log")
    args = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="pandastack-bench-abuse-"))
    proc, url, key = start_daemon(args.cache, work, 12)
    data = work / "data"
    c = Client(url, key)
    created = []
    out = {"accelerator": None, "phases": {}}

    def create():
        st, body = c.call("POST", "/v1/sandboxes", {"template": args.template, "ttl_seconds": 3600})
        if st != 201:
            raise SystemExit(f"create failed: {st} {body[:300]!r}")
        sid = json.loads(body)["id"]
        created.append(sid)
        return sid

    def run(sid, cmd, timeout=900):
        t0 = time.perf_counter()
        st, body = c.call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": cmd, "timeout_seconds": timeout},
                          timeout=timeout + 60)
        return st, (json.loads(body) if st == 200 else body), time.perf_counter() - t0

    try:
        st, body = c.call("GET", "/healthz")
        out["accelerator"] = json.loads(body)["accelerator"]
        nb = Neighbour(url, key, create())
        nb.start()
        time.sleep(10)

        def phase(name, fn):
            nb.phase = name
            r = fn()
            nb.phase = "between"
            time.sleep(2)
            out["phases"][name] = r

        def memory_hog():
            sid = create()
            st, res, secs = run(sid, "python3 -c 'a = []\nwhile True: a.append(bytearray(32 << 20))'")
            up = run(sid, "echo up")[1]
            return {"seconds": round(secs, 1), "exit_code": res.get("exit_code"),
                    "signal": res.get("signal"), "sandbox_up": isinstance(up, dict) and up["stdout"] == "up\n",
                    "qemu_peak_mib": cgroup_peak(data, sid)}

        def fork_bomb():
            sid = create()
            st, res, secs = run(sid, ":(){ :|:& };:", timeout=20)
            up = run(sid, "echo up")[1]
            return {"seconds": round(secs, 1), "timed_out": res.get("timed_out"),
                    "sandbox_up": isinstance(up, dict) and up["stdout"] == "up\n"}

        def disk_fill():
            sid = create()
            before = shutil.disk_usage(data).free
            st, res, secs = run(sid, "dd if=/dev/zero of=/root/fill bs=1M 2>&1 | tail -1")
            after = shutil.disk_usage(data).free
            overlay = data / "sandboxes" / sid / "jail" / "overlay.qcow2"
            return {"seconds": round(secs, 1), "guest_says": res["stdout"].strip()[-120:],
                    "host_free_drop_mib": (before - after) >> 20,
                    "overlay_mib": overlay.stat().st_size >> 20}

        def spinners():
            sids = [create() for _ in range(4)]
            for s in sids:
                run(s, "for i in 1 2; do (while :; do :; done) >/dev/null 2>&1 & done; echo started")
            lat = []
            t_end = time.time() + 30
            lc = Client(url, key)
            while time.time() < t_end:
                t0 = time.perf_counter()
                lc.call("GET", "/v1/sandboxes")
                lat.append((time.perf_counter() - t0) * 1000)
                time.sleep(0.1)
            for s in sids:
                c.call("DELETE", f"/v1/sandboxes/{s}")
            return {"list_ms_p50": round(pct(lat, 50), 2), "list_ms_p99": round(pct(lat, 99), 2),
                    "list_samples": len(lat)}

        def big_stdout():
            sid = create()
            r0 = rss_kib(proc.pid)
            peak = [r0]
            stop = [False]

            def sample():
                while not stop[0]:
                    peak[0] = max(peak[0], rss_kib(proc.pid))
                    time.sleep(0.05)
            th = threading.Thread(target=sample, daemon=True)
            th.start()
            st, res, secs = run(sid, "head -c 1073741824 /dev/zero", timeout=3600)
            stop[0] = True
            th.join()
            return {"seconds": round(secs, 1), "stdout_kept_bytes": len(res["stdout"]) if st == 200 else None,
                    "stdout_truncated": res.get("stdout_truncated") if st == 200 else None,
                    "daemon_rss_growth_mib": (peak[0] - r0) >> 10}

        def panic():
            sid = create()
            t0 = time.perf_counter()
            c.call("POST", f"/v1/sandboxes/{sid}/exec",
                   {"cmd": "echo c > /proc/sysrq-trigger", "timeout_seconds": 30}, timeout=90)
            while time.perf_counter() - t0 < 60:
                st, body = c.call("GET", f"/v1/sandboxes/{sid}")
                if st == 200 and json.loads(body)["status"] != "running":
                    return {"reported_after_s": round(time.perf_counter() - t0, 2),
                            "reason": json.loads(body)["reason"]}
                time.sleep(0.1)
            return {"reported_after_s": None}

        for name, fn in (("memory_hog", memory_hog), ("fork_bomb", fork_bomb),
                         ("disk_fill", disk_fill), ("four_spinners", spinners),
                         ("stdout_1gib", big_stdout), ("kernel_panic", panic)):
            if name not in args.phases.split(","):
                continue
            print(f"bench/abuse: {name} ...", file=sys.stderr, flush=True)
            phase(name, fn)
        nb.stop = True
        nb.join(timeout=60)
        for name, s in nb.samples.items():
            if name == "between":
                continue
            out["phases"].setdefault(name, {})
            out["phases"][name]["neighbour_exec_ms_p50"] = round(pct(s, 50), 1)
            out["phases"][name]["neighbour_exec_ms_p99"] = round(pct(s, 99), 1)
            out["phases"][name]["neighbour_samples"] = len(s)
    finally:
        for sid in created:
            try:
                c.call("DELETE", f"/v1/sandboxes/{sid}")
            except Exception:
                pass
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        if args.keep:
            print(f"bench/abuse: kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"bench/abuse ({out['accelerator']}): a neighbour's `exec true` throughout")
    idle = out["phases"].get("idle", {})
    for name, r in out["phases"].items():
        extra = {k: v for k, v in r.items() if not k.startswith("neighbour_")}
        ratio = ""
        if idle.get("neighbour_exec_ms_p50") and r.get("neighbour_exec_ms_p50"):
            ratio = f" ({r['neighbour_exec_ms_p50'] / idle['neighbour_exec_ms_p50']:.1f}x idle)"
        print(f"  {name:14s} neighbour exec p50/p99 {r.get('neighbour_exec_ms_p50')}/"
              f"{r.get('neighbour_exec_ms_p99')} ms{ratio}  {json.dumps(extra)}")


if __name__ == "__main__":
    main()
