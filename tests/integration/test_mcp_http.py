"""POST /mcp without guests: the daemon's MCP tools reach its own REST API
over loopback with the caller's key, over plain HTTP and over HTTPS (where
the loopback trusts exactly the daemon's own certificate, whatever its
name).  The full tool set on real guests is tested with the official MCP
SDK's client in tests/mcp (make test-agents)."""
import http.client
import json
import ssl
import subprocess
import time

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "pytest", "version": "1"}}}


def post(conn, key, msg, sid=None):
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    if sid:
        headers["Mcp-Session-Id"] = sid
    conn.request("POST", "/mcp", json.dumps(msg), headers)
    r = conn.getresponse()
    body = r.read()
    return r.status, r.getheader("Mcp-Session-Id"), json.loads(body) if body else None


def call(conn, key, sid, name, args):
    status, _, msg = post(conn, key, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                      "params": {"name": name, "arguments": args}}, sid)
    assert status == 200, msg
    return msg["result"]


def tools_reach_the_api(conn, daemon):
    status, sid, msg = post(conn, daemon.admin_key, INIT)
    assert status == 200 and sid and msg["result"]["protocolVersion"] == "2025-11-25"
    # control: an API error comes back through the same path as a tool error
    res = call(conn, daemon.admin_key, sid, "exec",
               {"sandbox_id": "sbx_00000000000000000000", "cmd": "true"})
    assert res["isError"] is True
    assert "sandbox_not_found" in res["content"][0]["text"]
    res = call(conn, daemon.admin_key, sid, "list_sandboxes", {})
    assert res.get("isError") is not True, res
    assert res["structuredContent"] == {"sandboxes": []}
    # the tool's own API request is in the log, made with the caller's team
    # (its line is written when that connection completes: wait for it)
    line = "method=GET route=/v1/sandboxes status=200"
    deadline = time.time() + 10
    while line not in daemon.log() and time.time() < deadline:
        time.sleep(0.05)
    assert line in daemon.log()


def test_mcp_tools_over_http_loopback(api_daemon):
    tools_reach_the_api(api_daemon.conn(), api_daemon)


def test_mcp_tools_over_https_trust_the_daemons_own_key(daemon_factory, tmp_root):
    cert, key = tmp_root / "cert.pem", tmp_root / "key.pem"
    # a certificate for another name: ordinary verification would refuse it
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=not-this-host.invalid", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    (tmp_root / "cache").mkdir()
    d = daemon_factory("tls", ["--pool-size", "0", "--tls-cert", str(cert), "--tls-key", str(key)],
                       cache=str(tmp_root / "cache"))
    conn = http.client.HTTPSConnection("127.0.0.1", d.port, timeout=60,
                                       context=ssl._create_unverified_context())
    tools_reach_the_api(conn, d)


def post_from(conn, key, origin, host=None):
    """initialize sent as a browser page of origin would (Host: host)."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream", "Origin": origin}
    if host:
        headers["Host"] = host
    conn.request("POST", "/mcp", json.dumps(INIT), headers)
    r = conn.getresponse()
    r.read()
    return r.status


def test_mcp_origin_is_an_allowed_one_never_the_host(api_daemon):
    """DNS rebinding: a page on rebind.example, its name rebound to the
    daemon's address, sends its own name as Host and as Origin alike; the
    check compares the Origin with the daemon's own address (and
    --mcp-allowed-origins), never with Host."""
    d, port = api_daemon, api_daemon.port
    # positive controls: the daemon's own origin (the dashboard's: it serves
    # it), as an address and as localhost, with and without a matching Host
    assert post_from(d.conn(), d.admin_key, f"http://127.0.0.1:{port}") == 200
    assert post_from(d.conn(), d.admin_key, f"http://localhost:{port}",
                     host=f"localhost:{port}") == 200
    # the rebinding page: Host and Origin agree, and it is refused
    assert post_from(d.conn(), d.admin_key, "http://rebind.example",
                     host="rebind.example") == 403
    assert post_from(d.conn(), d.admin_key, f"http://rebind.example:{port}",
                     host=f"rebind.example:{port}") == 403
    # the daemon's own origin in another scheme or port is not its own
    assert post_from(d.conn(), d.admin_key, f"https://127.0.0.1:{port}") == 403
    assert post_from(d.conn(), d.admin_key, f"http://127.0.0.1:{port + 1}") == 403
    assert post_from(d.conn(), d.admin_key, "null") == 403


def test_mcp_allowed_origins_option(daemon_factory, tmp_root):
    (tmp_root / "cache").mkdir()
    d = daemon_factory("origins", ["--pool-size", "0", "--mcp-allowed-origins",
                                   "https://dash.example, http://tools.example:8443"],
                       cache=str(tmp_root / "cache"))
    assert post_from(d.conn(), d.admin_key, "https://dash.example",
                     host="dash.example") == 200
    assert post_from(d.conn(), d.admin_key, "http://tools.example:8443") == 200
    assert post_from(d.conn(), d.admin_key, f"http://127.0.0.1:{d.port}") == 200
    assert post_from(d.conn(), d.admin_key, "http://dash.example", host="dash.example") == 403
    assert post_from(d.conn(), d.admin_key, "http://rebind.example",
                     host="rebind.example") == 403
