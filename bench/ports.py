#!/usr/bin/python3
"""bench/ports.py - throughput of a sandbox's exposed port through the daemon
against the same server reached directly, in the same run.

Starts build/pandastackd on a temporary data dir, creates a sandbox, runs
tests/integration/port_server.py on a port of it (in the guest when its
network is up, else in the sandbox's network namespace on the host, bound to
10.0.2.15 added to that namespace's loopback), then moves SIZE MiB (default
50) three times each way:
  direct    a client inside the sandbox's network namespace, to 10.0.2.15:PORT
  proxied   a client on the host, through /v1/sandboxes/ID/ports/PORT/...
and prints MB/s for downloads (Content-Length and chunked) and uploads, the
ratio proxied/direct, and the daemon's RSS growth.

  python3 bench/ports.py [--size 50] [--template base] [--cache DIR] [--json]
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
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "integration" / "port_server.py"
PORT = 8000
MIB = 1024 * 1024

# A client run inside the namespace: METHOD PATH SIZE -> seconds on stdout.
DIRECT = r"""
import http.client, sys, time
method, path, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("10.0.2.15", %d, timeout=300)
t = time.monotonic()
if method == "GET":
    c.request("GET", path)
    r = c.getresponse()
    n = 0
    while True:
        b = r.read(1 << 20)
        if not b:
            break
        n += len(b)
    assert n == size, n
else:
    block = b"x" * (1 << 20)
    c.putrequest("PUT", path)
    c.putheader("Content-Length", str(size))
    c.endheaders()
    for _ in range(size >> 20):
        c.send(block)
    r = c.getresponse()
    r.read()
print(time.monotonic() - t)
""" % PORT


def start_daemon(cache, workdir):
    data = workdir / "data"
    log = open(workdir / "daemon.log", "wb")
    proc = subprocess.Popen(
        [os.environ.get("PANDASTACKD", str(ROOT / "build" / "pandastackd")),
         "--listen", "127.0.0.1:0", "--data-dir", str(data), "--cache", cache,
         "--pool-size", "0"], stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 120
    while time.time() < deadline:
        m = re.search(rb"event=http\.listening host=\S+ port=(\d+)",
                      (workdir / "daemon.log").read_bytes())
        if m:
            return proc, int(m.group(1)), (data / "admin.key").read_text().strip()
        if proc.poll() is not None:
            sys.exit("pandastackd exited:\n" + (workdir / "daemon.log").read_text())
        time.sleep(0.05)
    sys.exit("pandastackd did not start")


def call(port, key, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    h = {"Authorization": f"Bearer {key}", **(headers or {})}
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def proxied(port, key, base, method, path, size):
    """Seconds for one transfer of size bytes through the daemon."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t = time.monotonic()
    if method == "GET":
        c.request("GET", base + path, headers={"Authorization": f"Bearer {key}"})
        r = c.getresponse()
        n = 0
        while True:
            b = r.read(MIB)
            if not b:
                break
            n += len(b)
        assert n == size, n
    else:
        block = b"x" * MIB
        c.putrequest("PUT", base + path)
        c.putheader("Authorization", f"Bearer {key}")
        c.putheader("Content-Length", str(size))
        c.endheaders()
        for _ in range(size // MIB):
            c.send(block)
        r = c.getresponse()
        assert r.status == 200, r.read()
        r.read()
    c.close()
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=50, help="MiB per transfer")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--template", default="base")
    ap.add_argument("--cache", default=os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    size = a.size * MIB
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="bench-ports-"))
    proc, port, key = start_daemon(a.cache, workdir)
    server = None
    try:
        st, body = call(port, key, "POST", "/v1/sandboxes", {"template": a.template,
                                                             "ttl_seconds": 1800})
        assert st == 201, body
        sid = json.loads(body)["id"]
        qpid = (workdir / "data" / "sandboxes" / sid / "qemu.pid").read_text().strip()
        st, body = call(port, key, "POST", f"/v1/sandboxes/{sid}/exec",
                        {"cmd": "grep -q 10.0.2.15 /proc/net/fib_trie && echo up"})
        in_guest = json.loads(body)["stdout"] == "up\n"
        if in_guest:
            call(port, key, "PUT", f"/v1/sandboxes/{sid}/fs?path=/tmp/port_server.py",
                 SERVER.read_bytes())
            call(port, key, "POST", f"/v1/sandboxes/{sid}/exec",
                 {"cmd": f"nohup python3 /tmp/port_server.py {PORT} >/dev/null 2>&1 &"})
        else:
            subprocess.run(["nsenter", "-n", "-t", qpid, "ip", "addr", "replace", "10.0.2.15/32",
                            "dev", "lo"], check=True)
            server = subprocess.Popen(["nsenter", "-n", "-t", qpid, sys.executable, str(SERVER),
                                       str(PORT), "10.0.2.15"], stderr=subprocess.DEVNULL)
        base = f"/v1/sandboxes/{sid}/ports/{PORT}"
        deadline = time.time() + 60
        while call(port, key, "GET", base + "/echo")[0] != 200:
            if time.time() > deadline:
                sys.exit("the server did not come up")
            time.sleep(0.3)
        rss0 = rss_kib(proc.pid)
        figures = {"server": "guest" if in_guest else "namespace", "size_mib": a.size}
        for name, method, path in (("download", "GET", f"/bytes/{size}"),
                                   ("download_chunked", "GET", f"/chunked/{size}"),
                                   ("upload", "PUT", "/sha256")):
            direct = min(float(subprocess.run(
                ["nsenter", "-n", "-t", qpid, sys.executable, "-c", DIRECT, method, path,
                 str(size)], capture_output=True, text=True, check=True).stdout)
                for _ in range(a.rounds))
            via = min(proxied(port, key, base, method, path, size) for _ in range(a.rounds))
            figures[name] = {"direct_mb_s": round(size / direct / 1e6, 1),
                             "proxied_mb_s": round(size / via / 1e6, 1),
                             "ratio": round(direct / via, 2)}
        figures["daemon_rss_growth_kib"] = rss_kib(proc.pid) - rss0
        if a.json:
            print(json.dumps(figures))
        else:
            print(f"server in the {figures['server']}, {a.size} MiB per transfer, best of {a.rounds}")
            for name in ("download", "download_chunked", "upload"):
                f = figures[name]
                print(f"  {name:17s} direct {f['direct_mb_s']:8.1f} MB/s   proxied "
                      f"{f['proxied_mb_s']:8.1f} MB/s   proxied/direct {f['ratio']:.2f}")
            print(f"  daemon RSS growth: {figures['daemon_rss_growth_kib']} KiB")
    finally:
        if server:
            server.kill()
            server.wait()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        for pidfile in (workdir / "data").glob("**/qemu.pid"):
            try:
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
