"""fakenet.py - a fake internet in network namespaces, for the tests of
sandbox networking (test_network.py, the pip tests).

Nothing a test does here can reach a real network: the daemon under test runs
in a namespace of the test's own ("host"), whose only link is a veth pair to
a second namespace ("internet") holding every server and decoy.  Every
address below is one the harness creates; the "private" and "metadata"
decoys are ours, never real ones.

    host namespace (the daemon)              internet namespace
      lo   127.0.0.1  decoy :LOOP_PORT          lo  198.51.100.53  DNS (zone ZONE)
      veth 198.51.100.1/24  decoy :LOOP_PORT        203.0.113.10   web: HTTP :80, TLS :443
           default via 198.51.100.2                 203.0.113.20   other web: HTTP :80, TLS :443
                                                     10.99.0.10     decoy (private range) :80
                                                     169.254.169.254 decoy (metadata) :80
                                                     198.51.100.2   decoy (the host's network) :80
                                                veth 198.51.100.2/24

Every server writes one JSON line per accepted connection ("event":
"accept") and per request ("event": "request", with "host", "path", and
"sni" for TLS) to a log the test reads (FakeInternet.log).  The web servers
answer "fakenet LABEL HOST" for /, hold /hold open until the client leaves,
send N bytes for /bytes?n=N, and serve files from FakeInternet.web_root (a
PEP 503 index: write_index, build_wheel).

Run as a program, this file is the servers: `fakenet.py serve CONFIG`.
Needs root (ip netns).
"""
import base64
import ctypes
import hashlib
import http.server
import json
import os
import pathlib
import random
import shutil
import signal
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import threading
import time
import zipfile

HOST_IP = "198.51.100.1"
GW_IP = "198.51.100.2"
DNS_IP = "198.51.100.53"
WEB_IP = "203.0.113.10"
OTHER_IP = "203.0.113.20"
PRIVATE_IP = "10.99.0.10"
META_IP = "169.254.169.254"
LOOP_PORT = 8099  # decoys on the host namespace's loopback and own address

ZONE = {
    "allowed.test": [WEB_IP],
    "index.test": [WEB_IP],
    "other.test": [OTHER_IP],
    "private.test": [PRIVATE_IP],
    "meta.test": [META_IP],
    "loop.test": ["127.0.0.1"],
    "mixed.test": [PRIVATE_IP, OTHER_IP],
}

CLONE_NEWNET = 0x40000000


def sh(*cmd, check=True, **kw):
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True, **kw)


class Netns:
    """A network namespace made with `ip netns add` (removed by delete())."""

    def __init__(self, name):
        self.name = name
        self.path = f"/run/netns/{name}"
        sh("ip", "netns", "add", name)
        self.ip("link", "set", "lo", "up")

    def ip(self, *args):
        return sh("ip", "-n", self.name, *args)

    def cmd(self, *args):
        """The command line that runs args inside this namespace."""
        return ["ip", "netns", "exec", self.name, *args]

    def run(self, *args, **kw):
        return subprocess.run(self.cmd(*args), capture_output=True, text=True, **kw)

    def socket(self, family=socket.AF_INET, type_=socket.SOCK_STREAM):
        return socket_in(self.path, family, type_)

    def delete(self):
        sh("ip", "netns", "del", self.name, check=False)


_libc = ctypes.CDLL(None, use_errno=True)


def socket_in(ns_path, family=socket.AF_INET, type_=socket.SOCK_STREAM):
    """A socket made inside the network namespace at ns_path (a socket keeps
    its namespace; setns(2) changes only the thread that calls it)."""
    out = {}

    def make():
        try:
            fd = os.open(ns_path, os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {ns_path}")
            finally:
                os.close(fd)
            out["sock"] = socket.socket(family, type_)
        except Exception as e:  # reported in the caller's thread
            out["error"] = e

    t = threading.Thread(target=make)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["sock"]


def connect_in(ns_path, addr, timeout=10):
    s = socket_in(ns_path)
    s.settimeout(timeout)
    s.connect(addr)
    return s


class Relay:
    """TCP 127.0.0.1:port in the caller's namespace -> addr inside ns_path:
    how the test reaches the daemon's API without linking namespaces."""

    def __init__(self, ns_path, addr):
        self.ns_path, self.addr = ns_path, addr
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            try:
                u = connect_in(self.ns_path, self.addr)
            except OSError:
                c.close()
                continue
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a, b):
        a.settimeout(None)
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self):
        self.closed = True
        self.lsock.close()


