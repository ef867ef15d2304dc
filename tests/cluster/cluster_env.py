"""Three hosts on one machine, for the cluster's tests and bench/cluster.py.

Each node is a network namespace of its own holding one etcd member and one
pandastackd; the namespaces are joined by veth pairs on a bridge that lives in
a fourth namespace, and the test process reaches them through one more veth
pair.  Addresses are 198.18.N.1-3 (the nodes) and 198.18.N.254 (the test),
with N random per run: RFC 2544's benchmarking range, and traffic never leaves
the namespaces made here.  Everything started is ended by close().

Node "c" gets a template cache of its own that holds the images but no
templates, so it must fetch them from the others by content hash.

Needs root, ip(8), etcd and etcdctl (Debian's etcd-server, etcd-client).
"""
import json
import os
import pathlib
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from conftest import DAEMON, Daemon, reap_vms  # noqa: E402

CACHE = os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack")
NAMES = ("a", "b", "c")


def sh(*args, check=True, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + [str(a) for a in args]
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


class Node(Daemon):
    """A pandastackd in its node's namespace, reached at its namespace address."""

    def __init__(self, name, ns, host, work, cache, etcd_urls, secret, ttl, extra=()):
        self.name, self.ns, self.host = name, ns, host
        args = ["--insecure-http", "--pool-size", "0",
                "--cluster", "etcd://" + ",".join(etcd_urls), "--node-name", name,
                "--advertise", f"http://{host}:8080", "--cluster-secret-file", str(secret),
                "--cluster-ttl", str(ttl)] + list(extra)
        super().__init__(work / f"node-{name}", extra_args=args, cache=str(cache),
                         listen=f"{host}:8080", wrap=["ip", "netns", "exec", ns])

    def url(self, path):
        return f"http://{self.host}:{self.port}{path}"

    def conn(self, timeout=120):
        import http.client
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def health(self, key):
        return self.request("GET", "/healthz", key=key, timeout=10).json()


class Cluster:
    def __init__(self, work, ttl=4, nodes=NAMES, c_own_cache=True):
        self.work = pathlib.Path(work)
        self.ttl = ttl
        self.tag = secrets.token_hex(2)
        self.net = random.randint(1, 250)
        self.names = list(nodes)
        self.sw = f"pds{self.tag}sw"
        self.ns = {n: f"pds{self.tag}{n}" for n in self.names}
        self.ip = {n: f"198.18.{self.net}.{i + 1}" for i, n in enumerate(self.names)}
        self.etcd = {}
        self.nodes = {}
        self.c_own_cache = c_own_cache
        self.secret = self.work / "cluster.secret"
        self.made_links = False

    # ---- the network ------------------------------------------------------
    def build_net(self):
        self.made_links = True
        sh("ip", "netns", "add", self.sw)
        sh("ip", "link", "add", "br0", "type", "bridge", ns=self.sw)
        sh("ip", "link", "set", "br0", "up", ns=self.sw)
        sh("ip", "link", "set", "lo", "up", ns=self.sw)
        for n in self.names:
            ns = self.ns[n]
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
            sh("ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name",
               f"v{n}", "netns", self.sw, ns=ns)
            sh("ip", "link", "set", f"v{n}", "master", "br0", ns=self.sw)
            sh("ip", "link", "set", f"v{n}", "up", ns=self.sw)
            sh("ip", "addr", "add", f"{self.ip[n]}/24", "dev", "eth0", ns=ns)
            sh("ip", "link", "set", "eth0", "up", ns=ns)
        # the test process's own way in
        host_if = f"pds{self.tag}h"
        sh("ip", "link", "add", host_if, "type", "veth", "peer", "name", "vh", "netns",
           self.sw)
        sh("ip", "link", "set", "vh", "master", "br0", ns=self.sw)
        sh("ip", "link", "set", "vh", "up", ns=self.sw)
        sh("ip", "addr", "add", f"198.18.{self.net}.254/24", "dev", host_if)
        sh("ip", "link", "set", host_if, "up")
        self.host_if = host_if

    def cut(self, n):
        """Take node n's link down (from inside its namespace)."""
        sh("ip", "link", "set", "eth0", "down", ns=self.ns[n])

    def heal(self, n):
        sh("ip", "link", "set", "eth0", "up", ns=self.ns[n])

    # ---- etcd ---------------------------------------------------------------
    def etcd_urls(self):
        return [f"{self.ip[n]}:2379" for n in self.names]

    def start_etcd(self, n, new=True):
        ip = self.ip[n]
        data = self.work / f"etcd-{n}"
        if new:
            shutil.rmtree(data, ignore_errors=True)
        members = ",".join(f"e{m}=http://{self.ip[m]}:2380" for m in self.names)
        log = open(self.work / f"etcd-{n}.log", "ab")
        self.etcd[n] = subprocess.Popen(
            ["ip", "netns", "exec", self.ns[n], "etcd", "--name", f"e{n}", "--data-dir",
             str(data), "--listen-client-urls", f"http://{ip}:2379",
             "--advertise-client-urls", f"http://{ip}:2379",
             "--listen-peer-urls", f"http://{ip}:2380",
             "--initial-advertise-peer-urls", f"http://{ip}:2380",
             "--initial-cluster", members, "--initial-cluster-state", "new",
             "--initial-cluster-token", f"pds-{self.tag}",
             "--heartbeat-interval", "100",
             "--election-timeout", str(int(self.ELECTION_S * 1000)),
             # a member back from a cut asks before it stands for election,
             # so it does not depose a working leader (docs/cluster.md)
             "--pre-vote"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()

    ELECTION_S = 1.0  # the members' --election-timeout, in seconds

    def etcd_leader(self):
        """The name of the node whose etcd member leads, or None when no
        member says (etcdctl endpoint status)."""
        r = self.etcdctl("endpoint", "status", "-w", "json")
        try:
            rows = json.loads(r.stdout)
        except ValueError:
            return None
        for row in rows if isinstance(rows, list) else []:
            st = row.get("Status") or {}
            if not st.get("leader") or (st.get("header") or {}).get("member_id") != st["leader"]:
                continue
            for n in self.names:
                if row.get("Endpoint", "").split("//")[-1] == f"{self.ip[n]}:2379":
                    return n
        return None

    def stop_etcd(self, n):
        p = self.etcd.pop(n, None)
        if p and p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def etcdctl(self, *args, ns=None):
        ns = ns or self.ns[self.names[0]]
        return sh("etcdctl", "--dial-timeout", "2s", "--command-timeout", "5s",
                  "--endpoints", ",".join(self.etcd_urls()), *args, ns=ns, check=False)

    def wait_etcd(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            r = self.etcdctl("endpoint", "health")
            if r.returncode == 0:
                return
            time.sleep(0.5)
        raise RuntimeError("etcd did not become healthy: " + r.stdout + r.stderr)

    def records(self, prefix="/pandastack/sandboxes/"):
        r = self.etcdctl("get", "--prefix", prefix, "-w", "json")
        kvs = json.loads(r.stdout).get("kvs", []) if r.returncode == 0 else []
        import base64
        return [json.loads(base64.b64decode(kv["value"])) for kv in kvs]

    # ---- the daemons ----------------------------------------------------------
    def cache_of(self, n):
        if n != "c" or not self.c_own_cache:
            return pathlib.Path(CACHE)
        own = self.work / "cache-c"
        (own / "templates").mkdir(parents=True, exist_ok=True)
        link = own / "images"
        if not link.exists():
            link.symlink_to(pathlib.Path(CACHE).resolve() / "images")
        return own

    def start_node(self, n, extra=()):
        node = Node(n, self.ns[n], self.ip[n], self.work, self.cache_of(n), self.etcd_urls(),
                    self.secret, self.ttl, extra)
        node.start()
        self.nodes[n] = node
        return node

    def kill_node(self, n, sig=signal.SIGKILL):
        node = self.nodes[n]
        node.stop(sig=sig)

    @property
    def key(self):
        return self.nodes[self.names[0]].admin_key

    def view(self, via):
        return {x["name"]: x for x in self.nodes[via].health(self.key)["cluster"]["nodes"]}

    def wait_view(self, via, want, template=None, timeout=120):
        """Until node via sees exactly the nodes want (each with template)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                v = self.view(via)
                if set(v) == set(want) and all(
                        template is None or template in v[n]["templates"] for n in want):
                    return v
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.25)
        raise RuntimeError(f"{via} does not see {want}: {v if 'v' in dir() else '?'}")

    # ---- all of it -----------------------------------------------------------------
    def start(self):
        self.work.mkdir(parents=True, exist_ok=True)
        self.secret.write_text(secrets.token_urlsafe(32) + "\n")
        self.secret.chmod(0o600)
        self.build_net()
        for n in self.names:
            self.start_etcd(n)
        self.wait_etcd()
        for n in self.names:  # one after the other: each sets up its jail's files
            self.start_node(n)
        return self

    def close(self):
        key = None
        try:
            key = self.key
        except Exception:  # noqa: BLE001
            pass
        for n, node in list(self.nodes.items()):
            if node.proc and node.proc.poll() is None and key:
                try:  # each node ends its own sandboxes
                    rows = node.request("GET", "/v1/sandboxes", key=key, timeout=10).json()
                    for s in rows.get("sandboxes", []):
                        node.request("DELETE", f"/v1/sandboxes/{s['id']}", key=key, timeout=30)
                except Exception:  # noqa: BLE001
                    pass
        for n, node in list(self.nodes.items()):
            try:
                node.stop()
            except Exception:  # noqa: BLE001
                node.proc.kill()
            reap_vms(node.data_dir)
        for n in list(self.etcd):
            self.stop_etcd(n)
        for ns in [self.sw] + [self.ns[n] for n in self.names]:
            sh("ip", "netns", "del", ns, check=False)
        if self.made_links:
            sh("ip", "link", "del", self.host_if, check=False)
