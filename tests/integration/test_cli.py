"""The `pandastack` CLI against a fake API written here with http.server.

Each test starts a fake server on a free loopback port, tells it what to
answer, runs build/pandastack (or $PANDASTACK_CLI) against it, and checks the
exact requests the CLI sent (method, path, query, headers, body) and what the
CLI printed and exited with.  No daemon and no VM are needed.

Run: /usr/bin/python3 -m pytest tests/integration/test_cli.py
"""
import hashlib
import http.server
import json
import os
import pathlib
import pty
import select
import signal
import socket
import subprocess
import threading
import time
import urllib.parse

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("PANDASTACK_CLI", ROOT / "build" / "pandastack"))
KEY = "pds_" + "ab" * 24
SBX = "sbx_0123456789abcdef0123"
MIB = 1024 * 1024

SANDBOX = {
    "id": SBX, "template": "code-interpreter", "status": "running", "reason": None,
    "created_at": "2026-11-30T02:18:52.123Z", "expires_at": "2026-11-30T03:18:52.123Z",
    "ended_at": None, "vcpus": 1, "memory_mib": 1024, "metadata": {"user": "alice"},
}


# ---- the fake API --------------------------------------------------------------------

class Request:
    """One request as the fake server saw it."""

    def __init__(self, method, target, headers, body):
        self.method = method
        self.target = target  # the raw request target, percent-encoding kept
        parts = urllib.parse.urlsplit(target)
        self.raw_path = parts.path
        self.path = urllib.parse.unquote(parts.path)
        self.raw_query = parts.query
        self.query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<{self.method} {self.target} {len(self.body)} bytes>"


def reply(status, body=None, headers=None):
    """An answer: body is a dict/list (sent as JSON), bytes, or None."""
    return (status, body, headers or {})


def api_error(status, code, message):
    return reply(status, {"error": {"code": code, "message": message}})


class FakeAPI:
    """A threaded HTTP/1.1 server that records requests and answers from
    routes: {(METHOD, decoded path): answer or callable(Request) -> answer}."""

    def __init__(self):
        self.routes = {}
        self.early = {}      # (METHOD, path): answer sent instead of 100 Continue
        self.requests = []
        self.lock = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_expect_100(self):
                key = (self.command, urllib.parse.unquote(urllib.parse.urlsplit(self.path).path))
                if key in fake.early:
                    fake.record(Request(self.command, self.path, dict(self.headers), b""))
                    self.send(fake.early[key])
                    self.close_connection = True
                    return False
                return super().handle_expect_100()

            def read_body(self):
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = bytearray()
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return bytes(out)
                        out += self.rfile.read(size)
                        self.rfile.readline()
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def send(self, answer):
                status, body, headers = answer
                if isinstance(body, (dict, list)):
                    data = json.dumps(body).encode()
                    headers = {"Content-Type": "application/json", **headers}
                else:
                    data = body or b""
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if data and self.command != "HEAD":
                    self.wfile.write(data)

            def handle_any(self):
                req = Request(self.command, self.path, dict(self.headers), self.read_body())
                fake.record(req)
                answer = fake.routes.get((req.method, req.path))
                if answer is None:
                    answer = api_error(404, "not_found", f"no route {req.method} {req.path}")
                elif callable(answer):
                    answer = answer(req, self)
                    if answer is None:
                        return  # the callable answered by itself
                self.send(answer)

            do_GET = do_POST = do_PUT = do_DELETE = handle_any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def record(self, req):
        with self.lock:
            self.requests.append(req)

    def route(self, method, path, answer):
        self.routes[(method, path)] = answer

    def only_request(self):
        assert len(self.requests) == 1, self.requests
        return self.requests[0]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api():
    fake = FakeAPI()
    yield fake
    fake.close()


@pytest.fixture(scope="session")
def cli_path():
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"{CLI} is missing: run `make build/pandastack` first")
    return str(CLI)


class Result:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err

    @property
    def stdout(self):
        return self.out.decode()

    @property
    def stderr(self):
        return self.err.decode()

    def __repr__(self):
        return f"<exit {self.code} out={self.out[:300]!r} err={self.err[:300]!r}>"


@pytest.fixture
def run(api, cli_path, tmp_path):
    """run(*args, input=None, env=None) runs the CLI against the fake API in
    tmp_path and returns a Result."""

    def go(*args, input=None, env=None, url=None, key=KEY, cwd=None):
        e = {k: v for k, v in os.environ.items() if not k.startswith("PANDASTACK_")}
        e["PANDASTACK_API_URL"] = url or api.url
        if key is not None:
            e["PANDASTACK_API_KEY"] = key
        e.update(env or {})
        p = subprocess.run([cli_path, *args], input=input, capture_output=True, env=e,
                           cwd=cwd or tmp_path, timeout=120)
        return Result(p.returncode, p.stdout, p.stderr)

    return go


