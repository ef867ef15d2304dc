"""Sandbox networking end to end (docs/network.md): the daemon's proxy and
resolver against a fake internet (fakenet.py).

The daemon runs in a network namespace of the test's own whose only link
leads to the fake internet, so whatever the rules do, no packet can leave
the test's namespaces; every decoy address is one the harness made.  Each
refusal is checked twice: the daemon's own namespace can reach the target
(a positive control), and the target's log gains no connection from the
sandbox.

The sandbox side runs tests/integration/netclient.py inside the guest.
One daemon and two sandboxes serve the whole module.
"""
import json
import os
import queue
import shlex
import threading
import uuid

import pytest

import fakenet
from conftest import CACHE, Daemon, ROOT, create_sandbox, reap_vms, wait_for
from fakenet import (DNS_IP, GW_IP, HOST_IP, LOOP_PORT, META_IP, OTHER_IP, PRIVATE_IP, WEB_IP,
                     FakeInternet)

NETCLIENT = ROOT / "tests" / "integration" / "netclient.py"
# The daemon's --pip-index-url: the fake internet's PEP 503 index, by name.
INDEX_URL = "http://index.test/simple/"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

class NsDaemon(Daemon):
    """A daemon inside the fake internet's host namespace; the test reaches
    its API through a relay (fakenet.Relay)."""

    def __init__(self, net, data_dir, extra_args):
        super().__init__(data_dir, extra_args, CACHE, wrap=net.host.cmd())
        self.net = net
        self.relay = None

    def start(self, timeout=120):
        super().start(timeout)
        self.api_port = self.port
        self.relay = fakenet.Relay(self.net.host.path, ("127.0.0.1", self.api_port))
        self.port = self.relay.port
        return self

    def stop(self, *a, **kw):
        rc = super().stop(*a, **kw)
        if self.relay:
            self.relay.close()
            self.relay = None
        return rc


class Guest:
    """netclient.py run inside a sandbox, through exec."""

    def __init__(self, d, sid):
        self.d, self.sid = d, sid
        r = d.request("PUT", f"/v1/sandboxes/{sid}/fs?path=/tmp/netclient.py",
                      NETCLIENT.read_bytes())
        assert r.status in (200, 201, 204), r

    def run(self, *args, timeout=90):
        cmd = "python3 /tmp/netclient.py " + shlex.join(str(a) for a in args)
        r = self.d.request("POST", f"/v1/sandboxes/{self.sid}/exec",
                           {"cmd": cmd, "timeout_seconds": timeout})
        assert r.status == 200, r
        res = r.json()
        lines = res["stdout"].strip().splitlines()
        assert res["exit_code"] == 0 and lines, res
        return json.loads(lines[-1])

    def many(self, *calls):
        """Several netclient calls in one run (a list of results)."""
        return self.run("batch", json.dumps([[str(a) for a in c] for c in calls]))

    def start(self, *args):
        """Run in the background (exec_stream); returns a queue of its output
        lines (JSON), then {"exit": ...}."""
        cmd = "python3 /tmp/netclient.py " + shlex.join(str(a) for a in args)
        q = queue.Queue()

        def stream():
            c = self.d.conn(timeout=300)
            body = json.dumps({"cmd": cmd, "timeout_seconds": 300})
            c.request("POST", f"/v1/sandboxes/{self.sid}/exec_stream", body,
                      {"Authorization": f"Bearer {self.d.admin_key}",
                       "Content-Type": "application/json"})
            resp = c.getresponse()
            event, buf = None, ""
            for raw in resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "stdout":
                    buf += json.loads(line[6:])["data"]
                    while "\n" in buf:
                        one, buf = buf.split("\n", 1)
                        q.put(json.loads(one))
                elif line.startswith("data: ") and event in ("exit", "error"):
                    q.put({"exit": json.loads(line[6:])})
                    break
            c.close()

        threading.Thread(target=stream, daemon=True).start()
        return q


def next_line(q, timeout):
    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no output within {timeout} s")


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    n = FakeInternet(tmp_path_factory.mktemp("fakenet"))
    try:
        n.start()
    except Exception:
        n.stop()
        raise
    yield n
    n.stop()