class FakeInternet:
    """The two namespaces, their servers and logs.  start() / stop()."""

    def __init__(self, workdir):
        self.dir = pathlib.Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.web_root = self.dir / "www"
        self.web_root.mkdir(exist_ok=True)
        tag = f"{os.getpid() % 100000}{random.randrange(100)}"
        self.host = self.inet = None
        self.tag = tag
        self.procs = []

    # ---- set-up ----------------------------------------------------------
    def start(self):
        self.host = Netns(f"psfn-host-{self.tag}")
        self.inet = Netns(f"psfn-inet-{self.tag}")
        vh, vi = f"pfh{self.tag}", f"pfi{self.tag}"
        sh("ip", "link", "add", vh, "netns", self.host.name, "type", "veth", "peer", "name", vi,
           "netns", self.inet.name)
        self.host.ip("addr", "add", f"{HOST_IP}/24", "dev", vh)
        self.host.ip("link", "set", vh, "up")
        self.host.ip("route", "add", "default", "via", GW_IP)
        self.inet.ip("addr", "add", f"{GW_IP}/24", "dev", vi)
        self.inet.ip("link", "set", vi, "up")
        for a in (DNS_IP, WEB_IP, OTHER_IP, PRIVATE_IP, META_IP):
            self.inet.ip("addr", "add", f"{a}/32", "dev", "lo")
        self._cert()
        inet = {
            "log": str(self.dir / "inet.log"),
            "dns": {"addr": DNS_IP, "zone": ZONE},
            "listeners": [
                {"label": "web", "addr": WEB_IP, "port": 80},
                {"label": "web", "addr": WEB_IP, "port": 443, "tls": True},
                {"label": "other", "addr": OTHER_IP, "port": 80},
                {"label": "other", "addr": OTHER_IP, "port": 443, "tls": True},
                {"label": "decoy-private", "addr": PRIVATE_IP, "port": 80},
                {"label": "decoy-metadata", "addr": META_IP, "port": 80},
                {"label": "decoy-neighbour", "addr": GW_IP, "port": 80},
            ],
            "root": str(self.web_root),
            "cert": str(self.dir / "cert.pem"),
            "key": str(self.dir / "key.pem"),
        }
        host = {
            "log": str(self.dir / "host.log"),
            "listeners": [
                {"label": "decoy-loopback", "addr": "127.0.0.1", "port": LOOP_PORT},
                {"label": "decoy-host", "addr": HOST_IP, "port": LOOP_PORT},
            ],
            "root": str(self.web_root),
        }
        for ns, cfg in ((self.inet, inet), (self.host, host)):
            path = self.dir / f"{ns.name}.json"
            path.write_text(json.dumps(cfg))
            out = open(self.dir / f"{ns.name}.out", "ab")
            p = subprocess.Popen(ns.cmd(sys.executable, __file__, "serve", str(path)),
                                 stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            out.close()
            self.procs.append(p)
        self._wait_ready()
        return self

    def _cert(self):
        sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
           "-subj", "/CN=allowed.test", "-keyout", str(self.dir / "key.pem"),
           "-out", str(self.dir / "cert.pem"))

    def _wait_ready(self, timeout=20):
        deadline = time.time() + timeout
        for log in ("inet.log", "host.log"):
            while not any(e.get("event") == "ready" for e in self._read(log)):
                for p in self.procs:
                    if p.poll() is not None:
                        raise RuntimeError(f"a fakenet server exited {p.returncode}")
                if time.time() > deadline:
                    raise RuntimeError("the fakenet servers did not start")
                time.sleep(0.05)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        for ns in (self.host, self.inet):
            if ns:
                ns.delete()

    # ---- logs --------------------------------------------------------------
    def _read(self, name):
        path = self.dir / name
        if not path.exists():
            return []
        out = []
        for line in path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def log(self, label=None, event=None):
        """Log entries of every server (or those of `label`), oldest first."""
        es = self._read("inet.log") + self._read("host.log")
        return [e for e in es if (label is None or e.get("server") == label)
                and (event is None or e.get("event") == event)]

    def count(self, label, event="accept"):
        return len(self.log(label, event))

    # ---- the daemon's side -----------------------------------------------------
    def host_connect(self, addr, timeout=5):
        """A TCP connection made from the daemon's namespace (positive
        controls: what the daemon itself can reach)."""
        return connect_in(self.host.path, addr, timeout)

    def host_http(self, addr, path="/", host="control", timeout=5):
        """GET path from the daemon's namespace; (status, body)."""
        s = self.host_connect(addr, timeout)
        try:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                d = s.recv(65536)
                if not d:
                    break
                data += d
        finally:
            s.close()
        head, _, body = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else None
        return status, body.decode(errors="replace")


