"""Client-side deadlines: a silent server gives TimeoutError("client_timeout")
within about the deadline; long calls get a deadline derived from their own
limit."""
import builtins
import threading
import time

import pytest
from conftest import KEY, SID
from fakeapi import Reply, sandbox_json, sse

import pandastack
from pandastack import Sandbox, TimeoutError
from pandastack._http import Transport
from pandastack.code_context import run_deadline

SB = f"/v1/sandboxes/{SID}"


def slow(seconds, reply, release=None):
    def handler(req):
        if release is not None:
            release.wait(seconds)
        else:
            time.sleep(seconds)
        return reply
    return handler


def test_silent_server_gives_client_timeout(api):
    release = threading.Event()
    api.route("GET", SB, slow(10, Reply(200, sandbox_json(SID)), release))
    t0 = time.monotonic()
    with pytest.raises(TimeoutError) as ei:
        Sandbox.connect(SID, api_key=KEY, api_url=api.url, request_timeout=0.5)
    took = time.monotonic() - t0
    release.set()
    assert ei.value.code == "client_timeout" and ei.value.status is None
    assert isinstance(ei.value, builtins.TimeoutError)
    assert 0.4 < took < 5
    assert len(api.calls("GET", SB)) == 1  # a timed-out GET is not repeated


def test_exec_waits_past_the_request_timeout_for_its_own_limit(api, sandbox):
    sandbox._t.timeout = 0.3
    api.route("POST", SB + "/exec", slow(1.0, Reply(200, {"stdout": "done\n", "exit_code": 0,
                                                          "duration_ms": 1000})))
    r = sandbox.exec("sleep 1", timeout_seconds=5)
    assert r.stdout == "done\n"


def test_exec_deadline_is_its_limit_plus_a_margin():
    t = Transport("k", "http://127.0.0.1:1", timeout=60)
    assert run_deadline(t, None) == 600
    assert run_deadline(t, 0) is None
    assert run_deadline(t, 10) == 70
    assert run_deadline(t, 0.5) == 60.5
    t.timeout = 1000
    assert run_deadline(t, 10) == 1000
    t.timeout = None
    assert run_deadline(t, 10) is None


def test_context_run_code_timeout_error_from_the_api(api, sandbox):
    ctx = pandastack.CodeContext(sandbox._t, SID, "ctx_1")
    api.route("POST", SB + "/contexts/ctx_1/run_code",
              Reply(504, {"error": {"code": "agent_timeout", "message": "late"}}))
    with pytest.raises(TimeoutError) as ei:
        ctx.run_code("import time; time.sleep(100)", timeout_seconds=2)
    assert ei.value.status == 504 and ei.value.code == "agent_timeout"


def test_stream_with_keepalives_is_not_a_timeout(api, sandbox):
    """exec_stream's deadline is an idle limit; keepalive comments reset it."""
    api.route("POST", SB + "/exec_stream", sse(
        [b": keepalive\n\n", 0.2] * 3
        + [b'event: exit\ndata: {"exit_code": 0, "duration_ms": 600}\n\n']))
    r = sandbox.exec_stream("sleep 1")
    assert r.exit_code == 0 and r.duration_ms == 600


def test_silent_stream_gives_client_timeout(api, sandbox, monkeypatch):
    import pandastack._core as core
    monkeypatch.setattr(core, "STREAM_IDLE_TIMEOUT_S", 0.3)
    sandbox._t.timeout = 0.3
    release = threading.Event()
    api.route("POST", SB + "/exec_stream", sse([b'event: stdout\ndata: {"data": "a"}\n\n',
                                                release]))
    got = []
    t0 = time.monotonic()
    with pytest.raises(TimeoutError) as ei:
        sandbox.exec_stream("sleep 100", on_stdout=got.append)
    release.set()
    assert ei.value.code == "client_timeout" and got == ["a"]
    assert time.monotonic() - t0 < 5
