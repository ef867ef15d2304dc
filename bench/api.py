#!/usr/bin/python3
"""bench/api.py - load on the daemon's REST API.

N concurrent clients (default 50) run `exec` round-robin on M sandboxes
(default 10) for T seconds (default 60) while one more client times
`GET /v1/sandboxes` every 100 ms.  Prints errors (must be 0), exec
latency p50/p90/p99/max, exec throughput, and GET /v1/sandboxes p50/p99
under that load, plus the accelerator (exec latency under TCG is mostly
the guest's own fork/exec cost).

By default it starts build/pandastackd on a temporary data dir (the
template cache from --cache / PANDASTACK_CACHE); --url and --key use a
running daemon instead.

  python3 bench/api.py [--clients 50] [--sandboxes 10] [--seconds 60]
                       [--template code-interpreter] [--cmd 'echo ok']
                       [--url URL --key KEY] [--json]
"""
import argparse
import http.client
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parents[1]


class Client:
    """One keep-alive HTTP connection."""

    def __init__(self, url, key):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port or 80
        self.key = key
        self.conn = None

    def call(self, method, path, body=None, timeout=300):
        headers = {"Authorization": f"Bearer {self.key}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):
            reused = self.conn is not None
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            self.conn.timeout = timeout
            if self.conn.sock is not None:  # a kept-alive socket has its old timeout
                self.conn.sock.settimeout(timeout)
            try:
                self.conn.request(method, path, data, headers)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (OSError, http.client.HTTPException) as e:
                self.conn.close()
                self.conn = None
                # the daemon closes keep-alive connections idle past its
                # --idle-timeout: a reused one may be gone before the request
                stale = isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError,
                                       ConnectionResetError))
                if not (reused and stale and attempt == 0):
                    raise