def check_common_headers(req, json_body):
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    if json_body:
        assert req.headers["Content-Type"] == "application/json"


# ---- sandboxes ----------------------------------------------------------------------

def test_create_prints_the_id(api, run):
    api.route("POST", "/v1/sandboxes", reply(201, SANDBOX))
    r = run("sandbox", "create", "--template", "code-interpreter", "--ttl", "3600")
    assert r.code == 0, r
    assert r.stdout == SBX + "\n"
    assert r.err == b""
    req = api.only_request()
    assert (req.method, req.raw_path, req.raw_query) == ("POST", "/v1/sandboxes", "")
    check_common_headers(req, True)
    assert req.json() == {"template": "code-interpreter", "ttl_seconds": 3600}


def test_create_equals_form_env_metadata_and_json(api, run):
    raw = json.dumps(SANDBOX, indent=1).encode()
    api.route("POST", "/v1/sandboxes", reply(201, raw, {"Content-Type": "application/json"}))
    r = run("sandbox", "create", "--template=base", "--ttl=60", "--env", "A=1", "--env=B=x=y",
            "--metadata", "user=alice", "--json")
    assert r.code == 0, r
    assert r.out == raw + b"\n"  # the API's JSON exactly as sent
    assert api.only_request().json() == {"template": "base", "ttl_seconds": 60,
                                         "env": {"A": "1", "B": "x=y"},
                                         "metadata": {"user": "alice"}}


def test_create_network(api, run):
    api.route("POST", "/v1/sandboxes", reply(201, SANDBOX))
    r = run("sandbox", "create", "--template", "base", "--network",
            '{"egress": "deny", "allow_out": ["pypi.org"]}', "--public-ports")
    assert r.code == 0, r
    assert api.only_request().json() == {
        "template": "base",
        "network": {"egress": "deny", "allow_out": ["pypi.org"], "public_ports": True}}
    for bad in ("[1]", "{", '{"a": 1, "a": 2}'):
        r = run("sandbox", "create", "--template", "base", "--network", bad)
        assert r.code == 2 and b"--network wants a JSON object" in r.err, (bad, r)


def test_url_by_path_and_by_host(api, run):
    token = "pdt_" + "cd" * 24
    api.route("GET", f"/v1/sandboxes/{SBX}", reply(200, dict(SANDBOX, access_token=token,
                                                              proxy_domain=None)))
    r = run("sandbox", "url", SBX, "8000")
    assert r.code == 0, r
    assert r.stdout == f"{api.url}/v1/sandboxes/{SBX}/ports/8000/\n"
    r = run("sandbox", "url", SBX, "8000", "--path", "/a?b=1", "--token")
    assert r.stdout == f"{api.url}/v1/sandboxes/{SBX}/ports/8000/a?b=1&access_token={token}\n"
    api.route("GET", f"/v1/sandboxes/{SBX}", reply(200, dict(SANDBOX, access_token=token,
                                                              proxy_domain="sbx.test")))
    port = api.url.rsplit(":", 1)[1]
    host = f"8000-{SBX.replace('_', '-')}.sbx.test"
    r = run("sandbox", "url", SBX, "8000", "--path", "x")
    assert r.stdout == f"http://{host}:{port}/x\n"
    r = run("--json", "sandbox", "url", SBX, "8000")
    assert json.loads(r.stdout) == {"url": f"http://{host}:{port}/", "host": host,
                                    "access_token": token}
    for bad in ("0", "65536", "http"):
        r = run("sandbox", "url", SBX, bad)
        assert r.code == 2, (bad, r)
    r = run("sandbox", "url", SBX, "80", "--path", "a b")
    assert r.code == 2


def test_list_get_set_ttl(api, run):
    hostile = dict(SANDBOX, id="sbx_\x1b[2Jevil", template="t\x07")
    api.route("GET", "/v1/sandboxes", reply(200, {"sandboxes": [SANDBOX, hostile]}))
    r = run("sandbox", "list", "--status", "running", "--metadata", "user=alice")
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["ID", "TEMPLATE", "STATUS", "CREATED", "EXPIRES"]
    assert lines[1].split()[:3] == [SBX, "code-interpreter", "running"]
    assert "2026-11-30T02:18:52.123Z" in lines[1]
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout  # server text is sanitised
    assert "sbx_?[2Jevil" in lines[2]
    req = api.requests[-1]
    assert req.query == {"status": ["running"], "metadata.user": ["alice"]}

    api.route("GET", f"/v1/sandboxes/{SBX}", reply(200, SANDBOX))
    r = run("sandbox", "get", SBX)
    assert r.code == 0, r
    assert "status: running" in r.stdout.splitlines()
    assert 'metadata: {"user":"alice"}' in r.stdout.splitlines()
    assert api.requests[-1].raw_path == f"/v1/sandboxes/{SBX}"

    api.route("POST", f"/v1/sandboxes/{SBX}/ttl",
              reply(200, dict(SANDBOX, expires_at="2026-11-30T04:18:52.123Z")))
    r = run("sandbox", "set-ttl", SBX, "7200")
    assert r.code == 0, r
    assert r.stdout == "expires_at: 2026-11-30T04:18:52.123Z\n"
    req = api.requests[-1]
    check_common_headers(req, True)
    assert req.json() == {"ttl_seconds": 7200}