@pytest.fixture(scope="module")
def nd(net, template, tmp_path_factory):
    root = tmp_path_factory.mktemp("netd")
    d = NsDaemon(net, root / "data", ["--pool-size", "1", "--dns-upstream", DNS_IP,
                                       "--pip-index-url", INDEX_URL]).start()
    yield d
    d.stop()
    reap_vms(d.data_dir)


@pytest.fixture(scope="module")
def box(nd, template):
    """Sandbox A: created with the default policy."""
    sb = create_sandbox(nd, template, ttl_seconds=3600)
    g = Guest(nd, sb["id"])
    yield sb, g
    nd.request("DELETE", f"/v1/sandboxes/{sb['id']}")


# The default policy: a PUT changes only the keys it sends.
DEFAULT = {"egress": "allow", "allow_out": [], "deny_out": []}


def policy_of(network):
    """The egress policy of a network object (public_ports is exposed
    ports', test_ports.py)."""
    assert isinstance(network.get("public_ports"), bool), network
    return {k: v for k, v in network.items() if k != "public_ports"}


def put_net(d, sid, policy):
    r = d.request("PUT", f"/v1/sandboxes/{sid}/network", policy)
    assert r.status == 200, r
    return policy_of(r.json())


def refused(res):
    """The proxy refused it: reset, closed, or its 403 for HTTP."""
    if res.get("status") == 403 and "network policy" in (res.get("body") or ""):
        return True
    if (res.get("data") or "").startswith("HTTP/1.1 403") and "network policy" in res["data"]:
        return True
    return res.get("status") is None and (res.get("error") or res.get("data") == "")


def requests(net, label):
    """Requests a fake internet server handled (a connection the proxy
    dialled and then refused, on a name it read late, makes none)."""
    return net.count(label, "request")


def served_by(res, label, host):
    return res.get("status") == 200 and res.get("body", "").strip() == f"fakenet {label} {host}"


# ---- the guest is online -------------------------------------------------------------

def test_default_policy_reaches_the_fake_internet(nd, net, box):
    sb, g = box
    assert policy_of(sb["network"]) == DEFAULT
    before = net.count("web")
    r = g.many(["resolve", "allowed.test"], ["tcp", WEB_IP, 80, "--host", "allowed.test"],
               ["tcp", WEB_IP, 443, "--sni", "allowed.test", "--host", "allowed.test"])
    assert r[0]["addrs"] == [WEB_IP], r
    assert served_by(r[1], "web", "allowed.test") and served_by(r[2], "web", "allowed.test"), r
    assert net.count("web") == before + 2
    reqs = net.log("web", "request")[-2:]
    assert reqs[-1]["sni"] == "allowed.test"
    # the daemon dialled from its own namespace
    assert {e["peer"] for e in reqs} == {HOST_IP}


def test_dns_answers(nd, net, box):
    sb, g = box
    r = g.many(["dns", "allowed.test"], ["dns", "private.test"], ["dns", "meta.test"],
               ["dns", "loop.test"], ["dns", "mixed.test"], ["dns", "nothing-here.test"],
               ["dns", "allowed.test", "10.0.2.3", 28], ["dns", "allowed.test", "10.0.2.3", 15],
               ["dns", "other.test", "8.8.8.8"], ["dns", "other.test", "10.0.2.3", 1, "tcp"])
    assert r[0] == {"rcode": 0, "addrs": [WEB_IP], "id_ok": True}
    # answers in denied ranges are dropped; none left: NXDOMAIN
    assert [x["rcode"] for x in r[1:4]] == [3, 3, 3], r[1:4]
    assert r[4]["addrs"] == [OTHER_IP]
    assert r[5]["rcode"] == 3
    assert r[6] == {"rcode": 0, "addrs": [], "id_ok": True}  # AAAA: no address
    assert r[7]["rcode"] == 4  # MX: NOTIMP
    # a query to any server is answered by the sandbox's resolver, over TCP too
    assert r[8]["addrs"] == [OTHER_IP] and r[9]["addrs"] == [OTHER_IP], r[8:]