def start_daemon(cache, workdir, sandboxes, pool_size=2):
    """build/pandastackd (or $PANDASTACKD) on workdir/data with the template
    cache, a pool of pool_size, room for sandboxes per team; its log in
    workdir/daemon.log.  Returns (process, url, admin key)."""
    data = workdir / "data"
    log = open(workdir / "daemon.log", "wb")
    proc = subprocess.Popen(
        [os.environ.get("PANDASTACKD", str(ROOT / "build" / "pandastackd")),
         "--listen", "127.0.0.1:0", "--data-dir", str(data),
         "--cache", cache, "--pool-size", str(pool_size),
         "--max-sandboxes-per-team", str(max(20, sandboxes))],
        stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 120
    while time.time() < deadline:
        m = re.search(rb"event=http\.listening host=\S+ port=(\d+)", (workdir / "daemon.log").read_bytes())
        if m:
            return proc, f"http://127.0.0.1:{int(m.group(1))}", (data / "admin.key").read_text().strip()
        if proc.poll() is not None:
            sys.exit("pandastackd exited:\n" + (workdir / "daemon.log").read_text())
        time.sleep(0.05)
    sys.exit("pandastackd did not start")


def cpu_seconds(pid):
    """utime + stime of a process, seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--sandboxes", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--template", default="code-interpreter")
    ap.add_argument("--cmd", default="echo ok")
    ap.add_argument("--cache", default=os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack"))
    ap.add_argument("--url")
    ap.add_argument("--key")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args()

    workdir = proc = None
    if a.url:
        url, key = a.url, a.key or os.environ.get("PANDASTACK_API_KEY")
    else:
        workdir = pathlib.Path(tempfile.mkdtemp(prefix="bench-api-"))
        proc, url, key = start_daemon(a.cache, workdir, a.sandboxes)
    admin = Client(url, key)
    ids = []
    try:
        health = json.loads(admin.call("GET", "/healthz")[1])
        t0 = time.time()
        for _ in range(a.sandboxes):
            st, body = admin.call("POST", "/v1/sandboxes", {"template": a.template, "ttl_seconds": 3600})
            if st != 201:
                sys.exit(f"create failed: {st} {body[:300]!r}")
            ids.append(json.loads(body)["id"])
        create_s = time.time() - t0

        stop = time.time() + a.seconds
        lock = threading.Lock()
        exec_ms, list_ms, errors = [], [], []

        def exec_worker(n):
            c = Client(url, key)
            i = n
            while time.time() < stop:
                sid = ids[i % len(ids)]
                i += 1
                t = time.perf_counter()
                try:
                    st, body = c.call("POST", f"/v1/sandboxes/{sid}/exec",
                                      {"cmd": a.cmd, "timeout_seconds": 60})
                    ok = st == 200 and json.loads(body)["exit_code"] == 0
                except Exception as e:  # noqa: BLE001 - every failure is counted
                    st, body, ok = 0, repr(e).encode(), False
                ms = (time.perf_counter() - t) * 1000
                with lock:
                    if ok:
                        exec_ms.append(ms)
                    else:
                        errors.append((st, body[:200]))

        def list_worker():
            c = Client(url, key)
            while time.time() < stop:
                t = time.perf_counter()
                try:
                    st, _ = c.call("GET", "/v1/sandboxes")
                    ok = st == 200
                except Exception as e:  # noqa: BLE001
                    st, ok = repr(e), False
                with lock:
                    if ok:
                        list_ms.append((time.perf_counter() - t) * 1000)
                    else:
                        errors.append((st, b"GET /v1/sandboxes"))
                time.sleep(0.1)

        threads = [threading.Thread(target=exec_worker, args=(n,)) for n in range(a.clients)]
        threads.append(threading.Thread(target=list_worker))
        cpu0 = cpu_seconds(proc.pid) if proc else None
        t0 = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.time() - t0
        cpu = cpu_seconds(proc.pid) - cpu0 if proc else None
        res = {
            "accelerator": health.get("accelerator"),
            "clients": a.clients, "sandboxes": a.sandboxes, "seconds": round(wall, 1),
            "cmd": a.cmd, "template": a.template,
            "create_10_s": round(create_s, 2),
            "errors": len(errors),
            "exec_count": len(exec_ms),
            "exec_per_s": round(len(exec_ms) / wall, 1),
            "exec_p50_ms": round(pct(exec_ms, 50), 1),
            "exec_p90_ms": round(pct(exec_ms, 90), 1),
            "exec_p99_ms": round(pct(exec_ms, 99), 1),
            "exec_max_ms": round(max(exec_ms), 1) if exec_ms else None,
            "list_count": len(list_ms),
            "list_p50_ms": round(pct(list_ms, 50), 2),
            "list_p99_ms": round(pct(list_ms, 99), 2),
            "daemon_cpu_s": round(cpu, 2) if cpu is not None else None,
            "daemon_cpu_ms_per_call": round(cpu * 1000 / max(1, len(exec_ms) + len(list_ms)), 3)
            if cpu is not None else None,
        }
        if a.json:
            print(json.dumps(res))
        else:
            print(f"bench/api: {a.clients} clients x exec {a.cmd!r} on {a.sandboxes} sandboxes "
                  f"({a.template}, {res['accelerator']}) for {res['seconds']} s")
            print(f"  errors               {res['errors']}")
            print(f"  exec                 {res['exec_count']} calls, {res['exec_per_s']}/s")
            print(f"  exec latency         p50 {res['exec_p50_ms']} ms  p90 {res['exec_p90_ms']} ms  "
                  f"p99 {res['exec_p99_ms']} ms  max {res['exec_max_ms']} ms")
            print(f"  GET /v1/sandboxes    p50 {res['list_p50_ms']} ms  p99 {res['list_p99_ms']} ms "
                  f"({res['list_count']} calls, under that load)")
            print(f"  {a.sandboxes} creates took {res['create_10_s']} s")
            if cpu is not None:
                print(f"  daemon CPU           {res['daemon_cpu_s']} s in all, "
                      f"{res['daemon_cpu_ms_per_call']} ms per call")
        for e in errors[:5]:
            print("  error:", e, file=sys.stderr)
        return 1 if errors else 0
    finally:
        for sid in ids:
            try:
                admin.call("DELETE", f"/v1/sandboxes/{sid}")
            except Exception:  # noqa: BLE001
                pass
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