def test_delete(api, run):
    api.route("DELETE", f"/v1/sandboxes/{SBX}", reply(204))
    r = run("sandbox", "delete", SBX)
    assert (r.code, r.out, r.err) == (0, b"", b"")
    req = api.only_request()
    assert (req.method, req.raw_path, req.body) == ("DELETE", f"/v1/sandboxes/{SBX}", b"")
    check_common_headers(req, False)


# ---- snapshots, forks, pause and resume ------------------------------------------------

SNAP = "snap_0123456789abcdef0123"
SNAPSHOT = {"id": SNAP, "sandbox_id": SBX, "template": "code-interpreter",
            "created_at": "2026-11-30T02:20:11.481Z", "size_bytes": 54788096, "name": "warm",
            "parent": None}


def test_snapshot_fork_pause_resume(api, run):
    api.route("POST", f"/v1/sandboxes/{SBX}/snapshots", reply(201, SNAPSHOT))
    r = run("sandbox", "snapshot", SBX, "--name", "warm")
    assert (r.code, r.stdout) == (0, SNAP + "\n"), r
    assert api.requests[-1].json() == {"name": "warm"}

    forks = [dict(SANDBOX, id="sbx_" + c * 20) for c in "ab"]
    api.route("POST", f"/v1/sandboxes/{SBX}/fork", reply(201, {"sandboxes": forks}))
    r = run("sandbox", "fork", SBX, "--count", "2", "--ttl", "60")
    assert (r.code, r.stdout) == (0, "sbx_" + "a" * 20 + "\nsbx_" + "b" * 20 + "\n"), r
    assert api.requests[-1].json() == {"count": 2, "ttl_seconds": 60}
    n = len(api.requests)
    r = run("sandbox", "fork", SBX, "--count", "17")
    assert r.code == 2 and "--count" in r.stderr and len(api.requests) == n, r

    api.route("POST", f"/v1/sandboxes/{SBX}/pause", reply(200, dict(SANDBOX, status="paused")))
    r = run("sandbox", "pause", SBX)
    assert r.code == 0 and "status: paused" in r.stdout.splitlines(), r
    api.route("POST", f"/v1/sandboxes/{SBX}/resume", reply(200, SANDBOX))
    r = run("sandbox", "resume", SBX)
    assert r.code == 0 and "status: running" in r.stdout.splitlines(), r
    assert api.requests[-1].body == b""
    r = run("sandbox", "resume", SBX, "--ttl", "120")
    assert r.code == 0 and api.requests[-1].json() == {"ttl_seconds": 120}, r
    n = len(api.requests)
    r = run("sandbox", "resume", SBX, "--ttl", "0")
    assert r.code == 2 and "--ttl" in r.stderr and len(api.requests) == n, r

    api.route("POST", "/v1/sandboxes", reply(201, SANDBOX))
    r = run("sandbox", "create", "--snapshot", SNAP, "--on-timeout", "pause")
    assert (r.code, r.stdout) == (0, SBX + "\n"), r
    assert api.requests[-1].json() == {"snapshot": SNAP, "on_timeout": "pause"}
    r = run("sandbox", "create")
    assert r.code == 2 and "--template" in r.stderr, r


def test_snapshot_list_delete(api, run):
    api.route("GET", "/v1/snapshots", reply(200, {"snapshots": [SNAPSHOT]}))
    r = run("snapshot", "list", "--sandbox", SBX)
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["ID", "SANDBOX", "TEMPLATE", "NAME", "SIZE", "CREATED"]
    assert lines[1].split()[:4] == [SNAP, SBX, "code-interpreter", "warm"]
    assert api.requests[-1].query == {"sandbox_id": [SBX]}
    api.route("DELETE", f"/v1/snapshots/{SNAP}",
              reply(409, {"error": {"code": "snapshot_in_use", "message": "a paused sandbox"}}))
    r = run("snapshot", "delete", SNAP)
    assert r.code == 1 and "snapshot_in_use" in r.stderr, r
    api.route("DELETE", f"/v1/snapshots/{SNAP}", reply(204))
    r = run("snapshot", "delete", SNAP)
    assert (r.code, r.out) == (0, b""), r


# ---- exec and run-code --------------------------------------------------------------

def exec_answer(stdout="", stderr="", exit_code=0, **more):
    return reply(200, {"stdout": stdout, "stderr": stderr, "exit_code": exit_code,
                       "duration_ms": 41, "timed_out": False, "signal": None,
                       "stdout_truncated": False, "stderr_truncated": False, **more})