def test_always_denied_targets_stay_unreachable(nd, net, box):
    sb, g = box
    decoys = {
        "decoy-private": (PRIVATE_IP, 80),
        "decoy-metadata": (META_IP, 80),
        "decoy-loopback": ("127.0.0.1", LOOP_PORT),
        "decoy-host": (HOST_IP, LOOP_PORT),
        "decoy-neighbour": (GW_IP, 80),  # on the host's own network, 198.51.100.0/24
    }
    # positive controls: the daemon's namespace reaches every one, and its API
    for label, addr in decoys.items():
        status, body = net.host_http(addr)
        assert status == 200 and body.startswith(f"fakenet {label}"), (label, status, body)
        assert net.count(label) >= 1
    s = net.host_connect(("127.0.0.1", nd.api_port))
    s.close()
    counts = {label: net.count(label) for label in decoys}
    attempts = [
        (PRIVATE_IP, 80), (META_IP, 80), (HOST_IP, LOOP_PORT), ("10.0.2.2", LOOP_PORT),
        ("10.0.2.2", nd.api_port), (HOST_IP, nd.api_port), ("10.0.2.3", LOOP_PORT),
        (GW_IP, 80),
    ]
    r = g.many(*[["tcp", ip, port, "--host", "decoy.test"] for ip, port in attempts])
    for a, x in zip(attempts, r):
        assert refused(x), (a, x)
    # names that resolve into denied ranges: when an allow rule would dial the
    # name, the daemon's own resolution is checked too
    put_net(nd, sb["id"], {"egress": "deny", "allow_out": ["*.test"]})
    try:
        names = ("loop.test", "private.test", "meta.test")
        r = g.many(*[c for n in names for c in (["tcp", WEB_IP, 80, "--host", n],
                                                 ["tcp", OTHER_IP, 443, "--sni", n, "--host", n])])
        for x in r:
            assert refused(x), x
    finally:
        put_net(nd, sb["id"], DEFAULT)
    for label in decoys:
        assert net.count(label) == counts[label], (label, net.log(label)[-3:])


def test_name_past_the_sniff_refused(nd, net, box):
    """A Host header behind 16 KiB of other headers must not slip past a
    deny_out rule by arriving after the proxy stopped reading for a name."""
    sb, g = box
    put_net(nd, sb["id"], {"egress": "allow", "deny_out": ["bad.test"]})
    try:
        def head(pad, host):
            return f"GET / HTTP/1.1\r\nX-Pad: {'a' * pad}\r\nHost: {host}\r\n\r\n"
        web = requests(net, "web")
        r = g.many(["tcp", WEB_IP, 80, "--send", head(100, "good.test")],   # control: served
                   ["tcp", WEB_IP, 80, "--send", head(100, "bad.test")],    # control: refused
                   ["tcp", WEB_IP, 80, "--send", head(16500, "bad.test")],
                   ["tcp", WEB_IP, 80, "--send", head(17000, "bad.test")])
        assert "fakenet web good.test" in (r[0].get("data") or ""), r[0]
        for i, x in enumerate(r[1:], 1):
            assert refused(x), (i, x.get("data", "")[:60], x.get("error"))
        assert requests(net, "web") == web + 1
    finally:
        put_net(nd, sb["id"], DEFAULT)


def test_domain_allowlist(nd, net, box):
    sb, g = box
    p = put_net(nd, sb["id"], {"egress": "deny", "allow_out": ["Allowed.test"]})
    assert p == {"egress": "deny", "allow_out": ["allowed.test"], "deny_out": []}
    try:
        web, other = requests(net, "web"), requests(net, "other")
        name = f"exfil-{uuid.uuid4().hex[:12]}.test"
        # the allowed name's address is known to the resolver (the first
        # probe looks it up) and so is a connection's name when its bytes
        # carry none in time
        r = g.many(
            ["resolve", "allowed.test"],
            ["tcp", WEB_IP, 443, "--sni", "allowed.test", "--host", "allowed.test"],
            # the allowed domain's address, another name: refused
            ["tcp", WEB_IP, 443, "--sni", "other.test", "--host", "allowed.test"],
            ["tcp", WEB_IP, 80, "--host", "other.test"],
            # ... also when the name comes after the proxy stopped waiting
            # for it (1 s; positive control: the allowed name, as late)
            ["tcp", WEB_IP, 443, "--sni", "allowed.test", "--host", "allowed.test",
             "--delay", 1.5],
            ["tcp", WEB_IP, 443, "--sni", "other.test", "--host", "allowed.test", "--delay", 1.5],
            ["tcp", WEB_IP, 80, "--host", "other.test", "--delay", 1.5],
            # no name at all, and no answer of the resolver for the address
            ["tcp", OTHER_IP, 80, "--send", "GET / HTTP/1.0\r\n\r\n"],
            # an allowed name at another address: the daemon dials the name
            ["tcp", OTHER_IP, 80, "--host", "allowed.test"],
            # names outside the list do not resolve, and are not asked upstream
            ["dns", name], ["dns", "other.test"])
        assert r[0]["addrs"] == [WEB_IP], r[0]
        assert served_by(r[1], "web", "allowed.test"), r[1]
        assert served_by(r[4], "web", "allowed.test"), r[4]
        for x in r[2:4] + r[5:8]:
            assert refused(x), x
        assert served_by(r[8], "web", "allowed.test"), r[8]
        assert r[9]["rcode"] == 3 and r[10]["rcode"] == 3, r[9:]
        # the refused ones never reached a server's request handling
        assert requests(net, "web") == web + 3 and requests(net, "other") == other
        assert not [e for e in net.log("dns") if e.get("name") == name]
    finally:
        put_net(nd, sb["id"], DEFAULT)


