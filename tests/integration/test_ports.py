"""Exposed ports on real sandboxes: a server in sandbox A's guest reached
through the daemon by path and by host name (--proxy-domain), with the access
token or the team's key and refused without them or with another team's key;
public ports; the credentials never reach the server; WebSocket; 50 MiB both
ways byte for byte with the daemon's memory bounded; a port nobody listens
on; sandbox B cannot reach A's server by any address.
"""
import base64
import hashlib
import json
import os
import pathlib
import re
import socket
import subprocess
import time

import pytest

from conftest import Daemon, PortServer, create_sandbox, exec_cmd, reap_vms, wait_for

from port_server import make_frame, pattern_bytes, read_frame

HERE = pathlib.Path(__file__).resolve().parent

DOMAIN = "sbx.test"
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def d(template, tmp_path_factory):
    root = tmp_path_factory.mktemp("ports")
    daemon = Daemon(root / "data", ["--pool-size", "0", "--proxy-domain", DOMAIN]).start()
    yield daemon
    daemon.stop()
    reap_vms(daemon.data_dir)


@pytest.fixture(scope="module")
def a(d, template):
    sb = create_sandbox(d, template, ttl_seconds=1800)
    srv = PortServer(d, sb["id"], 8000)
    yield sb, srv
    srv.stop()
    d.request("DELETE", f"/v1/sandboxes/{sb['id']}")


def host_request(d, host, path, headers=None, method="GET"):
    """A request for the Host form: to the daemon's address, Host set."""
    c = d.conn(timeout=60)
    c.request(method, path, headers={"Host": host, **(headers or {})})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, dict(r.getheaders()), body


def test_create_answer_has_a_token_and_the_domain(d, a):
    sb, _ = a
    assert sb["access_token"].startswith("pdt_") and len(sb["access_token"]) == 52
    assert sb["proxy_domain"] == DOMAIN
    assert sb["network"]["public_ports"] is False and sb["network"]["egress"] == "allow"
    got = d.request("GET", f"/v1/sandboxes/{sb['id']}").json()
    assert got["access_token"] == sb["access_token"]
    listed = d.request("GET", "/v1/sandboxes").json()["sandboxes"]
    assert all("access_token" not in s for s in listed)
    assert d.request("GET", "/healthz").json()["proxy_domain"] == DOMAIN


def test_access_by_path(d, a):
    sb, srv = a
    token = sb["access_token"]
    other = d.new_key("other-team")
    # the positive controls: the token (header or query) and the team's key
    r = srv.get("/echo?x=1", key=None, headers={"X-Access-Token": token})
    assert r.status == 200, r
    assert r.json()["target"] == "/echo?x=1"
    assert srv.get(f"/echo?access_token={token}&y=2", key=None).json()["target"] == "/echo?y=2"
    assert srv.get("/echo").status == 200  # the admin team's key: A's team
    # refused
    for key, headers, status in ((None, {}, 401),
                                 (None, {"X-Access-Token": "pdt_" + "0" * 48}, 401),
                                 (None, {"X-Access-Token": token[:-1]}, 401),
                                 ("pds_" + "0" * 48, {}, 401),
                                 (other, {}, 404)):
        r = srv.get("/echo", key=key, headers=headers)
        assert r.status == status, (key, headers, r)
    # a wrong key does not win over a good token
    assert srv.get("/echo", key=other, headers={"X-Access-Token": token}).status == 200


def port_metrics(d):
    """{label: value} of the daemon's exposed-port counters."""
    text = d.request("GET", "/metrics").body.decode()
    return {m.group(1): int(m.group(2)) for m in re.finditer(
        r'^pandastack_port_\w+\{\w+="(\w+)"\} (\d+)$', text, re.M)}


