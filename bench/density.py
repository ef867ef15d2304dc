#!/usr/bin/python3
"""bench/density.py - how many idle sandboxes one host holds, and what each
costs (make bench-density).

Starts build/pandastackd (PANDASTACKD overrides) on a temporary data dir,
creates N idle sandboxes of a template through the REST API (default
code-interpreter, N = 50; --n 50 100 200 runs each size in turn on a fresh
daemon), lets them settle, then prints one "name value unit" line per
figure:

  memavailable_drop_per_sandbox   fall of the host's MemAvailable / N
  qemu_pss / monitor_pss          mean PSS of a sandbox's QEMU and of its
                                  monitor process (smaps_rollup)
  qemu_anon                       mean anonymous memory of a QEMU: what it
                                  holds beyond the template's shared pages
  cgroup_memory                   mean memory charged to a sandbox's control
                                  group (memory.usage_in_bytes, cgroup v1)
  idle_cpu_per_sandbox            utime+stime of the N QEMUs over --idle-seconds,
                                  in % of one core per sandbox (QEMU is the only
                                  member of its sandbox's control group, so this
                                  is the group's CPU time too)
  idle_cpu_monitor / _daemon      the same for the monitor processes (per
                                  sandbox) and for the daemon (all of it)
  host_cpu_busy                   the whole host's busy share over the same
                                  window (other work on the machine included)
  create_n_plus_1                 create of one more sandbox while the N idle,
                                  and which path served it (restored_from)
  exec_true_p50/p99               `true` through POST .../exec on that sandbox
  guest_sh_true                   the guest's own cost of spawning /bin/sh -c true
                                  (measured inside it, same run): the exec floor
  list_p50/p99                    GET /v1/sandboxes (N+1 sandboxes), 200 calls

  python3 bench/density.py [--n 50 ...] [--template code-interpreter]
                           [--pool-size 0] [--idle-seconds 60] [--json]
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from api import Client, pct  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def start(cache, workdir, n, pool):
    import re
    import subprocess
    data = workdir / "data"
    log = open(workdir / "daemon.log", "wb")
    proc = subprocess.Popen(
        [os.environ.get("PANDASTACKD", str(ROOT / "build" / "pandastackd")),
         "--listen", "127.0.0.1:0", "--data-dir", str(data), "--cache", cache,
         "--pool-size", str(pool), "--max-sandboxes-per-team", str(n + 1),
         "--default-ttl", "7200"],
        stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 120
    while time.time() < deadline:
        m = re.search(rb"event=http\.listening host=\S+ port=(\d+)",
                      (workdir / "daemon.log").read_bytes())
        if m:
            return proc, Client(f"http://127.0.0.1:{int(m.group(1))}",
                                (data / "admin.key").read_text().strip())
        if proc.poll() is not None:
            sys.exit("pandastackd exited:\n" + (workdir / "daemon.log").read_text())
        time.sleep(0.05)
    sys.exit("pandastackd did not start")


def meminfo(key):
    for line in open("/proc/meminfo"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def smaps(pid, key):
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def ppid(pid):
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0


def ticks(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])
    except OSError:
        return 0


def cgroup_memory(pid):
    """Bytes charged to pid's memory control group (v1), or None."""
    try:
        for line in open(f"/proc/{pid}/cgroup"):
            _, ctl, path = line.rstrip("\n").split(":", 2)
            if "memory" in ctl.split(",") and path != "/":
                return int(open(f"/sys/fs/cgroup/memory{path}/memory.usage_in_bytes").read())
    except (OSError, ValueError):
        pass
    return None


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def host_busy():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = f[3] + f[4]
    return sum(f) - idle, sum(f)


def qemu_pids(data):
    pids = []
    for p in (data / "sandboxes").glob("*/qemu.pid"):
        try:
            pids.append(int(p.read_text()))
        except (OSError, ValueError):
            pass
    return pids


def timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return (time.perf_counter() - t0) * 1000.0, r


def create(c, template):
    ms, (st, body) = timed(lambda: c.call("POST", "/v1/sandboxes",
                                          {"template": template, "ttl_seconds": 7200}))
    if st != 201:
        sys.exit(f"create answered {st}: {body[:300]!r}")
    o = json.loads(body)
    return ms, o["id"], o.get("restored_from")


