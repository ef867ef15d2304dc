#!/usr/bin/python3
"""bench/network.py - what the sandbox network costs: the time its NIC adds to
a create, and a download through the daemon's proxy against the same
download on the host.

It builds the tests' fake internet (tests/integration/fakenet.py: network
namespaces of its own, nothing leaves them), starts build/pandastackd
($PANDASTACKD) in its host namespace and creates one sandbox.  Figures,
each the median of --runs downloads of --mib MiB from the fake internet's
web server, timed by the downloading client itself (netclient.py):

  host    the daemon's namespace, straight to the server: the peer;
  proxy   the sandbox's network namespace through the daemon's proxy and
          its resolver (the daemon's own cost, no guest);
  guest   inside the guest, through its network card and the proxy (under
          TCG the emulated guest dominates).

Then the same 1-byte request, to show the latency a connection pays (the
median of --runs; each includes the client's own connect and request).

Create: --creates sandboxes made one after the other through the pool
(POST /v1/sandboxes, each deleted before the next once the pool is full
again).  What the NIC adds, from the daemon's debug log: its network slot
(namespace, tap, firewall, listeners: vm.restore_phases net_ms, made ahead
of time with the pooled VM, or on the path without a pool) and attaching
the sandbox to the proxy and resolver (net.attached us, on the path).

Needs root and a baked template.

  python3 bench/network.py [--template base] [--mib 64] [--runs 3] [--creates 10] [--json]
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
import fakenet  # noqa: E402

NETCLIENT = ROOT / "tests" / "integration" / "netclient.py"


class Api:
    def __init__(self, port, key):
        self.base, self.key = f"http://127.0.0.1:{port}", key

    def call(self, method, path, body=None, raw=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {self.key}"})
        with urllib.request.urlopen(req, timeout=300) as r:
            text = r.read()
        return json.loads(text) if text else None


def start_daemon(net, workdir, cache):
    binary = os.environ.get("PANDASTACKD", str(ROOT / "build" / "pandastackd"))
    log = workdir / "daemon.log"
    proc = subprocess.Popen(net.host.cmd("env", "PANDASTACK_LOG=debug", binary, "--listen",
                                         "127.0.0.1:0", "--data-dir", str(workdir / "data"),
                                         "--cache", cache, "--pool-size", "1",
                                         "--dns-upstream", fakenet.DNS_IP),
                            stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
    deadline = time.time() + 60
    while time.time() < deadline:
        m = re.search(r"event=http\.listening host=\S+ port=(\d+)", log.read_text())
        if m:
            key = (workdir / "data" / "admin.key").read_text().strip()
            relay = fakenet.Relay(net.host.path, ("127.0.0.1", int(m.group(1))))
            return proc, relay, Api(relay.port, key)
        if proc.poll() is not None:
            sys.exit(f"pandastackd exited:\n{log.read_text()}")
        time.sleep(0.05)
    sys.exit("pandastackd did not start")


def download(run, nbytes):
    """(MiB/s, seconds) of one download by netclient, run with run(args)."""
    r = run(["tcp", fakenet.WEB_IP, "80", "--host", "allowed.test", "--path", f"/bytes?n={nbytes}"])
    if r.get("error") or r.get("status") != 200 or r["bytes"] < nbytes:
        sys.exit(f"download failed: {r}")
    return r["bytes"] / r["seconds"] / (1 << 20), r["seconds"]


def log_values(text, event, key):
    """The numbers of key=NUMBER on the log lines of event."""
    out = []
    for line in text.splitlines():
        if f"event={event} " in line:
            m = re.search(rf" {key}=([0-9.]+)", line)
            if m:
                out.append(float(m.group(1)))
    return out


def creates(api, template, n):
    """n creates through the pool, one at a time: their API times, ms."""
    times = []
    for _ in range(n):
        deadline = time.time() + 300
        while time.time() < deadline:
            ts = api.call("GET", "/v1/templates")["templates"]
            if any(t["name"] == template and t["pool_ready"] >= 1 for t in ts):
                break
            time.sleep(0.2)
        t0 = time.perf_counter()
        sb = api.call("POST", "/v1/sandboxes", {"template": template})
        times.append((time.perf_counter() - t0) * 1000)
        api.call("DELETE", f"/v1/sandboxes/{sb['id']}")
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--template", default="base")
    ap.add_argument("--cache", default=os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack"))
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--creates", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/network.py needs root (network namespaces)")
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-network-"))
    net = fakenet.FakeInternet(work / "fakenet")
    proc = relay = None
    out = {"mib": a.mib, "runs": a.runs}
    try:
        net.start()
        proc, relay, api = start_daemon(net, work, a.cache)
        sb = api.call("POST", "/v1/sandboxes", {"template": a.template})
        sid = sb["id"]
        api.call("PUT", f"/v1/sandboxes/{sid}/fs?path=/tmp/netclient.py",
                 raw=NETCLIENT.read_bytes())
        pid = (work / "data" / "sandboxes" / sid / "qemu.pid").read_text().strip()
        sbx_ns = fakenet.SandboxNetns(pid)

        def in_host(args):
            p = subprocess.run(net.host.cmd(sys.executable, str(NETCLIENT), *args),
                               capture_output=True, text=True, check=True)
            return json.loads(p.stdout)

        def in_sandbox_ns(args):
            p = subprocess.run(sbx_ns.cmd(sys.executable, NETCLIENT, *args),
                               capture_output=True, text=True, check=True)
            return json.loads(p.stdout)

        def in_guest(args):
            r = api.call("POST", f"/v1/sandboxes/{sid}/exec",
                         {"cmd": "python3 /tmp/netclient.py " + " ".join(args),
                          "timeout_seconds": 600})
            return json.loads(r["stdout"].strip().splitlines()[-1])

        paths = [("host", in_host), ("proxy", in_sandbox_ns), ("guest", in_guest)]
        n = a.mib << 20
        for name, run in paths:
            mibs = [download(run, n)[0] for _ in range(a.runs)]
            lat = [download(run, 1)[1] * 1000 for _ in range(a.runs)]
            out[name] = {"mib_per_s": round(statistics.median(mibs), 1),
                         "small_request_ms": round(statistics.median(lat), 2)}
        for name, _ in paths[1:]:
            out[name]["vs_host"] = round(out[name]["mib_per_s"] / out["host"]["mib_per_s"], 2)
        api.call("DELETE", f"/v1/sandboxes/{sid}")
        ms = creates(api, a.template, a.creates)
        log = (work / "daemon.log").read_text(errors="replace")
        attach = [us / 1000 for us in log_values(log, "net.attached", "us")]
        slot = log_values(log, "vm.restore_phases", "net_ms")
        med = lambda v: round(statistics.median(v), 2) if v else None  # noqa: E731
        out["create"] = {"n": len(ms), "api_ms_p50": med(ms), "attach_ms_p50": med(attach),
                         "slot_ms_p50": med(slot)}
    finally:
        if proc:
            proc.terminate()
            proc.wait(60)
        if relay:
            relay.close()
        for pidfile in (work / "data").glob("**/qemu.pid"):  # our sandbox, if left
            try:
                os.kill(int(pidfile.read_text()), 9)
            except (OSError, ValueError):
                pass
        net.stop()
        shutil.rmtree(work, ignore_errors=True)
    if a.json:
        print(json.dumps(out))
        return
    c = out["create"]
    print(f"create through the pool, median of {c['n']}: {c['api_ms_p50']} ms through the API;"
          f" the NIC adds {c['attach_ms_p50']} ms on the path (attach to the proxy and"
          f" resolver), its slot {c['slot_ms_p50']} ms made ahead with the pooled VM")
    print(f"{a.mib} MiB downloads, median of {a.runs} (client-timed):")
    for name in ("host", "proxy", "guest"):
        v = out.get(name)
        if isinstance(v, dict):
            ratio = f"  ({v['vs_host']}x host)" if "vs_host" in v else ""
            print(f"  {name:6} {v['mib_per_s']:8.1f} MiB/s{ratio}   1-byte request "
                  f"{v['small_request_ms']} ms")
        elif v:
            print(f"  {name:6} {v}")


if __name__ == "__main__":
    main()