def test_exec_seed_example(api, run):
    api.route("POST", f"/v1/sandboxes/{SBX}/exec", exec_answer("4\n"))
    r = run("sandbox", "exec", SBX, "--timeout", "30", "--", 'python -c "print(2 + 2)"')
    assert (r.code, r.out, r.err) == (0, b"4\n", b""), r
    req = api.only_request()
    assert req.raw_path == f"/v1/sandboxes/{SBX}/exec"
    check_common_headers(req, True)
    assert req.json() == {"cmd": 'python -c "print(2 + 2)"', "timeout_seconds": 30}


def test_exec_exit_code_streams_and_words(api, run):
    api.route("POST", f"/v1/sandboxes/{SBX}/exec",
              exec_answer("out\x00bin\n", "err line\n", 3))
    r = run("sandbox", "exec", SBX, "--", "ls", "-la", "--timeout", "/tmp")
    assert r.code == 3, r
    assert r.out == b"out\x00bin\n"  # raw, NUL kept
    assert r.err == b"err line\n"
    assert api.only_request().json() == {"cmd": "ls -la --timeout /tmp"}


def test_exec_options_and_stdin(api, run):
    api.route("POST", f"/v1/sandboxes/{SBX}/exec", exec_answer("", "", 137, timed_out=True,
                                                               signal=9))
    r = run("sandbox", "exec", SBX, "--timeout=0.5", "--cwd", "/workspace", "--env", "A=1",
            "--stdin", "cat", input=b"hello\n")
    assert r.code == 137, r
    assert "timed out" in r.stderr
    assert api.only_request().json() == {"cmd": "cat", "timeout_seconds": 0.5,
                                         "cwd": "/workspace", "env": {"A": "1"},
                                         "stdin": "hello\n"}


def test_exec_json_keeps_the_exit_code(api, run):
    api.route("POST", f"/v1/sandboxes/{SBX}/exec", exec_answer("x\n", "", 5))
    r = run("--json", "sandbox", "exec", SBX, "--", "false")
    assert r.code == 5, r
    assert json.loads(r.out)["stdout"] == "x\n"


def test_exec_background_ps_and_kill_command(api, run):
    cid = "cmd_0123456789abcdef0123"
    cmd = {"id": cid, "pid": 42, "cmd": "sleep 9", "cwd": "/workspace",
           "started_at": "2026-12-01T18:00:00.000Z", "running": True, "ended_at": None,
           "exit_code": None, "signal": None, "timed_out": False, "stdout_bytes": 0,
           "stderr_bytes": 0, "stdin_open": True}
    api.route("POST", f"/v1/sandboxes/{SBX}/exec", reply(201, cmd))
    r = run("sandbox", "exec", SBX, "--background", "--", "sleep", "9")
    assert (r.code, r.out) == (0, (cid + "\n").encode()), r
    assert api.only_request().json() == {"cmd": "sleep 9", "background": True}
    r = run("sandbox", "exec", SBX, "--background", "--stdin", "--", "cat")
    assert r.code == 2 and "--stdin" in r.stderr, r
    api.requests.clear()
    api.route("GET", f"/v1/sandboxes/{SBX}/commands", reply(200, {"commands": [cmd]}))
    r = run("sandbox", "ps", SBX)
    assert r.code == 0 and cid in r.stdout and "sleep 9" in r.stdout and "PID" in r.stdout, r
    ended = dict(cmd, running=False, exit_code=143, signal=15)
    api.route("POST", f"/v1/sandboxes/{SBX}/commands/{cid}/kill", reply(200, ended))
    r = run("sandbox", "kill-command", SBX, cid, "--signal", "SIGTERM")
    assert r.code == 0 and "exit_code: 143" in r.stdout, r
    assert api.requests[-1].json() == {"signal": "SIGTERM"}


def test_run_code(api, run):
    api.route("POST", f"/v1/sandboxes/{SBX}/run_code",
              reply(200, {"stdout": "42 84\n", "stderr": "", "results": [], "error": None}))
    r = run("sandbox", "run-code", SBX, "--language", "python", "--",
            "x = 42; y = x * 2; print(x, y)")
    assert (r.code, r.stdout, r.err) == (0, "42 84\n", b""), r
    req = api.only_request()
    assert req.raw_path == f"/v1/sandboxes/{SBX}/run_code"
    check_common_headers(req, True)
    assert req.json() == {"code": "x = 42; y = x * 2; print(x, y)", "language": "python"}


