"""Fixtures for the daemon's integration tests.

Each test gets (or shares) a real `build/pandastackd` started on a fresh
temporary data dir and a free loopback port (port 0, read back from the
daemon's `event=http.listening` log line), talked to over HTTP (or HTTPS when
started with a certificate).

Environment:
  PANDASTACK_CACHE          template cache (default /var/cache/pandastack)
  PANDASTACK_ACCEL          auto|kvm|tcg for the daemon (default auto)
  PANDASTACK_TEST_TEMPLATE  template for the VM tests (default: code-interpreter
                            if ready, else base); VM tests skip without one
  PANDASTACKD               the daemon binary (default build/pandastackd; e.g. an
                            AddressSanitizer build)
"""
import http.client
import json
import os
import pathlib
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DAEMON = pathlib.Path(os.environ.get("PANDASTACKD", ROOT / "build" / "pandastackd"))
CACHE = os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack")
ACCEL = os.environ.get("PANDASTACK_ACCEL", "auto")


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def error_code(self):
        return self.json()["error"]["code"]

    def __repr__(self):
        return f"<{self.status} {self.body[:300]!r}>"


class Daemon:
    """One pandastackd process on its own data dir.

    tls: (certificate, key) PEM paths: the daemon serves HTTPS and the test's
    requests trust that certificate. listen: the --listen address. wrap: a
    command prefix (e.g. ``["unshare", "-n"]``) that ends by executing the
    daemon in the same process."""

    def __init__(self, data_dir, extra_args=(), cache=CACHE, tls=None,
                 listen="127.0.0.1:0", wrap=()):
        self.data_dir = pathlib.Path(data_dir)
        self.extra_args = list(extra_args)
        self.cache = cache
        self.tls = tls
        self.listen = listen
        self.wrap = list(wrap)
        self.proc = None
        self.port = None
        self.scheme = "https" if tls else "http"
        self.ssl_context = ssl.create_default_context(cafile=tls[0]) if tls else None
        self.log_path = self.data_dir.parent / (self.data_dir.name + ".log")
        self.out_path = self.data_dir.parent / (self.data_dir.name + ".out")

    def start(self, timeout=120):
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        out = open(self.out_path, "ab")
        start_offset = self.log_path.stat().st_size
        tls_args = ["--tls-cert", self.tls[0], "--tls-key", self.tls[1]] if self.tls else []
        self.proc = subprocess.Popen(
            self.wrap + [str(DAEMON), "--listen", self.listen, "--data-dir", str(self.data_dir),
                         "--cache", self.cache, "--accel", ACCEL] + tls_args + self.extra_args,
            stdout=out, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        out.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            text = self.log_path.read_bytes()[start_offset:].decode(errors="replace")
            m = re.search(r"event=http\.listening host=\S+ port=(\d+)", text)
            if m:
                self.port = int(m.group(1))
                self.admin_key = (self.data_dir / "admin.key").read_text().strip()
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"pandastackd exited {self.proc.returncode}:\n{text}")
            time.sleep(0.05)
        raise RuntimeError("pandastackd did not start listening")

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=timeout)
        return self.proc.returncode if self.proc else None

    def log(self):
        return self.log_path.read_text(errors="replace")

    def rss_kib(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    # ---- HTTP ------------------------------------------------------------
    def url(self, path):
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def request(self, method, path, body=None, key="admin", headers=None, timeout=120):
        """One request; body may be bytes, str or a JSON-able object.
        key: "admin", None (no header) or a key string."""
        hdrs = dict(headers or {})
        if key == "admin":
            key = self.admin_key
        if key is not None:
            hdrs.setdefault("Authorization", f"Bearer {key}")
        data = None
        if body is not None:
            if isinstance(body, (bytes, bytearray)):
                data = bytes(body)
            elif isinstance(body, str):
                data = body.encode()
            else:
                data = json.dumps(body).encode()
                hdrs.setdefault("Content-Type", "application/json")
        req = urllib.request.Request(self.url(path), data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.ssl_context) as r:
                return Response(r.status, dict(r.headers), r.read())
        except urllib.error.HTTPError as e:
            return Response(e.code, dict(e.headers), e.read())

    def conn(self, timeout=120):
        if self.tls:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                               context=self.ssl_context)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def new_key(self, team, name="test"):
        r = self.request("POST", "/v1/keys", {"name": name, "team": team})
        assert r.status == 201, r
        return r.json()["key"]


def reap_vms(data_dir):
    """SIGKILL every QEMU a test daemon left under data_dir (sandboxes outlive
    their daemon by design; tests must not leak them)."""
    data_dir = pathlib.Path(data_dir)
    for pidfile in data_dir.glob("**/qemu.pid"):
        try:
            pid = int(pidfile.read_text())
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except (OSError, ValueError):
            continue
        if str(data_dir).encode() in cmd:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def tmp_root():
    d = tempfile.mkdtemp(prefix="pandastackd-test-")
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def daemon_factory(tmp_root):
    """Start daemons on demand; every one is stopped at the end."""
    started = []

    def make(name="data", extra_args=(), cache=CACHE, **kw):
        d = Daemon(tmp_root / name, extra_args, cache, **kw)
        started.append(d)
        return d.start()

    yield make
    for d in started:
        try:
            d.stop()
        except Exception:
            d.stop(signal.SIGKILL)
        reap_vms(d.data_dir)