def test_connection_without_a_name_matches_the_resolvers_answer(nd, net, denied_box):
    sb, g = denied_box  # its resolver has answered nothing yet
    put_net(nd, sb["id"], {"egress": "deny", "allow_out": ["other.test"]})
    try:
        other = net.count("other")
        # HTTP/1.0 without Host: nothing names the host before the lookup
        req = "GET / HTTP/1.0\r\n\r\n"
        r = g.many(["tcp", OTHER_IP, 80, "--send", req], ["dns", "other.test"],
                   ["tcp", OTHER_IP, 80, "--send", req])
        assert refused(r[0]), r[0]
        assert r[1]["addrs"] == [OTHER_IP], r[1]
        assert (r[2]["data"] or "").startswith("HTTP/1.1 200"), r[2]
        assert net.count("other") == other + 1
    finally:
        put_net(nd, sb["id"], {"egress": "deny", "allow_out": [], "deny_out": []})


def test_an_allow_rule_holding_denied_ranges_leaves_them_denied(nd, net, box):
    """allow_out 0.0.0.0/0 under egress deny opens the fake internet but none
    of the always-denied addresses inside it, and the answer says so."""
    sb, g = box
    r = nd.request("PUT", f"/v1/sandboxes/{sb['id']}/network",
                   {"egress": "deny", "allow_out": ["0.0.0.0/0", "126.0.0.0/7"]})
    assert r.status == 200, r
    try:
        notes = r.json().get("notes", [])
        assert len(notes) == 2 and "10.0.0.0/8" in notes[0] and "127.0.0.0/8" in notes[1], notes
        got = nd.request("GET", f"/v1/sandboxes/{sb['id']}/network").json()
        assert got["notes"] == notes
        # the answer goes back as a request unchanged ("notes" is read-only)
        assert put_net(nd, sb["id"], got)["egress"] == "deny"
        decoys = {"decoy-private": (PRIVATE_IP, 80), "decoy-metadata": (META_IP, 80),
                  "decoy-host": (HOST_IP, LOOP_PORT), "decoy-neighbour": (GW_IP, 80)}
        counts = {label: net.count(label) for label in decoys}
        # positive control: the rule lets the fake internet through
        web = net.count("web")
        ok = g.run("tcp", WEB_IP, 80, "--host", "allowed.test")
        assert served_by(ok, "web", "allowed.test") and net.count("web") == web + 1, ok
        r = g.many(*[["tcp", ip, port, "--host", "decoy.test"] for ip, port in decoys.values()])
        for a, x in zip(decoys.values(), r):
            assert refused(x), (a, x)
        for label in decoys:
            assert net.count(label) == counts[label], (label, net.log(label)[-3:])
    finally:
        put_net(nd, sb["id"], DEFAULT)
    assert "notes" not in nd.request("GET", f"/v1/sandboxes/{sb['id']}/network").json()


def test_policy_change_applies_at_once(nd, net, box):
    sb, g = box
    held = g.start("hold", WEB_IP, 80, "allowed.test")
    assert next_line(held, 60) == {"open": True}
    put_net(nd, sb["id"], {"egress": "deny"})
    try:
        # the PUT answers once open connections it refuses are closed
        assert "closed" in next_line(held, 5)
        r = g.run("tcp", WEB_IP, 80, "--host", "allowed.test")
        assert refused(r), r
    finally:
        put_net(nd, sb["id"], DEFAULT)
    r = g.run("tcp", WEB_IP, 80, "--host", "allowed.test")
    assert served_by(r, "web", "allowed.test"), r