def test_run_code_results_error_and_exit_code(api, run):
    api.route("POST", f"/v1/sandboxes/{SBX}/run_code",
              reply(200, {"stdout": "hi\n", "stderr": "warn\n", "results": [{"text": "5050"}],
                          "error": {"name": "ZeroDivisionError", "value": "division by zero",
                                    "traceback": ["Traceback...", "ZeroDivisionError"]}}))
    r = run("sandbox", "run-code", SBX, "--", "1/0")
    assert r.code == 1, r
    assert r.stdout == "hi\n5050\n"
    assert r.stderr == "warn\nTraceback...\nZeroDivisionError\n"
    assert api.only_request().json() == {"code": "1/0", "language": "python"}

    api.route("POST", f"/v1/sandboxes/{SBX}/run_code",
              reply(200, {"stdout": "", "stderr": "", "exit_code": 7, "error": None}))
    r = run("sandbox", "run-code", SBX, "--language", "shell", "--", "exit", "7")
    assert r.code == 7, r
    assert api.requests[-1].json() == {"code": "exit 7", "language": "shell"}


# ---- API errors, transport errors, usage errors -----------------------------------------

@pytest.mark.parametrize("status,code,message", [
    (401, "unauthorized", "missing or unknown API key"),
    (404, "sandbox_not_found", f"no sandbox '{SBX}'"),
    (413, "body_too_large", "the body is over 2097152 bytes"),
    (429, "too_many_sandboxes", "the team already has 20 sandboxes"),
    (500, "internal", "the store failed"),
])
def test_api_errors_exit_1(api, run, status, code, message):
    api.route("POST", f"/v1/sandboxes/{SBX}/exec", api_error(status, code, message))
    r = run("sandbox", "exec", SBX, "--", "true")
    assert r.code == 1, r
    assert r.out == b""
    assert r.stderr == f"pandastack: error: {code} (HTTP {status}): {message}\n"


def test_error_without_api_shape(api, run):
    api.route("GET", "/v1/sandboxes", reply(502, b"<html>Bad Gateway</html>"))
    r = run("sandbox", "list")
    assert r.code == 1, r
    assert "error: http_502 (HTTP 502): <html>Bad Gateway</html>" in r.stderr


def test_hostile_error_message_is_sanitised(api, run):
    api.route("GET", f"/v1/sandboxes/{SBX}", api_error(404, "sandbox_not_found",
                                                        "no \x1b]0;owned\x07 sandbox"))
    r = run("sandbox", "get", SBX)
    assert r.code == 1
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr
    assert "no ?]0;owned? sandbox" in r.stderr


def test_bad_json_answer_is_an_error(api, run):
    api.route("POST", "/v1/sandboxes", reply(201, b"{not json"))
    r = run("sandbox", "create", "--template", "base")
    assert r.code == 1, r
    assert "bad_response" in r.stderr


def test_connection_refused(run):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    r = run("sandbox", "create", "--template", "base", url=f"http://127.0.0.1:{port}")
    assert r.code == 1, r
    assert "error: connect_failed" in r.stderr
    assert f"127.0.0.1:{port}" in r.stderr


@pytest.mark.parametrize("args,message", [
    (["sandbox", "create"], "missing --template T"),
    (["sandbox", "create", "--template"], "needs a value"),
    (["sandbox", "create", "--template", "t", "--ttl", "soon"], "--ttl wants whole seconds"),
    (["sandbox", "create", "--template", "t", "--ttl", "0"], "between 1 and"),
    (["sandbox", "create", "--template", "t", "--bogus"], "unknown flag --bogus"),
    (["sandbox", "exec", SBX], "missing CMD"),
    (["sandbox", "exec", SBX, "--timeout", "-1", "--", "true"], "number of seconds"),
    (["sandbox", "exec", SBX, "--timeout", "1e3", "--", "true"], "number of seconds"),
    (["sandbox", "exec", SBX, "--env", "NOEQUALS", "--", "true"], "KEY=VALUE"),
    (["sandbox", "exec", "..", "--", "true"], "'.' or '..'"),
    (["sandbox", "get"], "missing ID"),
    (["sandbox", "set-ttl", SBX], "missing S"),
    (["sandbox", "frobnicate"], "unknown command 'frobnicate'"),
    (["nope"], "unknown command 'nope'"),
    (["fs", "upload", SBX, "--local", "x"], "missing --remote R"),
    (["fs", "download", SBX, "--remote", "/x"], "missing --local L"),
    (["fs", "rm", SBX, "/x", "--recursive=yes"], "takes no value"),
    (["keys", "create"], "missing --name N"),
    (["templates", "build"], "missing NAME"),
])
def test_usage_errors_exit_2(api, run, args, message):
    r = run(*args)
    assert r.code == 2, r
    assert message in r.stderr, r
    assert r.out == b""
    assert api.requests == []  # nothing was sent


def test_missing_key_and_bad_url(api, run):
    r = run("sandbox", "list", key=None)
    assert r.code == 2 and "PANDASTACK_API_KEY is not set" in r.stderr, r
    r = run("sandbox", "list", key="pds_bad key")
    assert r.code == 2 and "PANDASTACK_API_KEY" in r.stderr, r
    r = run("sandbox", "list", url="ftp://127.0.0.1/")
    assert r.code == 2 and "PANDASTACK_API_URL" in r.stderr, r
    assert api.requests == []