@pytest.fixture(scope="module")
def api_daemon():
    """A daemon with an empty template cache and no pool: for the API tests
    that need no VM."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="pandastackd-api-"))
    (root / "cache").mkdir()
    d = Daemon(root / "data", ["--pool-size", "0"], cache=str(root / "cache")).start()
    yield d
    d.stop()
    reap_vms(d.data_dir)
    shutil.rmtree(root, ignore_errors=True)


def ready_template():
    """The template the VM tests use, or None when none is baked."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="pandastackd-probe-"))
    try:
        d = Daemon(root / "data", ["--pool-size", "0"]).start()
        try:
            ts = {t["name"]: t for t in d.request("GET", "/v1/templates").json()["templates"]}
        finally:
            d.stop()
            reap_vms(d.data_dir)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    want = os.environ.get("PANDASTACK_TEST_TEMPLATE")
    names = [want] if want else ["code-interpreter", "base"]
    for n in names:
        if ts.get(n, {}).get("status") == "ready":
            return n
    return None


@pytest.fixture(scope="session")
def template():
    t = ready_template()
    if not t:
        pytest.skip("no baked template in the cache (run `make templates`)")
    return t


@pytest.fixture(scope="module")
def vm_daemon(template):
    """A daemon over the real template cache, shared by a module's VM tests."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="pandastackd-vm-"))
    d = Daemon(root / "data", ["--pool-size", os.environ.get("PANDASTACK_TEST_POOL", "1")]).start()
    yield d
    d.stop()
    reap_vms(d.data_dir)
    shutil.rmtree(root, ignore_errors=True)


def create_sandbox(d, template, key="admin", **fields):
    body = {"template": template}
    body.update(fields)
    r = d.request("POST", "/v1/sandboxes", body, key=key)
    assert r.status == 201, r
    return r.json()


def exec_cmd(d, sid, cmd, key="admin", **fields):
    body = {"cmd": cmd}
    body.update(fields)
    r = d.request("POST", f"/v1/sandboxes/{sid}/exec", body, key=key)
    assert r.status == 200, r
    return r.json()


PORT_SERVER = ROOT / "tests" / "integration" / "port_server.py"


def qemu_pid(d, sid):
    """The pid of sandbox sid's QEMU under daemon d."""
    return int((d.data_dir / "sandboxes" / sid / "qemu.pid").read_text())


def guest_online(d, sid):
    """True when the guest of sandbox sid has its network address."""
    return exec_cmd(d, sid, "grep -q 10.0.2.15 /proc/net/fib_trie && echo up")["stdout"] == "up\n"


class PortServer:
    """tests/integration/port_server.py on `port` inside the guest of sandbox
    `sid` (on 0.0.0.0, so at 10.0.2.15), logging each request it serves."""

    def __init__(self, d, sid, port):
        self.d, self.sid, self.port = d, sid, port
        assert guest_online(d, sid), "the guest has no network address (eth0 10.0.2.15)"
        r = d.request("PUT", f"/v1/sandboxes/{sid}/fs?path=/tmp/port_server.py",
                      PORT_SERVER.read_bytes())
        assert r.status == 200, r
        self.pid = exec_cmd(d, sid, f"nohup python3 /tmp/port_server.py {port} "
                                    f">/tmp/port_server.{port}.log 2>&1 & echo $!")["stdout"].strip()
        wait_for(lambda: self.get("/echo").status == 200, 60, 0.3, "the server to listen")

    def get(self, path, **kw):
        return self.d.request("GET", f"/v1/sandboxes/{self.sid}/ports/{self.port}{path}", **kw)

    def log(self):
        return exec_cmd(self.d, self.sid, f"cat /tmp/port_server.{self.port}.log")["stdout"]

    def stop(self):
        """End the server (the sandbox may have ended already)."""
        self.d.request("POST", f"/v1/sandboxes/{self.sid}/exec", {"cmd": f"kill {self.pid}"})


def context_create(d, sid, **body):
    """A new code context in sandbox sid (its object)."""
    r = d.request("POST", f"/v1/sandboxes/{sid}/contexts", body)
    assert r.status == 201, r
    return r.json()


def context_run(d, sid, cid, code, **fields):
    """One run of code in context cid (its execution object)."""
    r = d.request("POST", f"/v1/sandboxes/{sid}/contexts/{cid}/run_code",
                  dict(fields, code=code))
    assert r.status == 200, r
    return r.json()


def context_stdout(d, sid, cid, code):
    """The stdout of one run of code in context cid; fails on an error."""
    ex = context_run(d, sid, cid, code)
    assert ex["error"] is None, ex
    return ex["stdout"]


def wait_for(pred, timeout, interval=0.1, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def read_sse(resp):
    """Yield (event, data) from an SSE response until it ends."""
    event, data = None, []
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.decode().rstrip("\n")
        if line.startswith(":"):
            continue
        if line == "":
            if event:
                yield event, json.loads("\n".join(data))
            event, data = None, []
        elif line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