@pytest.fixture(scope="module")
def denied_box(nd, template):
    """Sandbox B: created with egress deny."""
    sb = create_sandbox(nd, template, ttl_seconds=3600, network={"egress": "deny"})
    yield sb, Guest(nd, sb["id"])
    nd.request("DELETE", f"/v1/sandboxes/{sb['id']}")


def test_egress_deny_refuses_everything(nd, net, denied_box):
    sb, g = denied_box
    assert sb["network"]["egress"] == "deny"
    assert nd.request("GET", f"/v1/sandboxes/{sb['id']}/network").json()["egress"] == "deny"
    web, other = net.count("web"), net.count("other")
    name = f"exfil-{uuid.uuid4().hex[:12]}.test"
    r = g.many(["tcp", WEB_IP, 80, "--host", "allowed.test"],
               ["tcp", WEB_IP, 443, "--sni", "allowed.test", "--host", "allowed.test"],
               ["tcp", OTHER_IP, 22, "--send", "SSH-2.0-x\r\n"], ["tcp", DNS_IP, 53, "--send", "x"],
               ["dns", name], ["dns", "allowed.test"])
    for x in r[:4]:
        assert refused(x), x
    assert r[4]["rcode"] == 3 and r[5]["rcode"] == 3, r[4:]
    assert not [e for e in net.log("dns") if e.get("name") == name]
    assert net.count("web") == web and net.count("other") == other


@pytest.fixture(scope="module")
def wheels(net, tmp_path_factory):
    """Packages of random names, each with its nonce, on the fake internet's
    PEP 503 index (INDEX_URL, the daemon's --pip-index-url)."""
    out = {}
    d = tmp_path_factory.mktemp("wheels")
    for use in ("exec", "context", "deny", "allowlist"):
        name, nonce = f"fakepkg-{uuid.uuid4().hex[:10]}", uuid.uuid4().hex
        whl = fakenet.build_wheel(d, name, "1.0", f"NONCE = {nonce!r}\n")
        fakenet.write_index(net.web_root, name, whl)
        out[use] = (name, name.replace("-", "_"), nonce)
    return out


def index_requests(net, name):
    return [e for e in net.log("web", "request") if name in e["path"]]


def pip_exec(nd, sid, name, mod, opts=""):
    """`pip install NAME` as a user types it (the index comes from the
    daemon's --pip-index-url), then the module's nonce."""
    cmd = f"pip install {opts} {name} && python3 -c 'import {mod}; print({mod}.NONCE)'"
    r = nd.request("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": cmd, "timeout_seconds": 600},
                   timeout=660)
    assert r.status == 200, r
    return r.json()


def test_pip_install_through_exec(nd, net, box, wheels):
    sb, g = box
    # the locked-down agent sandbox of docs/network.md: only the index's name
    put_net(nd, sb["id"], {"egress": "deny", "allow_out": ["index.test"]})
    try:
        name, mod, nonce = wheels["exec"]
        r = pip_exec(nd, sb["id"], name, mod)
        assert r["exit_code"] == 0 and r["stdout"].strip().endswith(nonce), r
        paths = [e["path"] for e in index_requests(net, name)]
        assert f"/simple/{name}/" in paths and any(p.endswith(".whl") for p in paths), paths
    finally:
        put_net(nd, sb["id"], DEFAULT)


def test_pip_install_in_a_code_context(nd, net, box, wheels, template):
    if template != "code-interpreter":
        pytest.skip("%pip is IPython's: code-interpreter's contexts")
    sb, g = box
    put_net(nd, sb["id"], {"egress": "deny", "allow_out": ["index.test"]})
    try:
        name, mod, nonce = wheels["context"]
        ctx = nd.request("POST", f"/v1/sandboxes/{sb['id']}/contexts", {}).json()
        # a template whose bake fell back to the plain kernel (its warm kernels
        # did not start in time) cannot run %pip
        assert ctx["kernel"] == "jupyter", ("code-interpreter's contexts are not IPython", ctx)
        r = nd.request("POST", f"/v1/sandboxes/{sb['id']}/contexts/{ctx['id']}/run_code",
                       {"code": f"%pip install {name}\nimport {mod}\nprint({mod}.NONCE)",
                        "timeout_seconds": 600}, timeout=660).json()
        assert r["error"] is None and r["stdout"].strip().endswith(nonce), r
        assert [e for e in index_requests(net, name) if e["path"].endswith(".whl")]
        nd.request("DELETE", f"/v1/sandboxes/{sb['id']}/contexts/{ctx['id']}")
    finally:
        put_net(nd, sb["id"], DEFAULT)


