"""Three hosts on one machine, for the cluster's tests and bench/cluster.py.

Each node is a network namespace of its own holding one etcd member and one
pandastackd; the namespaces are joined by veth pairs on a bridge that lives in
a fourth namespace, and the test process reaches them through one more veth
pair.  Addresses are 198.18.N.1-3 (the nodes) and 198.18.N.254 (the test),
with N random per run: RFC 2544's benchmarking range, and traffic never leaves
the namespaces made here.  Everything started is ended by close().

Node "c" gets a template cache of its own that holds the images but no
templates, so it must fetch them from the others by content hash.

etcd runs as docs/cluster.md says it should: TLS on its client URLs with
client certificates required (--client-cert-auth), and authentication on,
the daemons logging in as a user whose role may read and write under
/pandastack/ only.  The certificates are made here with openssl(1): a CA,
one server certificate per member (its address as subject alternative
name, for serving and for the gateway's own calls to its member) and one
client certificate without a Common Name (etcd's JSON gateway refuses one
with a CN).  Each member's metrics are served on plain
HTTP at :2381 (etcd_mvcc_range_total counts its reads).

Needs root, ip(8), openssl, etcd and etcdctl (Debian's etcd-server,
etcd-client).
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


class Pki:
    """A CA and the certificates etcd and the daemons use, in folder."""

    def __init__(self, folder, member_ips):
        self.dir = pathlib.Path(folder)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca, ca_key = self.dir / "ca.pem", self.dir / "ca.key"
        self.ssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                  "-nodes", "-days", "2", "-subj", "/O=pandastack test CA", "-keyout", ca_key,
                  "-out", self.ca])
        # clientAuth too: with --client-cert-auth, etcd's JSON gateway dials
        # its own gRPC server with the member's certificate
        self.member = {ip: self.issue(f"etcd-{ip}", "/O=pandastack test/CN=etcd",
                                      f"subjectAltName=IP:{ip}\n"
                                      "extendedKeyUsage=serverAuth,clientAuth")
                       for ip in member_ips}
        # no CN: etcd's gateway refuses a client certificate that has one
        self.client = self.issue("client", "/O=pandastack test",
                                 "extendedKeyUsage=clientAuth")
        # another CA's certificate: one etcd does not trust
        other = self.dir / "other"
        other.mkdir(exist_ok=True)
        self.ssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                  "-nodes", "-days", "2", "-subj", "/O=elsewhere", "-keyout",
                  other / "key.pem", "-out", other / "cert.pem"])
        (other / "key.pem").chmod(0o600)
        self.untrusted = (other / "cert.pem", other / "key.pem")

    def ssl(self, args):
        subprocess.run(["openssl"] + [str(a) for a in args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def issue(self, name, subject, ext):
        key, csr, cert = (self.dir / f"{name}.{x}" for x in ("key", "csr", "pem"))
        extfile = self.dir / f"{name}.ext"
        extfile.write_text(ext + "\n")
        self.ssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                  "-subj", subject, "-keyout", key, "-out", csr])
        self.ssl(["x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.dir / "ca.key",
                  "-CAcreateserial", "-days", "2", "-extfile", extfile, "-out", cert])
        key.chmod(0o600)
        return cert, key


ETCD_USER = "pandastack"
ETCD_ROLE = "pandastack"


class Node(Daemon):
    """A pandastackd in its node's namespace, reached at its namespace address."""

    def __init__(self, name, ns, host, work, cache, etcd_urls, secret, ttl, extra=(),
                 etcd_args=()):
        self.name, self.ns, self.host = name, ns, host
        args = ["--insecure-http", "--pool-size", "0",
                "--cluster", ",".join(etcd_urls), "--node-name", name,
                "--advertise", f"http://{host}:8080", "--cluster-secret-file", str(secret),
                "--cluster-ttl", str(ttl)] + list(etcd_args) + list(extra)
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
        self.pki = None
        self.auth_on = False
        self.root_pw = secrets.token_hex(12)
        self.password_file = self.work / "etcd.password"

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
        return [f"https://{self.ip[n]}:2379" for n in self.names]

    def etcd_args(self, cert=True, password=True):
        """The daemon's flags for etcd: its CA, client certificate, user."""
        args = ["--cluster-ca-file", str(self.pki.ca)]
        if cert:
            args += ["--cluster-etcd-cert", str(self.pki.client[0]),
                     "--cluster-etcd-key", str(self.pki.client[1])]
        if password:
            args += ["--cluster-etcd-user", ETCD_USER,
                     "--cluster-etcd-password-file", str(self.password_file)]
        return args

    def start_etcd(self, n, new=True):
        ip = self.ip[n]
        data = self.work / f"etcd-{n}"
        if new:
            shutil.rmtree(data, ignore_errors=True)
        members = ",".join(f"e{m}=http://{self.ip[m]}:2380" for m in self.names)
        log = open(self.work / f"etcd-{n}.log", "ab")
        cert, key = self.pki.member[ip]
        self.etcd[n] = subprocess.Popen(
            ["ip", "netns", "exec", self.ns[n], "etcd", "--name", f"e{n}", "--data-dir",
             str(data), "--listen-client-urls", f"https://{ip}:2379",
             "--advertise-client-urls", f"https://{ip}:2379",
             "--cert-file", str(cert), "--key-file", str(key),
             "--trusted-ca-file", str(self.pki.ca), "--client-cert-auth",
             "--listen-metrics-urls", f"http://{ip}:2381",
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
        """etcdctl as root (once authentication is on), over TLS."""
        ns = ns or self.ns[self.names[0]]
        auth = ["--user", f"root:{self.root_pw}"] if self.auth_on else []
        return sh("etcdctl", "--dial-timeout", "2s", "--command-timeout", "5s",
                  "--endpoints", ",".join(self.etcd_urls()), "--cacert", self.pki.ca,
                  "--cert", self.pki.client[0], "--key", self.pki.client[1], *auth, *args,
                  ns=ns, check=False)

    def setup_auth(self):
        """etcd's users and roles as docs/cluster.md shows them, then auth on."""
        pw = secrets.token_hex(16)
        self.password_file.write_text(pw + "\n")
        self.password_file.chmod(0o600)
        steps = [("user", "add", "root", "--new-user-password", self.root_pw),
                 ("user", "grant-role", "root", "root"),
                 ("role", "add", ETCD_ROLE),
                 ("role", "grant-permission", ETCD_ROLE, "--prefix=true", "readwrite",
                  "/pandastack/"),
                 ("user", "add", ETCD_USER, "--new-user-password", pw),
                 ("user", "grant-role", ETCD_USER, ETCD_ROLE),
                 ("auth", "enable")]
        for step in steps:
            r = self.etcdctl(*step)
            if r.returncode != 0:
                raise RuntimeError(f"etcdctl {step[:2]}: {r.stdout}{r.stderr}")
        self.auth_on = True

    def etcd_reads(self):
        """Reads (ranges) served by the members so far, summed over those that
        answer (etcd_mvcc_range_total of each member's metrics)."""
        total = 0
        for n in self.names:
            if n not in self.etcd:
                continue
            try:
                with urllib.request.urlopen(f"http://{self.ip[n]}:2381/metrics",
                                            timeout=5) as r:
                    text = r.read().decode()
            except OSError:
                continue
            m = re.search(r"^etcd_mvcc_range_total (\d+)", text, re.M)
            total += int(m.group(1)) if m else 0
        return total

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
                    self.secret, self.ttl, extra, self.etcd_args())
        node.start()
        self.nodes[n] = node
        return node

    def try_node(self, n, name, etcd_args, timeout=60):
        """Start a daemon that joins as node name in n's namespace with these
        etcd flags, expecting it to refuse to start: its exit code and log."""
        node = Node(name, self.ns[n], self.ip[n], self.work, self.cache_of(n),
                    self.etcd_urls(), self.secret, self.ttl, ["--listen", f"{self.ip[n]}:0"],
                    etcd_args)
        node.listen = f"{self.ip[n]}:0"
        try:
            node.start(timeout=timeout)
        except RuntimeError:
            return node.proc.returncode, node.log()
        node.stop()
        raise AssertionError(f"node {name} started with etcd flags {etcd_args}")

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
        self.pki = Pki(self.work / "pki", [self.ip[n] for n in self.names])
        self.build_net()
        for n in self.names:
            self.start_etcd(n)
        self.wait_etcd()
        self.setup_auth()
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