def test_base_url_with_prefix(api, run):
    api.route("GET", "/prefix/v1/sandboxes", reply(200, {"sandboxes": []}))
    r = run("sandbox", "list", url=api.url + "/prefix/")
    assert r.code == 0, r
    assert api.only_request().raw_path == "/prefix/v1/sandboxes"


# ---- help ------------------------------------------------------------------------------

COMMANDS = {
    "sandbox": ["create", "list", "get", "delete", "set-ttl", "exec", "run-code", "snapshot",
                "fork", "pause", "resume"],
    "snapshot": ["list", "delete"],
    "fs": ["upload", "download", "ls", "stat", "rm", "mkdir"],
    "keys": ["create", "list", "delete"],
    "templates": ["list", "build"],
}


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["help"]] +
                         [[g, "--help"] for g in COMMANDS] +
                         [[g, c, flag] for g in COMMANDS for c in COMMANDS[g]
                          for flag in ("--help", "-h")])
def test_help_everywhere(api, run, args):
    r = run(*args, key=None)
    assert r.code == 0, r
    assert r.stdout.startswith("Usage: pandastack"), r
    if len(args) == 3:
        assert r.stdout.startswith(f"Usage: pandastack {args[0]} {args[1]} ")
        assert "--json" in r.stdout
    assert api.requests == []


def test_exec_help_documents_exit_code(run):
    r = run("sandbox", "exec", "--help")
    assert "the command's own exit code" in r.stdout
    assert "1 may be the command's as well as an API error" in r.stdout


@pytest.mark.parametrize("args", [["help", "nope"], ["help", "sandbox", "nope"]])
def test_help_for_unknown_command_is_usage(run, args):
    r = run(*args, key=None)
    assert r.code == 2 and "nope" in r.stderr and r.stdout == "", r


def test_no_arguments_is_usage(run):
    r = run()
    assert r.code == 2 and "Usage: pandastack" in r.stderr


# ---- files -------------------------------------------------------------------------------

def test_upload_5mib_streamed(api, run, tmp_path):
    data = os.urandom(5 * MIB)
    (tmp_path / "big.bin").write_bytes(data)
    api.route("PUT", f"/v1/sandboxes/{SBX}/fs",
              lambda req, h: reply(200, {"path": req.query["path"][0], "size": len(req.body)}))
    r = run("fs", "upload", SBX, "--local", "./big.bin", "--remote", "/workspace/big file.bin")
    assert (r.code, r.out, r.err) == (0, b"", b""), r
    req = api.only_request()
    assert req.method == "PUT"
    assert req.raw_path == f"/v1/sandboxes/{SBX}/fs"
    assert req.raw_query == "path=%2Fworkspace%2Fbig%20file.bin"
    assert req.query == {"path": ["/workspace/big file.bin"]}
    check_common_headers(req, False)
    assert req.headers["Content-Type"] == "application/octet-stream"
    assert req.headers["Content-Length"] == str(len(data))
    assert hashlib.sha256(req.body).digest() == hashlib.sha256(data).digest()


def test_upload_json_and_stdin_chunked(api, run):
    api.route("PUT", f"/v1/sandboxes/{SBX}/fs",
              lambda req, h: reply(200, {"path": req.query["path"][0], "size": len(req.body)}))
    r = run("fs", "upload", SBX, "--local", "-", "--remote", "/w/in.txt", "--json",
            input=b"from stdin\n")
    assert r.code == 0, r
    assert json.loads(r.out) == {"path": "/w/in.txt", "size": 11}
    req = api.only_request()
    assert req.headers.get("Transfer-Encoding") == "chunked"
    assert req.body == b"from stdin\n"


def test_upload_refused_before_the_body(api, run, tmp_path):
    (tmp_path / "big.bin").write_bytes(b"\0" * (3 * MIB))
    api.early[("PUT", f"/v1/sandboxes/{SBX}/fs")] = api_error(
        413, "body_too_large", "the body is over 1048576 bytes")
    r = run("fs", "upload", SBX, "--local", "big.bin", "--remote", "/w/big.bin")
    assert r.code == 1, r
    assert r.stderr == ("pandastack: error: body_too_large (HTTP 413): "
                        "the body is over 1048576 bytes\n")
    assert api.only_request().body == b""


def test_upload_missing_local_file(api, run):
    r = run("fs", "upload", SBX, "--local", "nope.csv", "--remote", "/w/x")
    assert r.code == 1, r
    assert "cannot open nope.csv" in r.stderr
    assert api.requests == []