@pytest.mark.parametrize("use, policy", [
    ("deny", {"egress": "deny"}),
    ("allowlist", {"egress": "deny", "allow_out": ["other.test", "files.test"]}),
])
def test_pip_install_refused(nd, net, box, wheels, use, policy):
    """With egress deny, or an allowlist without the index's name, pip fails
    and the index sees nothing; the same index served the exec test above
    (positive control: test_pip_install_through_exec)."""
    sb, g = box
    put_net(nd, sb["id"], policy)
    try:
        name, mod, nonce = wheels[use]
        web = len(net.log("web"))
        r = pip_exec(nd, sb["id"], name, mod, opts="--retries 0 --timeout 10")
        assert r["exit_code"] != 0, r
        assert index_requests(net, name) == [] and len(net.log("web")) == web, net.log("web")[web:]
    finally:
        put_net(nd, sb["id"], DEFAULT)


@pytest.fixture(scope="module")
def pooled_box(nd, template):
    """Sandbox C: taken from the daemon's pool (--pool-size 1)."""
    def ready():
        for t in nd.request("GET", "/v1/templates").json()["templates"]:
            if t["name"] == template:
                return t.get("pool_ready", 0) >= 1
        return False
    wait_for(ready, 300, 0.5, "a pooled VM")
    sb = create_sandbox(nd, template, ttl_seconds=3600)
    yield sb
    nd.request("DELETE", f"/v1/sandboxes/{sb['id']}")


def test_pooled_clone_is_online_at_its_first_exec(nd, net, box, pooled_box):
    """Two clones of one template, with one address each, online at once:
    each in a namespace of its own.  C's very first command fetches a page."""
    sb, g = box
    sid = pooled_box["id"]
    assert pooled_box["restored_from"] == "pool", pooled_box
    web = net.count("web")
    fetch = ("python3 -c \"import urllib.request; "
             "print(urllib.request.urlopen('http://allowed.test/', timeout=30).read().decode())\"")
    r = nd.request("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": fetch, "timeout_seconds": 120})
    assert r.status == 200 and r.json()["stdout"].strip() == "fakenet web allowed.test", r
    r = g.run("tcp", WEB_IP, 80, "--host", "allowed.test")
    assert served_by(r, "web", "allowed.test"), r
    assert net.count("web") == web + 2


def test_sandboxes_cannot_reach_each_other(nd, net, box, pooled_box):
    """C serves HTTP on a port; B (box) tries every address it might use and
    reaches nothing, while the port is reachable inside C and from the
    daemon's side of C's namespace (where the exposed-port route connects)."""
    sb, g = box
    sid = pooled_box["id"]
    c = Guest(nd, sid)
    port, log = 8000, "/tmp/serve.log"
    r = nd.request("POST", f"/v1/sandboxes/{sid}/exec", {
        "cmd": f"setsid nohup python3 /tmp/netclient.py serve {port} {log} "
               ">/dev/null 2>&1 < /dev/null & sleep 0.1"})
    assert r.status == 200 and r.json()["exit_code"] == 0, r

    def served():
        return c.run("tcp", "127.0.0.1", port, "--host", "c").get("status") == 200
    wait_for(served, 60, 0.5, "C's server")
    pid = (nd.data_dir / "sandboxes" / sid / "qemu.pid").read_text().strip()
    s = fakenet.connect_in(f"/proc/{pid}/ns/net", ("10.0.2.15", port))
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.1 200"), "the daemon's side cannot reach C"
    s.close()

    def served_lines():
        r = nd.request("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": f"cat {log}"})
        return r.json()["stdout"].splitlines()
    before = served_lines()
    assert len(before) == 2, before  # the two controls
    r = g.many(*[["tcp", ip, port, "--host", "c", "--timeout", 5]
                 for ip in ("10.0.2.15", "10.0.2.2", "10.0.2.3", "127.0.0.1", HOST_IP)])
    for x in r:
        assert x.get("status") != 200 and "served" not in (x.get("body") or ""), x
    assert served_lines() == before