def execute(c, sid, cmd):
    ms, (st, body) = timed(lambda: c.call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": cmd}))
    if st != 200:
        sys.exit(f"exec answered {st}: {body[:300]!r}")
    o = json.loads(body)
    if o["exit_code"] != 0:
        sys.exit(f"exec failed: {o}")
    return ms, o["stdout"]


GUEST_FLOOR = ("t0=$(date +%s%N); i=0; while [ $i -lt 50 ]; do /bin/sh -c true; i=$((i+1)); "
               "done; t1=$(date +%s%N); echo $(( (t1 - t0) / 50000 ))")


def one_size(n, args, out):
    work = pathlib.Path(tempfile.mkdtemp(prefix="pandastack-density-"))
    proc, c = start(args.cache, work, n, args.pool_size)
    data = work / "data"
    fig = {"n": n}
    ids = []
    try:
        time.sleep(3)
        fig["loadavg_before"] = loadavg()
        avail0 = meminfo("MemAvailable")
        create_ms = []
        for i in range(n):
            ms, sid, _ = create(c, args.template)
            ids.append(sid)
            create_ms.append(ms)
        time.sleep(args.settle)
        avail1 = meminfo("MemAvailable")
        pids = qemu_pids(data)
        fig["memavailable_drop_per_sandbox_mib"] = (avail0 - avail1) / n / 1024
        fig["qemu_pss_mib"] = sum(smaps(p, "Pss") for p in pids) / len(pids) / 1024
        fig["qemu_rss_mib"] = sum(smaps(p, "Rss") for p in pids) / len(pids) / 1024
        fig["qemu_anon_mib"] = sum(smaps(p, "Anonymous") for p in pids) / len(pids) / 1024
        fig["monitor_pss_mib"] = sum(smaps(ppid(p), "Pss") for p in pids) / len(pids) / 1024
        cg = [m for m in (cgroup_memory(p) for p in pids) if m is not None]
        if cg:
            fig["cgroup_memory_mib"] = sum(cg) / len(cg) / 2**20
        fig["create_p50_ms"] = pct(create_ms, 50)
        fig["create_p99_ms"] = pct(create_ms, 99)
        mons = [ppid(p) for p in pids]
        t0 = sum(ticks(p) for p in pids)
        m0 = sum(ticks(p) for p in mons)
        d0 = ticks(proc.pid)
        b0, a0 = host_busy()
        w0 = time.time()
        time.sleep(args.idle_seconds)
        t1 = sum(ticks(p) for p in pids)
        m1 = sum(ticks(p) for p in mons)
        d1 = ticks(proc.pid)
        b1, a1 = host_busy()
        secs = time.time() - w0
        hz = os.sysconf("SC_CLK_TCK")
        fig["idle_cpu_per_sandbox_pct"] = 100.0 * (t1 - t0) / hz / secs / len(pids)
        fig["idle_cpu_monitor_per_sandbox_pct"] = 100.0 * (m1 - m0) / hz / secs / len(pids)
        fig["idle_cpu_daemon_pct"] = 100.0 * (d1 - d0) / hz / secs
        fig["host_cpu_busy_pct"] = 100.0 * (b1 - b0) / max(1, a1 - a0)
        fig["loadavg"] = loadavg()
        # the N+1st sandbox while the others idle
        ms, sid, src = create(c, args.template)
        ids.append(sid)
        fig["create_n_plus_1_ms"] = ms
        fig["create_n_plus_1_restored_from"] = src
        ex = [execute(c, sid, "true")[0] for _ in range(30)]
        fig["exec_true_first_ms"] = ex[0]
        fig["exec_true_p50_ms"] = pct(ex[1:], 50)
        fig["exec_true_p99_ms"] = pct(ex[1:], 99)
        floor = [int(execute(c, sid, GUEST_FLOOR)[1]) / 1000.0 for _ in range(3)]
        fig["guest_sh_true_ms"] = sorted(floor)[1]
        lst = []
        for _ in range(200):
            ms, (st, _) = timed(lambda: c.call("GET", "/v1/sandboxes"))
            if st != 200:
                sys.exit(f"list answered {st}")
            lst.append(ms)
        fig["list_p50_ms"] = pct(lst, 50)
        fig["list_p99_ms"] = pct(lst, 99)
        fig["loadavg_after"] = loadavg()
    except BaseException:
        log = (work / "daemon.log").read_text(errors="replace").splitlines()
        sys.stderr.write(f"after {len(ids)} creates; the daemon's last log lines:\n")
        sys.stderr.write("\n".join(log[-25:]) + "\n")
        raise
    finally:
        for sid in ids:  # every sandbox ends, whatever failed
            try:
                c.call("DELETE", f"/v1/sandboxes/{sid}", timeout=120)
            except Exception:
                pass
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except Exception:
            proc.kill()
        for p in qemu_pids(data):
            try:
                if str(data).encode() in open(f"/proc/{p}/cmdline", "rb").read():
                    os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(work, ignore_errors=True)
    out.append(fig)
    if args.json:
        return
    print(f"density n={n} template={args.template} pool_size={args.pool_size} "
          f"load_avg={fig['loadavg_before']} (before) {fig['loadavg_after']} (after)")
    for k, v in fig.items():
        if k not in ("n", "loadavg_before", "loadavg_after"):
            print(f"  {k} {v:.2f}" if isinstance(v, float) else f"  {k} {v}")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[50])
    ap.add_argument("--template", default="code-interpreter")
    ap.add_argument("--pool-size", type=int, default=0)
    ap.add_argument("--idle-seconds", type=float, default=60)
    ap.add_argument("--settle", type=float, default=20)
    ap.add_argument("--cache", default=os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = []
    for n in args.n:
        one_size(n, args, out)
    if args.json:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