def test_metrics_count_port_traffic(d, a):
    sb, srv = a
    before = port_metrics(d)
    assert {"forwarded", "refused", "not_open", "to_sandbox", "from_sandbox"} <= before.keys()
    assert srv.get("/bytes/1000").status == 200
    r = d.request("PUT", f"/v1/sandboxes/{sb['id']}/ports/8000/sha256", b"x" * 300)
    assert r.status == 200 and r.json()["length"] == 300
    assert srv.get("/echo", key=None).status == 401
    assert d.request("GET", f"/v1/sandboxes/{sb['id']}/ports/8999/").status == 502
    after = port_metrics(d)
    delta = {k: after[k] - before[k] for k in before}
    assert delta["forwarded"] == 2 and delta["refused"] == 1 and delta["not_open"] == 1, delta
    # bytes are added when a request's state is freed, just after its answer
    wait_for(lambda: (lambda m: m["to_sandbox"] - before["to_sandbox"] == 300 and
                      m["from_sandbox"] - before["from_sandbox"] >= 1000)(port_metrics(d)),
             10, 0.2, "the port byte counters (300 up, /bytes/1000 and a JSON answer down)")


def test_python_http_server_in_the_background(d, a):
    """The documents' example: `python3 -m http.server` started with exec."""
    sb, srv = a
    pid = exec_cmd(d, sb["id"], "nohup python3 -m http.server 8001 >/dev/null 2>&1 & echo $!")[
        "stdout"].strip()
    path = f"/v1/sandboxes/{sb['id']}/ports/8001/"
    r = wait_for(lambda: (lambda r: r if r.status == 200 else None)(
        d.request("GET", path, key=None, headers={"X-Access-Token": sb["access_token"]})),
        60, 0.3, "http.server to answer")
    assert b"Directory listing for /" in r.body
    assert d.request("GET", path, key=None).status == 401
    assert d.request("GET", path, key=d.new_key("module-team")).status == 404
    exec_cmd(d, sb["id"], f"kill {pid}")


def test_credentials_never_reach_the_server(d, a):
    sb, srv = a
    c = d.conn(timeout=60)  # http.client: urllib would set its own Connection header
    c.request("GET", f"/v1/sandboxes/{sb['id']}/ports/8000/echo?access_token={sb['access_token']}"
                     "&%61ccess_token=x&keep=1",
              headers={"Authorization": f"Bearer {d.admin_key}",
                       "X-Access-Token": sb["access_token"], "Connection": "keep-alive, X-Hop",
                       "X-Hop": "1", "X-Forwarded-For": "6.6.6.6"})
    r = c.getresponse()
    assert r.status == 200
    seen = json.loads(r.read())
    c.close()
    names = {k.lower(): v for k, v in seen["headers"]}
    assert seen["target"] == "/echo?keep=1"
    assert "authorization" not in names and "x-access-token" not in names
    assert "x-hop" not in names
    assert names["x-forwarded-for"] == "127.0.0.1"
    assert names["x-forwarded-prefix"] == f"/v1/sandboxes/{sb['id']}/ports/8000"
    assert d.request("GET", "/healthz").status == 200  # the key used above is the admin's
    assert sb["access_token"] not in json.dumps(seen)


def test_access_by_host_name(d, a):
    sb, srv = a
    host = f"8000-{sb['id'].replace('_', '-')}.{DOMAIN}:{d.port}"
    status, _, body = host_request(d, host, "/echo?q=1",
                                   {"X-Access-Token": sb["access_token"]})
    assert status == 200, body
    assert json.loads(body)["target"] == "/echo?q=1"
    # the id's own spelling works too; the Host form wins over the API's routes
    status, _, body = host_request(d, f"8000-{sb['id']}.{DOMAIN}", "/v1/sandboxes",
                                   {"Authorization": f"Bearer {d.admin_key}"})
    assert status == 200 and json.loads(body)["target"] == "/v1/sandboxes"
    status, _, _ = host_request(d, host, "/echo")
    assert status == 401
    status, _, _ = host_request(d, host, "/echo",
                                {"Authorization": f"Bearer {d.new_key('host-team')}"})
    assert status == 404
    # another domain is the API, as always
    status, _, _ = host_request(d, f"8000-{sb['id']}.other.test", "/healthz",
                                {"Authorization": f"Bearer {d.admin_key}"})
    assert status == 200


def test_path_form_answers_are_sandboxed_and_headers_pass(d, a):
    sb, srv = a
    r = srv.get("/bytes/10")
    assert r.status == 200 and r.body == bytes(range(10))
    assert r.headers["Content-Length"] == "10"
    assert "sandbox" in r.headers["Content-Security-Policy"]
    assert "allow-same-origin" not in r.headers["Content-Security-Policy"]
    h = d.request("HEAD", f"/v1/sandboxes/{sb['id']}/ports/8000/x")
    assert h.status == 200 and h.headers["Content-Length"] == "1000" and h.body == b""