def test_download_5mib_streamed(api, run, tmp_path):
    data = os.urandom(5 * MIB)
    api.route("GET", f"/v1/sandboxes/{SBX}/fs",
              reply(200, data, {"Content-Type": "application/octet-stream"}))
    r = run("fs", "download", SBX, "--remote", "/workspace/result.csv", "--local",
            "./result.csv")
    assert (r.code, r.out, r.err) == (0, b"", b""), r
    assert (tmp_path / "result.csv").read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.csv"]  # no temp left
    req = api.only_request()
    assert req.method == "GET"
    assert req.raw_query == "path=%2Fworkspace%2Fresult.csv"
    check_common_headers(req, False)
    mode = (tmp_path / "result.csv").stat().st_mode & 0o777
    assert mode == 0o666 & ~current_umask()


def current_umask():
    m = os.umask(0)
    os.umask(m)
    return m


def test_download_into_directory_and_stdout(api, run, tmp_path):
    api.route("GET", f"/v1/sandboxes/{SBX}/fs", reply(200, b"abc"))
    (tmp_path / "out").mkdir()
    r = run("fs", "download", SBX, "--remote", "/w/name.txt", "--local", "out")
    assert r.code == 0, r
    assert (tmp_path / "out" / "name.txt").read_bytes() == b"abc"
    r = run("fs", "download", SBX, "--remote", "/w/name.txt", "--local", "-")
    assert (r.code, r.out) == (0, b"abc"), r


def test_download_error_leaves_nothing(api, run, tmp_path):
    (tmp_path / "keep.csv").write_bytes(b"old")
    api.route("GET", f"/v1/sandboxes/{SBX}/fs",
              api_error(404, "file_not_found", "no file '/w/x.csv'"))
    r = run("fs", "download", SBX, "--remote", "/w/x.csv", "--local", "keep.csv")
    assert r.code == 1, r
    assert r.stderr == "pandastack: error: file_not_found (HTTP 404): no file '/w/x.csv'\n"
    assert (tmp_path / "keep.csv").read_bytes() == b"old"  # not replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv"]


