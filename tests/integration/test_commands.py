"""Background commands on a real VM (docs/api.md, "Background commands"):
POST .../exec with "background": true, the listing, output by offset,
stdin, kill, and that no default timeout stops them.  Each check first
shows its probe can see the failure (a positive control).  Skipped when no
template is baked (`make templates`)."""
import pathlib
import shutil
import tempfile
import time

import pytest

from conftest import Daemon, create_sandbox, exec_cmd, reap_vms, wait_for

# The daemon's default exec timeout in this module, s: short, so that a
# background command outliving it shows it is not subject to it.
EXEC_TIMEOUT_S = 3


@pytest.fixture(scope="module")
def d(template):
    root = pathlib.Path(tempfile.mkdtemp(prefix="pandastackd-cmd-"))
    dm = Daemon(root / "data", ["--pool-size", "1", "--exec-timeout",
                                str(EXEC_TIMEOUT_S)]).start()
    yield dm
    dm.stop()
    reap_vms(dm.data_dir)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def sid(d, template):
    s = create_sandbox(d, template, ttl_seconds=3600)
    yield s["id"]
    d.request("DELETE", f"/v1/sandboxes/{s['id']}")


def start(d, sid, cmd, **fields):
    body = {"cmd": cmd, "background": True}
    body.update(fields)
    r = d.request("POST", f"/v1/sandboxes/{sid}/exec", body)
    assert r.status == 201, r
    c = r.json()
    assert c["id"].startswith("cmd_") and c["running"] is True, c
    return c


def listing(d, sid):
    r = d.request("GET", f"/v1/sandboxes/{sid}/commands")
    assert r.status == 200, r
    return {c["id"]: c for c in r.json()["commands"]}


def output(d, sid, cid, **query):
    q = "&".join(f"{k}={v}" for k, v in query.items())
    r = d.request("GET", f"/v1/sandboxes/{sid}/commands/{cid}/output" + (f"?{q}" if q else ""))
    assert r.status == 200, r
    return r.json()


def read_all(d, sid, cid, deadline_s=60):
    """Read stdout and stderr by offset until the command ended; returns
    (stdout, stderr, command)."""
    out, err, o, e = "", "", 0, 0
    t_end = time.time() + deadline_s
    while time.time() < t_end:
        r = output(d, sid, cid, stdout_offset=o, stderr_offset=e, wait_seconds=5)
        assert r["stdout_offset"] == o and r["stderr_offset"] == e, r
        out += r["stdout"]
        err += r["stderr"]
        o, e = r["next_stdout_offset"], r["next_stderr_offset"]
        if not r["command"]["running"] and o == r["stdout_total"] and e == r["stderr_total"]:
            return out, err, r["command"]
    raise AssertionError(f"command {cid} did not end in {deadline_s}s")


def http_get_inside(d, sid, port):
    """Status of GET http://127.0.0.1:port/ from inside the sandbox, or an
    error text."""
    code = (f"import urllib.request\n"
            f"try:\n"
            f"    print(urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=5).status)\n"
            f"except Exception as e:\n"
            f"    print('failed', type(e).__name__)\n")
    r = exec_cmd(d, sid, "python3 -", stdin=code, timeout_seconds=30)
    return r["stdout"].strip()


def test_http_server_listed_answers_and_killed(d, sid):
    # positive control: nothing listens yet, and the probe says so
    assert http_get_inside(d, sid, 8000).startswith("failed")
    c = start(d, sid, "python3 -m http.server 8000 --bind 127.0.0.1", cwd="/tmp")
    cid = c["id"]
    assert c["pid"] > 1 and "http.server" in c["cmd"] and c["started_at"].endswith("Z")
    listed = listing(d, sid)
    assert cid in listed and listed[cid]["running"] and listed[cid]["pid"] == c["pid"]
    time.sleep(5)
    # the control and the real outcome through the same probe
    assert http_get_inside(d, sid, 8000) == "200"
    # its log so far is readable: http.server logs each request on stderr
    r = wait_for(lambda: (lambda o: o if "GET / HTTP" in o["stderr"] else None)(
        output(d, sid, cid)), 20, interval=0.5, what="the server's request log")
    assert r["command"]["running"] is True and r["stderr_dropped"] == 0
    k = d.request("POST", f"/v1/sandboxes/{sid}/commands/{cid}/kill", {})
    assert k.status == 200, k
    assert k.json()["running"] is False and k.json()["signal"] == 9, k.json()
    assert http_get_inside(d, sid, 8000).startswith("failed")
    gone = listing(d, sid)[cid]
    assert gone["running"] is False and gone["exit_code"] == 137 and gone["ended_at"]