def test_cookies_stay_with_their_origin(d, a):
    """The path form shares the daemon's origin: the guest's Set-Cookie (and
    Clear-Site-Data) never reach the client, the client's Cookie never
    reaches the guest, and nosniff is the daemon's.  The host form, an
    origin of the sandbox's own, passes them (the positive control)."""
    sb, srv = a
    c = d.conn(timeout=60)
    c.request("GET", f"/v1/sandboxes/{sb['id']}/ports/8000/cookie",
              headers={"X-Access-Token": sb["access_token"], "Cookie": "session=s3cret",
                       "X-Client": "1"})
    r = c.getresponse()
    body = r.read()
    headers = r.getheaders()
    c.close()
    assert r.status == 200, body
    names = [k.lower() for k, _ in headers]
    assert "x-guest" in names  # the guest's own headers pass
    assert "set-cookie" not in names and "clear-site-data" not in names, headers
    assert [v for k, v in headers if k.lower() == "x-content-type-options"] == ["nosniff"]
    seen = {k.lower(): v for k, v in json.loads(body)["headers"]}
    assert seen.get("x-client") == "1" and "cookie" not in seen, seen
    host = f"8000-{sb['id'].replace('_', '-')}.{DOMAIN}:{d.port}"
    status, hh, body = host_request(d, host, "/cookie",
                                    {"X-Access-Token": sb["access_token"],
                                     "Cookie": "session=s3cret"})
    assert status == 200
    assert hh.get("Set-Cookie") == "x=1; Path=/" and hh.get("X-Content-Type-Options") == "none"
    seen = {k.lower(): v for k, v in json.loads(body)["headers"]}
    assert seen.get("cookie") == "session=s3cret"


def test_port_not_open(d, a):
    sb, _ = a
    r = d.request("GET", f"/v1/sandboxes/{sb['id']}/ports/8999/")
    assert r.status == 502 and r.error_code() == "port_not_open", r
    r = d.request("GET", f"/v1/sandboxes/{sb['id']}/ports/0/")
    assert r.status == 404


def test_public_ports(d, template):
    sb = create_sandbox(d, template, network={"public_ports": True})
    srv = PortServer(d, sb["id"], 8000)
    try:
        assert sb["network"]["public_ports"] is True
        assert srv.get("/echo", key=None).status == 200
        assert srv.get("/echo", key=d.new_key("public-team")).status == 200
    finally:
        srv.stop()
        d.request("DELETE", f"/v1/sandboxes/{sb['id']}")
    r = d.request("POST", "/v1/sandboxes", {"template": template,
                                            "network": {"public_ports": "yes"}})
    assert r.status == 400 and r.error_code() == "invalid_field"


def ws_connect(d, path, extra=b""):
    s = socket.create_connection(("127.0.0.1", d.port), timeout=60)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Authorization: Bearer {d.admin_key}\r\n\r\n").encode() + extra)
    f = s.makefile("rb")
    status = f.readline()
    headers = {}
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    return s, f, status, headers, key


def test_websocket_round_trips(d, a):
    sb, _ = a
    s, f, status, headers, key = ws_connect(
        d, f"/v1/sandboxes/{sb['id']}/ports/8000/ws", make_frame(1, b"early", mask=b"abcd"))
    try:
        assert b" 101 " in status, status
        assert headers["upgrade"].lower() == "websocket"
        accept = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        assert headers["sec-websocket-accept"] == accept
        assert read_frame(f) == (1, b"early")
        for size in (5, 70000, 300000):
            msg = os.urandom(size)
            s.sendall(make_frame(2, msg, mask=b"wxyz"))
            assert read_frame(f) == (2, msg)
        s.sendall(make_frame(8, b"", mask=b"abcd"))
        assert read_frame(f) == (8, b"")
    finally:
        s.close()