def test_download_cut_short_leaves_nothing(api, run, tmp_path):
    def short(req, h):
        h.send_response(200)
        h.send_header("Content-Length", str(2 * MIB))
        h.end_headers()
        h.wfile.write(b"x" * MIB)
        h.wfile.flush()
        h.close_connection = True
        h.connection.shutdown(socket.SHUT_RDWR)
        return None

    api.route("GET", f"/v1/sandboxes/{SBX}/fs", short)
    r = run("fs", "download", SBX, "--remote", "/w/x", "--local", "x")
    assert r.code == 1, r
    assert "transfer_failed" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_download_interrupted_cleans_up(api, cli_path, tmp_path):
    gate = threading.Event()

    def slow(req, h):
        h.send_response(200)
        h.send_header("Content-Length", str(8 * MIB))
        h.end_headers()
        h.wfile.write(b"y" * MIB)
        h.wfile.flush()
        gate.wait(30)
        h.close_connection = True
        return None

    api.route("GET", f"/v1/sandboxes/{SBX}/fs", slow)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PANDASTACK_")}
    env.update(PANDASTACK_API_URL=api.url, PANDASTACK_API_KEY=KEY)
    p = subprocess.Popen([cli_path, "fs", "download", SBX, "--remote", "/w/x", "--local", "x"],
                         cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:  # wait until the temp file has the first MiB
            temps = [t for t in tmp_path.iterdir() if t.name.startswith(".x.pandastack-")]
            if temps and temps[0].stat().st_size >= MIB:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the download never started")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        gate.set()
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1, err
    assert b"interrupted" in err
    assert list(tmp_path.iterdir()) == []


def test_fs_ls_stat_rm_mkdir(api, run):
    entry = {"name": "a b.csv", "path": "/w/a b.csv", "type": "file", "size": 174,
             "mode": 420, "mtime_ms": 1764469132123}
    odd = "/w/d ir/é&x=1#?"
    api.route("GET", f"/v1/sandboxes/{SBX}/fs/list",
              reply(200, {"path": odd, "entries": [entry, dict(entry, name="sub\x1b", type="dir")],
                          "truncated": True}))
    r = run("fs", "ls", SBX, odd)
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["TYPE", "SIZE", "MODIFIED", "NAME"]
    assert lines[1].split() == ["file", "174", "2025-11-30", "02:18:52", "a", "b.csv"]
    assert lines[2].split()[-1] == "sub?"
    assert "cut at 2 entries" in r.stderr
    req = api.requests[-1]
    assert req.raw_query == "path=" + urllib.parse.quote(odd, safe="")
    assert req.query == {"path": [odd]}

    api.route("GET", f"/v1/sandboxes/{SBX}/fs/stat", reply(200, entry))
    r = run("fs", "stat", SBX, "/w/a b.csv")
    assert r.code == 0, r
    assert "size: 174" in r.stdout.splitlines()
    assert api.requests[-1].query == {"path": ["/w/a b.csv"]}

    api.route("DELETE", f"/v1/sandboxes/{SBX}/fs", reply(204))
    r = run("fs", "rm", SBX, "/w/dir", "--recursive")
    assert (r.code, r.out) == (0, b""), r
    req = api.requests[-1]
    assert req.method == "DELETE"
    assert req.query == {"path": ["/w/dir"], "recursive": ["true"]}
    r = run("fs", "rm", SBX, "/w/file")
    assert api.requests[-1].query == {"path": ["/w/file"]}

    api.route("POST", f"/v1/sandboxes/{SBX}/fs/mkdir", reply(201, dict(entry, type="dir")))
    r = run("fs", "mkdir", SBX, "/w/new/dir")
    assert (r.code, r.out) == (0, b""), r
    req = api.requests[-1]
    check_common_headers(req, True)
    assert req.json() == {"path": "/w/new/dir", "parents": True}
    run("fs", "mkdir", SBX, "/w/new", "--no-parents")
    assert api.requests[-1].json() == {"path": "/w/new", "parents": False}

    api.route("GET", f"/v1/sandboxes/{SBX}/fs/stat",
              api_error(404, "file_not_found", "no file '/w/zz'"))
    r = run("fs", "stat", SBX, "/w/zz")
    assert r.code == 1 and "file_not_found (HTTP 404)" in r.stderr, r


def test_progress_bar_on_a_terminal(api, cli_path, tmp_path):
    """Over 4 MiB with stderr on a terminal, a bar is drawn there; on a
    pipe (the other tests) stderr stays empty."""
    (tmp_path / "big.bin").write_bytes(os.urandom(5 * MIB))
    api.route("PUT", f"/v1/sandboxes/{SBX}/fs", reply(200, {"path": "/w/big.bin", "size": 1}))
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PANDASTACK_")}
    env.update(PANDASTACK_API_URL=api.url, PANDASTACK_API_KEY=KEY)
    p = subprocess.Popen([cli_path, "fs", "upload", SBX, "--local", "big.bin", "--remote",
                          "/w/big.bin"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                         stderr=slave)
    os.close(slave)
    seen = b""
    deadline = time.time() + 60
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif p.poll() is not None:
            break
    p.wait(timeout=30)
    os.close(master)
    assert p.returncode == 0, seen
    text = seen.decode(errors="replace")
    assert "big.bin" in text and "100%" in text and "5.0 MiB/5.0 MiB" in text, text


# ---- keys and templates ------------------------------------------------------------------

def test_keys(api, run):
    api.route("POST", "/v1/keys", reply(201, {"id": "key_00112233aabbccdd", "name": "ci",
                                              "team": "acme", "admin": False,
                                              "created_at": "2026-11-30T02:18:52.123Z",
                                              "key": "pds_" + "cd" * 24}))
    r = run("keys", "create", "--name", "ci", "--team", "acme")
    assert r.code == 0, r
    assert r.stdout == "pds_" + "cd" * 24 + "\n"
    assert "key_00112233aabbccdd" in r.stderr
    req = api.only_request()
    check_common_headers(req, True)
    assert req.json() == {"name": "ci", "team": "acme"}

    api.route("GET", "/v1/keys", reply(200, {"keys": [{"id": "key_1", "name": "ci",
                                                       "team": "acme", "admin": False,
                                                       "created_at": "2026-11-30T02:18:52Z"}]}))
    r = run("keys", "list")
    assert r.code == 0, r
    assert r.stdout.splitlines()[1].split() == ["key_1", "ci", "acme", "false",
                                                "2026-11-30T02:18:52Z"]

    api.route("DELETE", "/v1/keys/key_1", reply(204))
    r = run("keys", "delete", "key_1")
    assert (r.code, r.out) == (0, b""), r
    assert api.requests[-1].method == "DELETE"
    api.route("DELETE", "/v1/keys/key_admin", api_error(409, "admin_key", "admin keys stay"))
    r = run("keys", "delete", "key_admin")
    assert r.code == 1 and "admin_key (HTTP 409)" in r.stderr


def test_templates(api, run):
    api.route("GET", "/v1/templates", reply(200, {"templates": [
        {"name": "code-interpreter", "status": "ready", "vcpus": 1, "memory_mib": 1024,
         "pool_ready": 2, "error": None,
         "build": {"status": "succeeded", "error": None, "progress": "done"}},
        {"name": "base", "status": "missing", "vcpus": 1, "memory_mib": 512,
         "pool_ready": 0, "error": None, "build": None}]}))
    r = run("templates", "list")
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "VCPUS", "MEMORY_MIB", "POOL", "BUILD",
                                "ERROR"]
    assert lines[1].split() == ["code-interpreter", "ready", "1", "1024", "2", "succeeded", "-"]
    assert lines[2].split() == ["base", "missing", "1", "512", "0", "-", "-"]

    api.route("POST", "/v1/templates/base/build", reply(202, {"name": "base",
                                                              "status": "missing"}))
    r = run("template", "build", "base", "--force")
    assert r.code == 0, r
    assert "name: base" in r.stdout
    assert api.requests[-1].json() == {"force": True}
    check_common_headers(api.requests[-1], True)