class SandboxNetns:
    """Programs run inside a sandbox's network namespace, as if from its
    guest: locally made TCP connections and DNS queries are redirected to
    the daemon's proxy and resolver listeners there, as the guest's are.
    For measuring the daemon's side alone (bench/network.py)."""

    RULES = """
table ip fakenet_inject {
  chain out {
    type nat hook output priority -100; policy accept;
    meta l4proto { tcp, udp } th dport 53 redirect to :53
    ip daddr != 127.0.0.0/8 meta l4proto tcp redirect to :3128
  }
}
"""

    def __init__(self, qemu_pid):
        self.prefix = ["nsenter", f"--net=/proc/{qemu_pid}/ns/net"]
        subprocess.run(self.prefix + ["nft", "-f", "-"], input=self.RULES, text=True,
                       check=True, capture_output=True)
        # a route, so that connect() gets as far as the redirect
        subprocess.run(self.prefix + ["ip", "route", "add", "default", "dev", "tap0"],
                       check=True, capture_output=True)

    def cmd(self, *args):
        return self.prefix + [str(a) for a in args]


# ---- a PEP 503 index -----------------------------------------------------------

def build_wheel(out_dir, name, version, module_source):
    """A pure-Python wheel of one module NAME (PEP 427) with a correct
    RECORD, written to out_dir; returns its path."""
    dist = name.replace("-", "_")
    files = {
        f"{dist}.py": module_source.encode(),
        f"{dist}-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}-{version}.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: fakenet\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}-{version}.dist-info/RECORD,,")
    files[f"{dist}-{version}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    path = pathlib.Path(out_dir) / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, data in files.items():
            z.writestr(p, data)
    return path


def write_index(root, name, wheel):
    """root/simple/NAME/index.html linking wheel (copied next to it) with
    its #sha256= (PEP 503), and root/simple/index.html."""
    norm = name.lower().replace("_", "-")
    d = pathlib.Path(root) / "simple" / norm
    d.mkdir(parents=True, exist_ok=True)
    wheel = pathlib.Path(wheel)
    shutil.copy(wheel, d / wheel.name)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (d / "index.html").write_text(
        f'<!DOCTYPE html><html><body><a href="{wheel.name}#sha256={digest}">{wheel.name}</a>'
        "</body></html>\n")
    top = pathlib.Path(root) / "simple" / "index.html"
    names = sorted(p.name for p in top.parent.iterdir() if p.is_dir())
    top.write_text("<!DOCTYPE html><html><body>" +
                   "".join(f'<a href="{n}/">{n}</a>' for n in names) + "</body></html>\n")


# ---- the servers (run inside a namespace: `fakenet.py serve CONFIG`) -----------------

class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def write(self, **e):
        e["t"] = time.time()
        with self.lock:
            self.f.write(json.dumps(e) + "\n")


def serve_dns(log, addr, zone):
    """A zone of A records over UDP and TCP: AAAA empty, others NXDOMAIN."""

    def answer(q):
        if len(q) < 12:
            return None
        qid, flags = struct.unpack(">HH", q[:4])
        at, labels = 12, []
        while at < len(q) and q[at]:
            labels.append(q[at + 1:at + 1 + q[at]].decode(errors="replace"))
            at += 1 + q[at]
        qtype = struct.unpack(">H", q[at + 1:at + 3])[0] if at + 3 <= len(q) else 0
        question = q[12:at + 5]
        name = ".".join(labels).lower()
        log.write(server="dns", event="query", name=name, qtype=qtype)
        addrs = zone.get(name)
        rcode = 0 if addrs is not None else 3
        answers = b""
        if addrs and qtype == 1:
            for a in addrs:
                answers += struct.pack(">HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(a)
        n = len(addrs) if addrs and qtype == 1 else 0
        return struct.pack(">HHHHHH", qid, 0x8180 | (flags & 0x0100) | rcode, 1, n, 0, 0) + \
            question + answers

    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((addr, 53))
    tcp = socket.socket()
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind((addr, 53))
    tcp.listen(16)

    def udp_loop():
        while True:
            q, peer = udp.recvfrom(4096)
            a = answer(q)
            if a:
                udp.sendto(a, peer)

    def tcp_conn(c):
        with c:
            c.settimeout(10)
            try:
                while True:
                    n = c.recv(2)
                    if len(n) < 2:
                        return
                    q = c.recv(struct.unpack(">H", n)[0], socket.MSG_WAITALL)
                    a = answer(q)
                    if a:
                        c.sendall(struct.pack(">H", len(a)) + a)
            except OSError:
                return

    def tcp_loop():
        while True:
            c, _ = tcp.accept()
            threading.Thread(target=tcp_conn, args=(c,), daemon=True).start()

    for f in (udp_loop, tcp_loop):
        threading.Thread(target=f, daemon=True).start()


def make_web(log, label, root, tls_ctx):
    sni_of = {}

    class Handler(http.server.SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def __init__(self, *a, **kw):
            super().__init__(*a, directory=root, **kw)

        def setup(self):
            self.request.settimeout(30)
            if tls_ctx:
                self.request = tls_ctx.wrap_socket(self.request, server_side=True)
            super().setup()

        def log_message(self, *args):
            pass

        def do_GET(self):
            sni = sni_of.pop(id(self.request), None) if tls_ctx else None
            host = self.headers.get("Host")
            log.write(server=label, event="request", peer=self.client_address[0], host=host,
                      path=self.path, sni=sni)
            if self.path == "/hold":
                self.send_response(200)
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                self.wfile.write(b"held\n")
                self.wfile.flush()
                self.request.settimeout(120)
                try:
                    self.rfile.read(1)  # until the client leaves
                except OSError:
                    pass
                self.close_connection = True
                return
            if self.path.startswith("/bytes?n="):
                n = int(self.path.split("=", 1)[1])
                self.send_response(200)
                self.send_header("Content-Length", str(n))
                self.end_headers()
                chunk = b"x" * 65536
                while n > 0:
                    self.wfile.write(chunk[:min(n, len(chunk))])
                    n -= min(n, len(chunk))
                return
            if self.path == "/":
                body = f"fakenet {label} {host}\n".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

        def get_request(self):
            sock, peer = self.socket.accept()
            log.write(server=label, event="accept", peer=peer[0])
            return sock, peer

    if tls_ctx:
        def on_sni(sslobj, name, ctx):
            sni_of[id(sslobj)] = name
        tls_ctx.sni_callback = on_sni
    return Handler, Server


def serve(config_path):
    cfg = json.loads(pathlib.Path(config_path).read_text())
    log = Log(cfg["log"])
    if "dns" in cfg:
        serve_dns(log, cfg["dns"]["addr"], cfg["dns"]["zone"])
    for lst in cfg["listeners"]:
        ctx = None
        if lst.get("tls"):
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cfg["cert"], cfg["key"])
        handler, server = make_web(log, lst["label"], cfg["root"], ctx)
        srv = server((lst["addr"], lst["port"]), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    log.write(server="fakenet", event="ready")
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        serve(sys.argv[2])
    else:
        sys.exit("usage: fakenet.py serve CONFIG")
