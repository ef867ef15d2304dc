"""The daemon's HTTP API without VMs: auth on every route, keys and teams,
request validation, error shapes, routes against docs/openapi.yaml,
health, metrics, start-up rules."""
import datetime
import http.client
import json
import os
import re
import stat
import subprocess
import time

import pytest
import yaml

from conftest import DAEMON, ROOT, Daemon, wait_for

FAKE_SBX = "sbx_0123456789abcdef0123"


def served_routes():
    out = subprocess.check_output([str(DAEMON), "--print-routes"], text=True)
    return sorted(tuple(line.split(" ", 1)) for line in out.splitlines() if line)


def public_routes():
    """Routes docs/openapi.yaml marks as needing no key (security: [])."""
    spec = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
    return sorted((m.upper(), p) for p, ops in spec["paths"].items() for m, op in ops.items()
                  if isinstance(op, dict) and op.get("security") == [])


def keyed_routes():
    return [r for r in served_routes() if r not in public_routes()]


def concrete(pattern):
    return pattern.replace("{id}", FAKE_SBX if "sandboxes" in pattern else "key_0000000000000000") \
                  .replace("{name}", "base").replace("{ctx}", "ctx_0123456789abcdef0123") \
                  .replace("{port}", "8000").replace("{path}", "x")


def test_routes_match_openapi():
    spec = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
    documented = sorted((m.upper(), p) for p, ops in spec["paths"].items()
                        for m in ops
                        if m in ("get", "put", "post", "delete", "patch", "head", "options"))
    served = served_routes()
    assert served == documented, set(served) ^ set(documented)


def test_api_md_mentions_every_route():
    doc = (ROOT / "docs" / "api.md").read_text()
    for method, pattern in served_routes():
        assert f"`{method} {pattern}" in doc, (method, pattern)


def test_only_the_dashboard_files_need_no_key():
    assert public_routes() == [("GET", "/"), ("GET", "/ui/{file}")]


@pytest.mark.parametrize("route", keyed_routes(), ids=lambda r: f"{r[0]} {r[1]}")
def test_every_route_needs_a_key(api_daemon, route):
    method, pattern = route
    path = concrete(pattern) + ("?path=/x" if pattern.endswith("/fs") or "/fs/" in pattern else "")
    body = b"{}" if method in ("POST", "PUT") else None
    for key, headers in ((None, {}),
                         ("pds_" + "0" * 48, {}),                      # well-formed, unknown
                         ("not-a-key", {}),                            # malformed
                         (None, {"Authorization": "Basic YWRtaW46eA=="}),
                         (None, {"Authorization": "Bearer"}),
                         (None, {"Authorization": f"Bearer {api_daemon.admin_key} extra"})):
        r = api_daemon.request(method, path, body, key=key, headers=headers)
        assert r.status == 401, (key, headers, r)
        if method == "HEAD":
            continue  # an answer to HEAD has no body
        assert r.error_code() == "unauthorized"
        assert set(r.json()["error"]) == {"code", "message"}


def test_admin_routes_refuse_team_keys(api_daemon):
    k = api_daemon.new_key("team-a")
    r = api_daemon.request("GET", "/metrics", key=k)
    assert r.status == 403 and r.error_code() == "forbidden"
    r = api_daemon.request("POST", "/v1/templates/base/build", {}, key=k)
    assert r.status == 403 and r.error_code() == "forbidden"


def test_admin_key_file(api_daemon):
    f = api_daemon.data_dir / "admin.key"
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    key = f.read_text().strip()
    assert re.fullmatch(r"pds_[0-9a-f]{48}", key)
    # never printed (stdout and logs are kept by service managers): only
    # where the file is
    printed = api_daemon.out_path.read_text()
    assert key not in printed and str(f) in printed, printed
    assert key not in api_daemon.log()
    # the database stores hashes only
    db = (api_daemon.data_dir / "pandastack.db").read_bytes()
    assert key.encode() not in db
    assert stat.S_IMODE((api_daemon.data_dir / "pandastack.db").stat().st_mode) == 0o600


def test_restart_keeps_keys_and_prints_nothing(daemon_factory, tmp_root):
    (tmp_root / "cache").mkdir()
    d = daemon_factory("keep", ["--pool-size", "0"], cache=str(tmp_root / "cache"))
    key = d.admin_key
    team_key = d.new_key("t1")
    d.stop()
    printed_before = d.out_path.read_text()
    d.start()
    assert d.admin_key == key
    assert d.out_path.read_text() == printed_before      # printed once, on the first start
    assert d.request("GET", "/v1/keys", key=team_key).status == 200


