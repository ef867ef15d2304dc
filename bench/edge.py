#!/usr/bin/python3
"""bench/edge.py - the API's edge: what a request costs at the door.

Starts build/pandastackd twice on temporary data dirs (no templates, no
pool): once over plain HTTP, once over HTTPS with a self-signed certificate.
Times N requests (default 500) of `GET /healthz` with a key:

  plain            plain HTTP: one request per connection (the daemon
                   answers Connection: close and checks each head itself)
  plain+slow       the same while another process holds 300 connections of
                   the same address that each send a header line every 8 s
  https keep-alive HTTPS, every request on one kept-alive connection
  https new conn   HTTPS, a new connection (TLS handshake) per request

and prints p50/p99/max in ms for each, with the ratio of each p50 to the
plain figure, and the failures (must be 0).

  python3 bench/edge.py [--requests 500] [--json]
"""
import argparse
import http.client
import json
import os
import pathlib
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DAEMON = pathlib.Path(os.environ.get("PANDASTACKD", ROOT / "build" / "pandastackd"))

SLOW = r"""
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
def one():
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    return s
socks = [one() for _ in range(n)]
print("open", flush=True)
while True:
    time.sleep(8)
    for i, s in enumerate(socks):
        try:
            s.sendall(b"X-Slow: 1\r\n")
        except OSError:
            s.close()
            try:
                socks[i] = one()
            except OSError:
                pass
"""


def start(root, name, tls=None):
    data, cache = root / name, root / f"{name}-cache"
    cache.mkdir(parents=True)
    args = [str(DAEMON), "--listen", "127.0.0.1:0", "--data-dir", str(data), "--cache",
            str(cache), "--pool-size", "0", "--accel", "tcg"]
    if tls:
        args += ["--tls-cert", tls[0], "--tls-key", tls[1]]
    log = open(root / f"{name}.log", "wb")
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(600):
        m = re.search(r"event=http\.listening host=\S+ port=(\d+)",
                      (root / f"{name}.log").read_text(errors="replace"))
        if m:
            return p, int(m.group(1)), (data / "admin.key").read_text().strip()
        time.sleep(0.05)
    p.kill()
    raise RuntimeError(f"{name}: the daemon did not start")


def timed(make_conn, key, n, reuse):
    """n GET /healthz; reuse: one connection for all.  Returns (ms list, failures)."""
    out, fails = [], 0
    conn = make_conn() if reuse else None
    for _ in range(n):
        c = conn or make_conn()
        t0 = time.perf_counter()
        try:
            c.request("GET", "/healthz", headers={"Authorization": f"Bearer {key}"})
            r = c.getresponse()
            r.read()
            if r.status != 200:
                fails += 1
            else:
                out.append((time.perf_counter() - t0) * 1000)
        except OSError:
            fails += 1
            if reuse:
                conn = make_conn()
        if not reuse:
            c.close()
    if conn:
        conn.close()
    return out, fails


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    root = pathlib.Path(tempfile.mkdtemp(prefix="bench-edge-"))
    procs = []
    try:
        cert, keyf = str(root / "c.pem"), str(root / "c.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", keyf, "-out", cert], check=True, capture_output=True)
        p, port, key = start(root, "plain")
        procs.append(p)
        tp, tport, tkey = start(root, "tls", (cert, keyf))
        procs.append(tp)
        ctx = ssl.create_default_context(cafile=cert)
        plain = lambda: http.client.HTTPConnection("127.0.0.1", port, timeout=10)  # noqa: E731
        https = lambda: http.client.HTTPSConnection("127.0.0.1", tport, timeout=10,  # noqa: E731
                                                    context=ctx)
        rows = {}
        timed(plain, key, 50, False)  # warm-up
        rows["plain"] = timed(plain, key, a.requests, False)
        slow = subprocess.Popen([sys.executable, "-c", SLOW, str(port), "300"],
                                stdout=subprocess.PIPE, text=True)
        procs.append(slow)
        slow.stdout.readline()
        rows["plain+slow"] = timed(plain, key, a.requests, False)
        slow.kill()
        rows["https keep-alive"] = timed(https, tkey, a.requests, True)
        rows["https new conn"] = timed(https, tkey, a.requests, False)
        base = pct(rows["plain"][0], 0.5)
        res = {name: {"p50_ms": round(pct(v, 0.5), 3), "p99_ms": round(pct(v, 0.99), 3),
                      "max_ms": round(max(v) if v else float("nan"), 3), "failures": f,
                      "ratio_p50_to_plain": round(pct(v, 0.5) / base, 2)}
               for name, (v, f) in rows.items()}
        if a.json:
            print(json.dumps(res, indent=2))
        else:
            print(f"{'path':<18} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'x plain':>8} fails")
            for name, r in res.items():
                print(f"{name:<18} {r['p50_ms']:>8.3f} {r['p99_ms']:>8.3f} {r['max_ms']:>8.3f} "
                      f"{r['ratio_p50_to_plain']:>8.2f} {r['failures']}")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
