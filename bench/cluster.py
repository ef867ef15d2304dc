#!/usr/bin/python3
"""bench/cluster.py - the cluster's costs (docs/cluster.md).

Starts etcd members and daemons in network namespaces of their own, as the
cluster's tests do (tests/cluster/cluster_env.py), and measures:
  1. exec of `true` on one sandbox, round trip, through its own node
     (local) and through another node (forwarded): p50 / p90 / max, ms;
  2. creates per second through node a, with C clients each creating and
     deleting sandboxes for T seconds, with 1 node and with 3 nodes.
All nodes share one machine: with 3 nodes on one host they share its
cores, so (2) shows what placement and forwarding cost, not what more
hosts would add.  Needs root, etcd and the template (PANDASTACK_CACHE).

  python3 bench/cluster.py [--template base] [--execs 100] [--clients 4]
                           [--seconds 60] [--json]
"""
import argparse
import json
import pathlib
import shutil
import statistics
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "cluster"))
from cluster_env import Cluster  # noqa: E402


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def create(node, key, template):
    r = node.request("POST", "/v1/sandboxes", {"template": template, "ttl_seconds": 600},
                     key=key, timeout=300)
    if r.status != 201:
        raise RuntimeError(f"create through {node.name}: {r.status} {r.body[:200]!r}")
    return r.json()["id"]


def exec_latency(cl, template, n):
    """Exec round trips on one sandbox, through its node and through another."""
    key, a = cl.key, cl.nodes["a"]
    sid = create(a, key, template)
    home = next(r["node"] for r in cl.records() if r["id"] == sid)
    other = next(x for x in cl.names if x != home)
    out = {"node": home, "via": other}
    for label, via in (("local", home), ("forwarded", other)):
        node, ms = cl.nodes[via], []
        for i in range(n + 3):
            t0 = time.perf_counter()
            r = node.request("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": "true"}, key=key)
            if r.status != 200:
                raise RuntimeError(f"exec through {via}: {r.status}")
            if i >= 3:  # the first calls open connections
                ms.append((time.perf_counter() - t0) * 1000)
        out[label] = {"p50_ms": round(statistics.median(ms), 1),
                      "p90_ms": round(pct(ms, 90), 1), "max_ms": round(max(ms), 1)}
    a.request("DELETE", f"/v1/sandboxes/{sid}", key=key)
    return out


def creates_per_second(cl, template, clients, seconds):
    """Clients create and delete sandboxes through node a for seconds."""
    key, a = cl.key, cl.nodes["a"]
    done, errors, where = [], [], {}
    before = {n: cl.nodes[n].log().count("event=sandbox.create ") for n in cl.names}
    stop = time.time() + seconds
    lock = threading.Lock()

    def loop():
        while time.time() < stop:
            try:
                t0 = time.perf_counter()
                sid = create(a, key, template)
                ms = (time.perf_counter() - t0) * 1000
                a.request("DELETE", f"/v1/sandboxes/{sid}", key=key, timeout=120)
                with lock:
                    done.append(ms)
            except Exception as e:  # noqa: BLE001 - counted, the run goes on
                with lock:
                    errors.append(str(e)[:200])

    t0 = time.time()
    threads = [threading.Thread(target=loop) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - t0
    for n in cl.names:  # creates each node served
        where[n] = cl.nodes[n].log().count("event=sandbox.create ") - before[n]
    return {"nodes": len(cl.names), "clients": clients, "creates": len(done),
            "per_second": round(len(done) / elapsed, 2),
            "create_p50_ms": round(statistics.median(done), 1) if done else None,
            "errors": len(errors), "first_error": errors[0] if errors else None,
            "served_by": where}


def with_cluster(names, fn):
    work = pathlib.Path(tempfile.mkdtemp(prefix="pandastack-bench-cluster-"))
    cl = Cluster(work, ttl=10, nodes=names, c_own_cache=False)
    try:
        cl.start()
        cl.wait_view("a", cl.names, template=ARGS.template, timeout=600)
        return fn(cl)
    finally:
        cl.close()
        shutil.rmtree(work, ignore_errors=True)


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--template", default="base")
    p.add_argument("--execs", type=int, default=100)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--seconds", type=int, default=60)
    p.add_argument("--json", action="store_true")
    ARGS = p.parse_args()
    res = {"template": ARGS.template}
    res["creates_1_node"] = with_cluster(
        ("a",), lambda cl: creates_per_second(cl, ARGS.template, ARGS.clients, ARGS.seconds))

    def three(cl):
        return {"exec": exec_latency(cl, ARGS.template, ARGS.execs),
                "creates": creates_per_second(cl, ARGS.template, ARGS.clients, ARGS.seconds)}

    r3 = with_cluster(("a", "b", "c"), three)
    res["exec"], res["creates_3_nodes"] = r3["exec"], r3["creates"]
    if ARGS.json:
        print(json.dumps(res, indent=2))
        return
    e = res["exec"]
    print(f"exec `true` on a sandbox of node {e['node']}, {ARGS.execs} calls each:")
    for label in ("local", "forwarded"):
        x = e[label]
        print(f"  {label:9s} p50 {x['p50_ms']} ms  p90 {x['p90_ms']} ms  max {x['max_ms']} ms")
    print(f"creates through node a, {ARGS.clients} clients creating and deleting for "
          f"{ARGS.seconds} s:")
    for k in ("creates_1_node", "creates_3_nodes"):
        x = res[k]
        print(f"  {x['nodes']} node(s): {x['per_second']} creates/s ({x['creates']} creates, "
              f"p50 {x['create_p50_ms']} ms, {x['errors']} errors), served by {x['served_by']}")


if __name__ == "__main__":
    main()