def test_network_api_errors(nd, box):
    sb, _ = box
    path = f"/v1/sandboxes/{sb['id']}/network"
    for body, code in ((b"nope", "invalid_json"), ({"egress": "sometimes"}, "invalid_field"),
                       ({"allow_out": ["10.0.0.0/8"]}, "invalid_field"),
                       ({"allow_out": ["2001:db8::1"]}, "invalid_field"),
                       ({"deny_out": "x"}, "invalid_field"), ({"ports": []}, "unknown_field")):
        r = nd.request("PUT", path, body)
        assert r.status == 400 and r.error_code() == code, (body, r)
    # a PUT changes the keys it sends; the others keep their value
    try:
        assert put_net(nd, sb["id"], {"egress": "deny", "allow_out": ["a.test"]}) == \
            {"egress": "deny", "allow_out": ["a.test"], "deny_out": []}
        assert put_net(nd, sb["id"], {"deny_out": ["b.test"]}) == \
            {"egress": "deny", "allow_out": ["a.test"], "deny_out": ["b.test"]}
        assert put_net(nd, sb["id"], {"egress": "allow", "allow_out": []}) == \
            {"egress": "allow", "allow_out": [], "deny_out": ["b.test"]}
        assert nd.request("GET", path).json()["deny_out"] == ["b.test"]
        # public_ports (exposed ports) goes along, and leaves the policy be
        r = nd.request("PUT", path, {"public_ports": True})
        assert r.status == 200 and r.json()["public_ports"] is True, r
        assert policy_of(r.json())["deny_out"] == ["b.test"]
        got = nd.request("GET", f"/v1/sandboxes/{sb['id']}").json()["network"]
        assert got["public_ports"] is True and got["deny_out"] == ["b.test"], got
        r = nd.request("PUT", path, {"public_ports": "yes"})
        assert r.status == 400 and r.error_code() == "invalid_field", r
    finally:
        put_net(nd, sb["id"], dict(DEFAULT, public_ports=False))
    other = nd.new_key("other-team")
    assert nd.request("GET", path, key=other).status == 404
    assert nd.request("PUT", path, {}, key=other).status == 404
    assert nd.request("GET", "/v1/sandboxes/sbx_00000000000000000000/network").status == 404


def test_metrics_count_bytes_connections_refusals(nd, box):
    sb, _ = box
    text = nd.request("GET", "/metrics").body.decode()

    def value(prefix):
        for line in text.splitlines():
            if line.startswith(prefix):
                return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"no {prefix} in /metrics")

    sid = sb["id"]
    assert value(f'pandastack_sandbox_net_bytes_total{{sandbox="{sid}",direction="out"}}') > 0
    assert value(f'pandastack_sandbox_net_bytes_total{{sandbox="{sid}",direction="in"}}') > 0
    assert value(f'pandastack_sandbox_net_connections_total{{sandbox="{sid}"}}') >= 3
    assert value(f'pandastack_sandbox_net_refused_total{{sandbox="{sid}"}}') >= 3
    assert value(f'pandastack_sandbox_dns_queries_total{{sandbox="{sid}"}}') >= 5
    for reason in ("denied_range", "not_allowed", "no_address", "policy_changed"):
        assert value(f'pandastack_net_refused_total{{reason="{reason}"}}') >= 1, reason
    assert value('pandastack_dns_answers_total{rcode="nxdomain"}') >= 1


def test_policy_survives_a_daemon_restart(nd, net, denied_box):
    sb, g = denied_box
    nd.stop()
    nd.start()
    assert nd.request("GET", f"/v1/sandboxes/{sb['id']}/network").json()["egress"] == "deny"
    r = g.run("tcp", WEB_IP, 80, "--host", "allowed.test")
    assert refused(r), r
    put_net(nd, sb["id"], {"egress": "allow"})
    r = g.run("tcp", WEB_IP, 80, "--host", "allowed.test")
    assert served_by(r, "web", "allowed.test"), r