def test_second_daemon_on_same_data_dir_refused(api_daemon):
    p = subprocess.run([str(DAEMON), "--listen", "127.0.0.1:0", "--data-dir",
                        str(api_daemon.data_dir), "--cache", "/nonexistent", "--accel", "tcg"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "another pandastackd" in p.stderr


def test_bad_flags_exit_2():
    p = subprocess.run([str(DAEMON), "--pool-size", "x"], capture_output=True, text=True)
    assert p.returncode == 2 and "--pool-size" in p.stderr
    p = subprocess.run([str(DAEMON), "--nope"], capture_output=True, text=True)
    assert p.returncode == 2
    p = subprocess.run([str(DAEMON), "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--max-sandboxes-per-team" in p.stdout


def test_healthz(api_daemon):
    r = api_daemon.request("GET", "/healthz")
    assert r.status == 200
    h = r.json()
    assert h["status"] == "ok" and h["accelerator"] in ("kvm", "tcg")
    assert h["sandboxes_running"] == 0


def test_metrics_text(api_daemon):
    api_daemon.request("GET", "/v1/sandboxes/" + FAKE_SBX)            # a 404 to count
    r = api_daemon.request("GET", "/metrics")
    assert r.status == 200
    assert r.headers["Content-Type"].startswith("text/plain")
    text = r.body.decode()
    for name in ("pandastack_sandboxes{status=\"running\"}",
                 "pandastack_sandbox_creates_total{result=\"ok\"}",
                 "pandastack_exec_duration_seconds_bucket{le=\"+Inf\"}",
                 "pandastack_http_errors_total"):
        assert name in text, name
    m = re.search(r'pandastack_http_responses_total\{status="404"\} (\d+)', text)
    assert m and int(m.group(1)) >= 1
    # every sample line is "name{labels} value"
    for line in text.splitlines():
        if line and not line.startswith("#"):
            assert re.fullmatch(r'[a-z_]+(\{[a-z_]+="[^"]*"\})? [0-9.e+-]+', line), line


def test_unknown_route_and_method(api_daemon):
    r = api_daemon.request("GET", "/v1/nothing")
    assert r.status == 404 and r.error_code() == "not_found"
    r = api_daemon.request("PATCH", "/v1/sandboxes")
    assert r.status == 405 and r.error_code() == "method_not_allowed"
    r = api_daemon.request("GET", "/v1/sandboxes/")
    assert r.status == 404


def test_keys_and_teams(api_daemon):
    d = api_daemon
    r = d.request("POST", "/v1/keys", {"name": "ci", "team": "alpha"})
    assert r.status == 201
    k = r.json()
    assert re.fullmatch(r"pds_[0-9a-f]{48}", k["key"]) and k["team"] == "alpha"
    assert k["admin"] is False and re.fullmatch(r"key_[0-9a-f]{16}", k["id"])
    alpha = k["key"]
    # a team key makes keys for its own team only
    r = d.request("POST", "/v1/keys", {"name": "x"}, key=alpha)
    assert r.status == 201 and r.json()["team"] == "alpha"
    second = r.json()
    r = d.request("POST", "/v1/keys", {"name": "x", "team": "beta"}, key=alpha)
    assert r.status == 403 and r.error_code() == "forbidden"
    # listing: the team's keys only, never secrets
    listed = d.request("GET", "/v1/keys", key=alpha).json()["keys"]
    assert {x["team"] for x in listed} == {"alpha"} and len(listed) >= 2
    assert all("key" not in x for x in listed)
    everything = d.request("GET", "/v1/keys").json()["keys"]
    assert {"admin", "alpha"} <= {x["team"] for x in everything}
    # another team's key is invisible
    beta = d.new_key("beta")
    r = d.request("DELETE", f"/v1/keys/{second['id']}", key=beta)
    assert r.status == 404 and r.error_code() == "key_not_found"
    # admin keys cannot be deleted
    admin_id = [x for x in everything if x["admin"]][0]["id"]
    r = d.request("DELETE", f"/v1/keys/{admin_id}")
    assert r.status == 409 and r.error_code() == "admin_key"
    # a deleted key stops working at once
    assert d.request("DELETE", f"/v1/keys/{second['id']}", key=alpha).status == 204
    assert d.request("GET", "/v1/keys", key=second["key"]).status == 401
    assert d.request("DELETE", f"/v1/keys/{second['id']}", key=alpha).status == 404


def test_key_last_used_at(api_daemon):
    d = api_daemon
    made = d.request("POST", "/v1/keys", {"name": "used", "team": "gamma"}).json()
    assert made["last_used_at"] is None

    def listed():
        return {k["id"]: k for k in d.request("GET", "/v1/keys").json()["keys"]}[made["id"]]

    assert listed()["last_used_at"] is None
    before = time.time()
    assert d.request("GET", "/healthz", key=made["key"]).status == 200
    used = listed()["last_used_at"]
    assert used is not None
    t = datetime.datetime.strptime(used, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    assert before - 2 <= t <= time.time() + 2, (used, before)
    # written at most once a minute: a second use right after keeps the time
    assert d.request("GET", "/healthz", key=made["key"]).status == 200
    assert listed()["last_used_at"] == used
    # a failed call with another key does not touch this one
    assert d.request("GET", "/healthz", key="pds_" + "0" * 48).status == 401
    assert listed()["last_used_at"] == used


def test_api_answers_carry_safe_headers(api_daemon):
    for key in ("admin", None):
        r = api_daemon.request("GET", "/healthz", key=key)
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["Cache-Control"] == "no-store"
        assert r.headers["Content-Security-Policy"] == \
            "default-src 'none'; frame-ancestors 'none'; sandbox"


@pytest.mark.parametrize("body,code", [
    (b"not json", "invalid_json"),
    (b"", "invalid_json"),
    (b"[1]", "invalid_json"),
    (b'{"template": "base", "template": "x"}', "invalid_json"),
    ({}, "missing_field"),
    ({"template": 42}, "invalid_field"),
    ({"template": "Base!"}, "invalid_field"),
    ({"template": "base", "ttl_seconds": "60"}, "invalid_field"),
    ({"template": "base", "ttl_seconds": 0}, "invalid_field"),
    ({"template": "base", "ttl_seconds": 10 ** 9}, "invalid_field"),
    ({"template": "base", "env": {"1BAD": "x"}}, "invalid_field"),
    ({"template": "base", "env": {"A": 1}}, "invalid_field"),
    ({"template": "base", "metadata": ["x"]}, "invalid_field"),
    ({"template": "base", "cpus": 2}, "unknown_field"),
])
def test_create_bad_bodies(api_daemon, body, code):
    r = api_daemon.request("POST", "/v1/sandboxes", body)
    assert r.status == 400, r
    assert r.error_code() == code
    assert api_daemon.request("GET", "/v1/sandboxes").json()["sandboxes"] == []


def test_create_unknown_template(api_daemon):
    r = api_daemon.request("POST", "/v1/sandboxes", {"template": "no-such-template"})
    assert r.status == 404 and r.error_code() == "template_not_found"
    assert api_daemon.request("GET", "/v1/sandboxes").json()["sandboxes"] == []
    assert list((api_daemon.data_dir / "sandboxes").iterdir()) == []


def test_body_too_large(api_daemon):
    big = b'{"template": "' + b"a" * (70 * 1024) + b'"}'
    r = api_daemon.request("POST", "/v1/sandboxes", big)
    assert r.status == 413 and r.error_code() == "body_too_large"
    # chunked (no Content-Length): read up to the cap, then 413
    c = api_daemon.conn()
    c.putrequest("POST", "/v1/keys")
    c.putheader("Authorization", f"Bearer {api_daemon.admin_key}")
    c.putheader("Transfer-Encoding", "chunked")
    c.endheaders()
    chunk = b"x" * 8192
    for _ in range(10):
        c.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    c.send(b"0\r\n\r\n")
    resp = c.getresponse()
    assert resp.status == 413
    assert json.loads(resp.read())["error"]["code"] == "body_too_large"
    c.close()


def test_upload_announced_over_cap(daemon_factory, tmp_root):
    (tmp_root / "cache").mkdir()
    d = daemon_factory("cap", ["--pool-size", "0", "--max-upload", "1000"],
                       cache=str(tmp_root / "cache"))
    c = d.conn()
    c.putrequest("PUT", f"/v1/sandboxes/{FAKE_SBX}/fs?path=/x")
    c.putheader("Authorization", f"Bearer {d.admin_key}")
    c.putheader("Content-Length", "1001")
    c.putheader("Expect", "100-continue")
    c.endheaders()
    resp = c.getresponse()          # answered before any body byte is sent
    assert resp.status == 413
    assert json.loads(resp.read())["error"]["code"] == "body_too_large"
    c.close()


def test_sandbox_routes_on_missing_sandbox(api_daemon):
    d = api_daemon
    for method, path, body in [
        ("GET", f"/v1/sandboxes/{FAKE_SBX}", None),
        ("DELETE", f"/v1/sandboxes/{FAKE_SBX}", None),
        ("POST", f"/v1/sandboxes/{FAKE_SBX}/ttl", {"ttl_seconds": 10}),
        ("POST", f"/v1/sandboxes/{FAKE_SBX}/exec", {"cmd": "true"}),
        ("POST", f"/v1/sandboxes/{FAKE_SBX}/exec_stream", {"cmd": "true"}),
        ("GET", f"/v1/sandboxes/{FAKE_SBX}/fs?path=/etc/hostname", None),
        ("PUT", f"/v1/sandboxes/{FAKE_SBX}/fs?path=/tmp/x", b"data"),
        ("GET", f"/v1/sandboxes/{FAKE_SBX}/fs/stat?path=/", None),
        ("GET", f"/v1/sandboxes/{FAKE_SBX}/fs/list?path=/", None),
        ("POST", f"/v1/sandboxes/{FAKE_SBX}/fs/mkdir", {"path": "/tmp/d"}),
        ("GET", "/v1/sandboxes/not-an-id", None),
    ]:
        r = d.request(method, path, body)
        assert r.status == 404, (method, path, r)
        assert r.error_code() == "sandbox_not_found"


def test_bad_inputs_before_the_sandbox(api_daemon):
    d = api_daemon
    base = f"/v1/sandboxes/{FAKE_SBX}"
    cases = [
        ("POST", base + "/exec", {"cmd": ""}, 400, "invalid_field"),
        ("POST", base + "/exec", {"cmd": "ls", "timeout_seconds": -1}, 400, "invalid_field"),
        ("POST", base + "/exec", {"cmd": "ls", "cwd": "relative"}, 400, "invalid_field"),
        ("POST", base + "/exec", {"command": "ls"}, 400, "unknown_field"),
        ("POST", base + "/exec_stream", b"{", 400, "invalid_json"),
        ("POST", base + "/ttl", {"ttl_seconds": 0}, 400, "invalid_field"),
        ("POST", base + "/ttl", {}, 400, "missing_field"),
        ("GET", base + "/fs", None, 400, "invalid_path"),
        ("GET", base + "/fs?path=relative", None, 400, "invalid_path"),
        ("PUT", base + "/fs?path=", b"x", 400, "invalid_path"),
        ("GET", base + "/fs/stat?path=%0A", None, 400, "invalid_path"),
        ("DELETE", base + "/fs?path=/x&recursive=maybe", None, 400, "invalid_query"),
        # a NUL byte would cut the path short and name another file
        ("DELETE", base + "/fs?path=/workspace/f.txt%00ignored", None, 400, "invalid_path"),
        ("PUT", base + "/fs?path=/workspace/a%00b", b"x", 400, "invalid_path"),
        ("GET", base + "/fs/stat?path=/etc/passwd%00.txt", None, 400, "invalid_path"),
        ("GET", base + "/fs?path=/etc/passwd%00", None, 400, "invalid_path"),
        ("GET", base + "/fs/list?path=/workspace&bogus=1", None, 400, "invalid_query"),
        ("PUT", base + "/fs?path=/workspace/x&recursive=true", b"x", 400, "invalid_query"),
        ("GET", base + "/fs?path=/workspace/x&path=/tmp/y", None, 400, "invalid_query"),
        ("DELETE", base + "/fs?path=/&recursive=true", None, 400, "invalid_path"),
        ("POST", base + "/fs/mkdir", {"path": "rel"}, 400, "invalid_path"),
        ("GET", "/v1/sandboxes?colour=red", None, 400, "invalid_query"),
        ("GET", "/v1/sandboxes?status=sleeping", None, 400, "invalid_query"),
        ("GET", "/v1/sandboxes?status=running&status=stopped", None, 400, "invalid_query"),
        ("GET", "/v1/sandboxes?metadata.a%00b=c", None, 400, "invalid_query"),
        # in the path it would cut the route short: /v1/sandboxes/ID%00/x is
        # not /v1/sandboxes/ID
        ("DELETE", base + "%00/anything", None, 404, "not_found"),
        ("GET", "/v1/sandboxes%00", None, 404, "not_found"),
        ("GET", "/healthz%00.json", None, 404, "not_found"),
        ("POST", "/v1/keys", {"name": ""}, 400, "invalid_field"),
        ("POST", "/v1/keys", {"name": "x", "team": "Bad Team"}, 400, "invalid_field"),
        ("POST", "/v1/templates/base/build", {"force": "yes"}, 400, "invalid_field"),
        ("POST", "/v1/templates/no-recipe/build", {}, 404, "template_not_found"),
    ]
    for method, path, body, status, code in cases:
        r = d.request(method, path, body)
        assert r.status == status, (method, path, body, r)
        assert r.error_code() == code, (method, path, body, r)


def test_every_route_refuses_an_unknown_query_parameter(api_daemon):
    d = api_daemon
    # positive controls: without the option, or with a parameter the route
    # takes, the same calls pass the query check
    assert d.request("GET", "/v1/keys").status == 200
    assert d.request("GET", "/v1/sandboxes?status=running").status == 200
    r = d.request("DELETE", f"/v1/sandboxes/{FAKE_SBX}")
    assert r.status == 404 and r.error_code() == "sandbox_not_found", r
    checked = 0
    for method, pattern in keyed_routes():
        if "/ports/" in pattern:
            continue  # the query belongs to the sandbox's own server
        path = concrete(pattern).replace("{cid}", "cmd_0123456789abcdef0123")
        path += ("&" if "?" in path else "?") + "force=true"
        r = d.request(method, path, {} if method in ("POST", "PUT") else None)
        assert r.status == 400 and r.error_code() == "invalid_query", (method, path, r)
        msg = r.json()["error"]["message"]
        assert "'force'" in msg and pattern in msg, (method, path, msg)
        checked += 1
    assert checked >= 40
    # a route that takes parameters names them
    r = d.request("GET", "/v1/snapshots?sandbox=x")
    assert r.status == 400 and "takes only sandbox_id" in r.json()["error"]["message"], r


def test_list_filters(api_daemon):
    r = api_daemon.request("GET", "/v1/sandboxes?status=running&metadata.user=alice")
    assert r.status == 200 and r.json() == {"sandboxes": []}
    # a filter's key follows the rule of metadata keys
    for q in ("metadata.x'%20OR%201=1--=a", "metadata.%24=1", "metadata.=1"):
        r = api_daemon.request("GET", "/v1/sandboxes?" + q)
        assert r.status == 400 and r.error_code() == "invalid_query", (q, r)


def raw_exchange(d, head, body=b""):
    """Send a hand-written request; return everything the daemon answers
    until it closes the connection (or 10 s pass) and whether it closed."""
    import socket
    s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
    s.sendall(head.encode() + body)
    got, closed = b"", False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            got += chunk
    except socket.timeout:
        pass
    s.close()
    return got, closed


def test_ambiguous_framing_refused_and_closed(api_daemon):
    d = api_daemon
    auth = f"Authorization: Bearer {d.admin_key}\r\n"
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    # positive control: one Content-Length is served (201), and the key it
    # names is made (the probe below sees whether a key was made); plain
    # HTTP carries one request per connection, so the pipelined one is not
    # answered on it
    body = b'{"name":"ok"}'
    got, closed = raw_exchange(d, f"POST /v1/keys HTTP/1.1\r\nHost: x\r\n{auth}"
                                  f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                                  "Connection: keep-alive\r\n\r\n", body + smuggled)
    assert got.startswith(b"HTTP/1.1 201") and got.count(b"HTTP/1.1 ") == 1 and closed, got[:300]
    assert b"\r\nConnection: close\r\n" in got
    cases = [
        ("Content-Length: 2\r\nContent-Length: 15\r\n", b'{"name":"smug"}'),
        (f"Content-Length: 15\r\nTransfer-Encoding: chunked\r\n", b'{"name":"smug"}'),
        (f"Content-Length: 15\r\n{auth}", b'{"name":"smug"}'),  # Authorization twice
        ("Content-Length: 15\r\nHost: y\r\n", b'{"name":"smug"}'),  # Host twice
    ]
    for extra, b in cases:
        got, closed = raw_exchange(d, f"POST /v1/keys HTTP/1.1\r\nHost: x\r\n{auth}"
                                      f"Content-Type: application/json\r\n{extra}\r\n", b + smuggled)
        assert got.startswith(b"HTTP/1.1 400"), (extra, got[:300])
        assert b'"invalid_header"' in got, (extra, got[:400])
        assert got.count(b"HTTP/1.1 ") == 1 and closed, (extra, got)
    names = [k["name"] for k in d.request("GET", "/v1/keys").json()["keys"]]
    assert "smug" not in names and "ok" in names


def test_templates_list_empty_cache(api_daemon):
    r = api_daemon.request("GET", "/v1/templates")
    assert r.status == 200 and r.json() == {"templates": []}


def test_request_log_lines(api_daemon):
    api_daemon.request("GET", "/healthz")
    lines = [l for l in api_daemon.log().splitlines() if "event=http.request" in l]
    assert lines
    assert all(re.match(r"ts=\S+ level=\w+ event=http\.request method=\w+ route=\S+ status=\d+", l)
               for l in lines)
    # secrets never reach the log
    assert api_daemon.admin_key not in api_daemon.log()


def test_many_concurrent_connections(api_daemon):
    """Thread per connection: idle connections do not block others."""
    idle = [api_daemon.conn() for _ in range(20)]
    for c in idle:
        c.connect()
    try:
        r = api_daemon.request("GET", "/healthz", timeout=10)
        assert r.status == 200
    finally:
        for c in idle:
            c.close()


def test_nul_in_json_named_plainly(api_daemon):
    r = api_daemon.request("POST", f"/v1/sandboxes/{FAKE_SBX}/exec", b'{"cmd": "a\\u0000b"}')
    assert r.status == 400 and r.error_code() == "invalid_json"
    msg = r.json()["error"]["message"]
    assert "\\u0000" in msg and "JSON_ALLOW_NUL" not in msg, msg


def test_request_log_names_the_sandbox(api_daemon):
    api_daemon.request("GET", f"/v1/sandboxes/{FAKE_SBX}")

    def lines():
        return [l for l in api_daemon.log().splitlines()
                if "event=http.request" in l and "route=/v1/sandboxes/{id} " in l]
    # the line is written once the answer went out: it may lag the answer
    wait_for(lambda: any(f'sandbox="{FAKE_SBX}"' in l for l in lines()), timeout=5,
             what="the request's log line")
    assert all(re.search(r' sandbox="[^"]*" ', l) for l in lines()), lines()[-3:]


def test_malformed_framing_answers_json(api_daemon):
    """Every framing error is the API's JSON with the right status and the
    connection closed, before any handler runs (the front's own check)."""
    d = api_daemon
    # positive control: a well-formed request through the same probe gets
    # its answer (so the probe sees a real answer and the close after it)
    got, closed = raw_exchange(d, f"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                                  f"Authorization: Bearer {d.admin_key}\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 200") and closed, got[:200]
    cases = [
        ("POST /v1/keys HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400,
         "invalid_header"),
        ("POST /v1/keys HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400,
         "invalid_header"),
        ("POST /v1/keys HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
         413, "body_too_large"),
        ("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + "a" * 200_000 + "\r\n\r\n", 431,
         "headers_too_large"),
        ("GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400, "invalid_header"),
        ("GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400, "invalid_header"),
        ("GET /healthz HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400, "invalid_header"),
        ("GET /healthz HTTP/2.0\r\n\r\n", 400, "invalid_request"),
        ("\x16\x03\x01\x00\xa5\x01\x00\x00", 400, "invalid_request"),  # TLS to plain HTTP
    ]
    for head, status, code in cases:
        got, closed = raw_exchange(d, head)
        assert got.startswith(f"HTTP/1.1 {status} ".encode()), (head[:60], got[:300])
        assert closed, head[:60]
        top, _, body = got.partition(b"\r\n\r\n")
        top += b"\r\n"
        assert b"\r\nContent-Type: application/json\r\n" in top, top
        assert b"\r\nX-Content-Type-Options: nosniff\r\n" in top, top
        assert json.loads(body)["error"]["code"] == code, (head[:60], body)
    # the daemon's own check answered them, before any route (and logged why)
    assert d.log().count("event=http.bad_head") >= len(cases)


SLOW_CLIENT = r"""
import socket, sys, time
port, n, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
def one():
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    return s
socks = [one() for _ in range(n)]
print("open", flush=True)
stop, reopened = time.time() + seconds, 0
while time.time() < stop:
    time.sleep(8)
    for i, s in enumerate(socks):
        try:
            s.sendall(b"X-Slow: 1\r\n")
        except OSError:  # closed by the daemon: come back, as an attacker would
            s.close()
            try:
                socks[i] = one()
                reopened += 1
            except OSError:
                pass
print("reopened", reopened, flush=True)
"""


def answered_within(url, key, timeout, why=None):
    """True if GET url with key answers 200 within timeout seconds; a
    failure's reason is appended to why (a list) when given."""
    import urllib.request
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    t0 = time.time()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            return r.status == 200
    except Exception as e:  # noqa: BLE001 - any failure is a failure
        if why is not None:
            why.append(f"{type(e).__name__}: {e} after {time.time() - t0:.2f} s")
        return False


def no_vm_args(tmp_root, name):
    """A daemon's arguments and cache for the tests that need no VM."""
    cache = tmp_root / f"{name}-cache"
    cache.mkdir(parents=True, exist_ok=True)
    return {"extra_args": ["--pool-size", "0"], "cache": str(cache)}


def test_slow_connections_do_not_lock_others_out(daemon_factory, tmp_root):
    """300 connections from one address that each send a header line every
    8 s, held for 60 s by another process (which opens again each one the
    daemon closes): the same address's requests, unauthenticated health and
    an authenticated list, answer within 1 s throughout."""
    import socket
    import sys
    kw = no_vm_args(tmp_root, "slow")
    d = daemon_factory("slow", extra_args=kw["extra_args"] + ["--max-conns-per-ip", "64"],
                       cache=kw["cache"])
    # positive control: the probe reports a server that does not answer
    # (a listening socket that never accepts) as a failure within its 1 s
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead.listen(1)
    t0 = time.time()
    assert not answered_within(f"http://127.0.0.1:{dead.getsockname()[1]}/healthz", "x", 1.0)
    assert time.time() - t0 < 3
    dead.close()
    attacker = subprocess.Popen([sys.executable, "-c", SLOW_CLIENT, str(d.port), "300", "60"],
                                stdout=subprocess.PIPE, text=True)
    probes = failed = 0
    why = []
    try:
        assert attacker.stdout.readline().strip() == "open"
        stop = time.time() + 60
        while time.time() < stop:
            for path in ("/healthz", "/v1/sandboxes"):
                probes += 1
                if not answered_within(d.url(path), d.admin_key, 1.0, why):
                    failed += 1
            time.sleep(0.3)
        out = attacker.communicate(timeout=60)[0]
    finally:
        attacker.kill()
        attacker.wait()
    assert probes > 100 and failed == 0, (probes, failed, why)
    assert int(out.split()[-1]) > 0, out  # the attacker really was pushed out, and came back
    # the slow ones were pushed out, not the probes: the daemon says so
    metrics = d.request("GET", "/metrics").body.decode()
    m = re.search(r'pandastack_events_total\{event="http_dropped"\} (\d+)', metrics)
    assert m and int(m.group(1)) >= 236, metrics[-2000:]
    assert "event=http.dropped" in d.log()
    d.stop()


def test_head_deadline_is_total(daemon_factory, tmp_root):
    """A head that trickles in (a byte every 0.5 s) is cut at --head-timeout
    in all, with 408 request_timeout; one sent at once after the same wait
    in silence is not a head at all yet, and is cut the same way."""
    import socket
    kw = no_vm_args(tmp_root, "deadline")
    d = daemon_factory("deadline", extra_args=kw["extra_args"] + ["--head-timeout", "2",
                                                                  "--idle-timeout", "30"],
                       cache=kw["cache"])
    s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
    t0 = time.time()
    got = b""
    try:
        for b in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
            s.sendall(bytes([b]))
            time.sleep(0.5)
            if time.time() - t0 > 6:
                break
    except OSError:
        pass
    s.settimeout(5)
    try:
        while True:
            c = s.recv(4096)
            if not c:
                break
            got += c
    except OSError:
        pass
    s.close()
    assert got.startswith(b"HTTP/1.1 408 "), got[:200]
    assert b'"request_timeout"' in got
    assert time.time() - t0 < 6, "cut by the total deadline, not the per-read one (30 s)"
    # positive control: a connection that sends its head within the deadline
    # is served
    assert answered_within(d.url("/healthz"), d.admin_key, 2.0)
    d.stop()