def test_large_transfers_are_exact_with_bounded_memory(d, a):
    sb, srv = a
    n = 50 * MIB
    want = hashlib.sha256()
    for b in pattern_bytes(n):
        want.update(b)
    rss0 = d.rss_kib()
    peak = [rss0]
    for path in (f"/bytes/{n}", f"/chunked/{n}"):
        c = d.conn(timeout=300)
        c.request("GET", f"/v1/sandboxes/{sb['id']}/ports/8000{path}",
                  headers={"X-Access-Token": sb["access_token"]})
        r = c.getresponse()
        assert r.status == 200
        h, got = hashlib.sha256(), 0
        while True:
            b = r.read(1024 * 1024)
            if not b:
                break
            h.update(b)
            got += len(b)
            peak[0] = max(peak[0], d.rss_kib())
        c.close()
        assert got == n and h.hexdigest() == want.hexdigest(), path
    # upload: a generator, sent chunked, and a Content-Length body
    data = os.urandom(n)
    for chunked in (True, False):
        c = d.conn(timeout=300)
        c.putrequest("PUT", f"/v1/sandboxes/{sb['id']}/ports/8000/sha256")
        c.putheader("X-Access-Token", sb["access_token"])
        c.putheader("Transfer-Encoding" if chunked else "Content-Length",
                    "chunked" if chunked else str(n))
        c.endheaders()
        for off in range(0, n, MIB):
            piece = data[off:off + MIB]
            c.send(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            peak[0] = max(peak[0], d.rss_kib())
        if chunked:
            c.send(b"0\r\n\r\n")
        r = c.getresponse()
        body = json.loads(r.read())
        c.close()
        assert r.status == 200, body
        assert body == {"sha256": hashlib.sha256(data).hexdigest(), "length": n,
                        "chunked": chunked}
    # 200 MiB went through; a proxy that held a body whole would have grown by 50
    assert (peak[0] - rss0) < 24 * 1024, (rss0, peak[0])


def test_cli_url(d, a):
    sb, _ = a
    env = dict(os.environ, PANDASTACK_API_URL=f"http://127.0.0.1:{d.port}",
               PANDASTACK_API_KEY=d.admin_key)
    cli = str(pathlib.Path(__file__).resolve().parents[2] / "build" / "pandastack")
    out = subprocess.run([cli, "sandbox", "url", sb["id"], "8000", "--path", "/echo", "--token"],
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    host = f"8000-{sb['id'].replace('_', '-')}.{DOMAIN}:{d.port}"
    assert out == f"http://{host}/echo?access_token={sb['access_token']}"
    status, _, body = host_request(d, host, out.split(host, 1)[1])
    assert status == 200 and json.loads(body)["target"] == "/echo"


def host_addresses():
    """The host's IPv4 addresses (its own namespace): B must not reach A by them either."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True,
                         check=True).stdout
    return sorted({line.split()[3].split("/")[0] for line in out.splitlines()})


def test_b_cannot_reach_a(d, a, template):
    """B tries A's port 8000 at every address A could have from B's side: the
    guest address both share, the host side of its NIC and its resolver,
    loopback, the host's own addresses.  A's log must not see B's marker; the
    control sends the same marker through the daemon and sees it logged."""
    sb_a, srv = a
    b = create_sandbox(d, template)
    try:
        assert exec_cmd(d, b["id"], "grep -q 10.0.2.15 /proc/net/fib_trie && echo up")[
            "stdout"] == "up\n"  # B is online: its attempts are real ones
        targets = ["10.0.2.15", "10.0.2.2", "10.0.2.3", "127.0.0.1"] + host_addresses()
        probe = ("python3 -c \"import socket,sys\n"
                 "for h in sys.argv[1:]:\n"
                 "  try:\n"
                 "    s = socket.create_connection((h, 8000), 3)\n"
                 "    s.sendall(b'GET /echo?from-b HTTP/1.0\\r\\n\\r\\n'); s.settimeout(2)\n"
                 "    print(h, 'connected', s.recv(100))\n"
                 "  except OSError as e: print(h, 'refused', e)\" " + " ".join(targets))
        out = exec_cmd(d, b["id"], probe)["stdout"]
        assert "10.0.2.15 refused" in out, out  # its own address: nothing listens in B
        assert "HTTP/1" not in out, out         # no server answered B anywhere
        time.sleep(1)
        assert "from-b" not in srv.log()
        # the control: the same marker through the daemon reaches A's server and its log
        assert srv.get("/echo?from-b").status == 200
        wait_for(lambda: "from-b" in srv.log(), 10, 0.5, "A's log to show the marker")
    finally:
        d.request("DELETE", f"/v1/sandboxes/{b['id']}")