def test_output_by_offset_and_exit_code(d, sid):
    c = start(d, sid, "for i in 1 2 3; do echo line$i; echo err$i >&2; sleep 1; done; exit 3")
    first = output(d, sid, c["id"])
    assert first["command"]["running"] is True  # control: the read sees a running command
    out, err, cmd = read_all(d, sid, c["id"])
    assert out == "line1\nline2\nline3\n" and err == "err1\nerr2\nerr3\n"
    assert cmd["exit_code"] == 3 and cmd["running"] is False and cmd["signal"] is None
    # reading again from 0 gives everything; from the end, nothing
    again = output(d, sid, c["id"])
    assert again["stdout"] == out and again["stdout_total"] == len(out)
    tail = output(d, sid, c["id"], stdout_offset=len(out), stderr_offset=len(err))
    assert tail["stdout"] == "" and tail["stderr"] == ""
    # past the end: refused with the real count, never a total of the offset
    r = d.request("GET", f"/v1/sandboxes/{sid}/commands/{c['id']}/output"
                         f"?stdout_offset={len(out) + 1000}")
    assert r.status == 400 and r.json()["error"]["code"] == "invalid_query", r
    assert f"past the {len(out)} bytes" in r.json()["error"]["message"], r
    # max_bytes cuts a read; the next offset continues it
    part = output(d, sid, c["id"], max_bytes=4)
    assert part["stdout"] == "line" and part["next_stdout_offset"] == 4


def test_stdin(d, sid):
    c = start(d, sid, "cat; echo done")
    r = d.request("POST", f"/v1/sandboxes/{sid}/commands/{c['id']}/stdin", {"data": "hello\n"})
    assert r.status == 200 and r.json() == {"written": 6, "stdin_open": True}, r
    # control: without EOF, cat is still running
    assert output(d, sid, c["id"])["command"]["running"] is True
    r = d.request("POST", f"/v1/sandboxes/{sid}/commands/{c['id']}/stdin", {"eof": True})
    assert r.status == 200 and r.json()["stdin_open"] is False, r
    out, _, cmd = read_all(d, sid, c["id"])
    assert out == "hello\ndone\n" and cmd["exit_code"] == 0


def test_no_default_timeout(d, sid):
    # control: an ordinary exec is stopped at the daemon's default timeout
    r = exec_cmd(d, sid, f"sleep {EXEC_TIMEOUT_S + 5}")
    assert r["timed_out"] is True
    bg = start(d, sid, f"sleep {EXEC_TIMEOUT_S + 30}")
    timed = start(d, sid, "sleep 60", timeout_seconds=1)
    time.sleep(EXEC_TIMEOUT_S + 2)
    listed = listing(d, sid)
    assert listed[bg["id"]]["running"] is True
    assert listed[timed["id"]]["running"] is False and listed[timed["id"]]["timed_out"] is True
    k = d.request("POST", f"/v1/sandboxes/{sid}/commands/{bg['id']}/kill",
                  {"signal": "SIGTERM"})
    assert k.status == 200 and k.json()["running"] is False and k.json()["signal"] == 15, k


def test_errors(d, sid):
    base = f"/v1/sandboxes/{sid}/commands"
    unknown = "cmd_" + "0" * 20
    for path in (f"{base}/{unknown}/output", f"{base}/cmd_nothex/output"):
        r = d.request("GET", path)
        assert r.status == 404 and r.json()["error"]["code"] == "command_not_found", r
    r = d.request("POST", f"{base}/{unknown}/kill", {})
    assert r.status == 404 and r.json()["error"]["code"] == "command_not_found", r
    r = d.request("POST", f"{base}/{unknown}/stdin", {"data": "x"})
    assert r.status == 404 and r.json()["error"]["code"] == "command_not_found", r
    r = d.request("GET", f"{base}/{unknown}/output?stdout_offset=-1")
    assert r.status == 400 and r.json()["error"]["code"] == "invalid_query", r
    r = d.request("GET", f"{base}/{unknown}/output?wait_seconds=61")
    assert r.status == 400 and r.json()["error"]["code"] == "invalid_query", r
    r = d.request("POST", f"/v1/sandboxes/{sid}/exec",
                  {"cmd": "cat", "background": True, "stdin": "x"})
    assert r.status == 400 and r.json()["error"]["code"] == "invalid_field", r
    r = d.request("POST", f"/v1/sandboxes/{sid}/exec_stream", {"cmd": "true", "background": True})
    assert r.status == 400 and r.json()["error"]["code"] == "invalid_field", r
    # a missing cwd is the foreground exec's file_not_found, never a command's
    # 404 naming bytes the request did not hold
    for cwd in ("/nope", "/root/../nope/x"):
        fg = d.request("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": "true", "cwd": cwd})
        bg = d.request("POST", f"/v1/sandboxes/{sid}/exec",
                       {"cmd": "true", "cwd": cwd, "background": True})
        assert fg.status == 404 and fg.json()["error"]["code"] == "file_not_found", fg
        assert bg.status == 404 and bg.json()["error"]["code"] == "file_not_found", bg
        assert cwd in bg.json()["error"]["message"], bg
    c = start(d, sid, "sleep 30")
    r = d.request("POST", f"{base}/{c['id']}/kill", {"signal": "SIGSTOP"})
    assert r.status == 400 and r.json()["error"]["code"] == "invalid_field", r
    r = d.request("POST", f"{base}/{c['id']}/stdin", {})
    assert r.status == 400 and r.json()["error"]["code"] == "missing_field", r
    assert d.request("POST", f"{base}/{c['id']}/kill").status == 200
