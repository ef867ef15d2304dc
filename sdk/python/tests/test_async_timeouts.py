"""AsyncSandbox client deadlines, as test_timeouts.py for Sandbox: a silent
server gives TimeoutError("client_timeout") within about the deadline; long
calls get a deadline derived from their own limit; a stream's deadline is an
idle limit. Plus cancellation: a caller's own asyncio deadline ends a call and
leaves the sandbox object usable."""
import asyncio
import builtins
import threading
import time

import pytest
from conftest import KEY, SID
from fakeapi import Reply, sandbox_json, sse

from pandastack import AsyncCodeContext, AsyncSandbox, TimeoutError

SB = f"/v1/sandboxes/{SID}"


def slow(seconds, reply, release=None):
    def handler(req):
        if release is not None:
            release.wait(seconds)
        else:
            time.sleep(seconds)
        return reply
    return handler


async def test_silent_server_gives_client_timeout(api):
    release = threading.Event()
    api.route("GET", SB, slow(10, Reply(200, sandbox_json(SID)), release))
    t0 = time.monotonic()
    with pytest.raises(TimeoutError) as ei:
        await AsyncSandbox.connect(SID, api_key=KEY, api_url=api.url, request_timeout=0.5)
    took = time.monotonic() - t0
    release.set()
    assert ei.value.code == "client_timeout" and ei.value.status is None
    assert isinstance(ei.value, builtins.TimeoutError)
    assert 0.4 < took < 5
    assert len(api.calls("GET", SB)) == 1  # a timed-out GET is not repeated


async def test_exec_waits_past_the_request_timeout_for_its_own_limit(api, asandbox):
    asandbox._t.timeout = 0.3
    api.route("POST", SB + "/exec", slow(1.0, Reply(200, {"stdout": "done\n", "exit_code": 0,
                                                          "duration_ms": 1000})))
    r = await asandbox.exec("sleep 1", timeout_seconds=5)
    assert r.stdout == "done\n"


async def test_a_call_without_a_limit_of_its_own_times_out_at_the_request_timeout(api,
                                                                                  asandbox):
    """The positive control of the test above: the same answer is late for a
    call whose deadline is the request timeout."""
    asandbox._t.timeout = 0.3
    release = threading.Event()
    api.route("GET", SB, slow(10, Reply(200, sandbox_json(SID)), release))
    with pytest.raises(TimeoutError):
        await asandbox.get_info()
    release.set()


async def test_context_run_code_timeout_error_from_the_api(api, asandbox):
    ctx = AsyncCodeContext(asandbox._t, SID, "ctx_1")
    api.route("POST", SB + "/contexts/ctx_1/run_code",
              Reply(504, {"error": {"code": "agent_timeout", "message": "late"}}))
    with pytest.raises(TimeoutError) as ei:
        await ctx.run_code("import time; time.sleep(100)", timeout_seconds=2)
    assert ei.value.status == 504 and ei.value.code == "agent_timeout"


STDOUT_A = b'event: stdout\ndata: {"data": "a"}\n\n'


async def test_stream_with_keepalives_is_not_a_timeout(api, asandbox, monkeypatch):
    """exec_stream's deadline is an idle limit; keepalive comments reset it."""
    import pandastack._core as core
    monkeypatch.setattr(core, "STREAM_IDLE_TIMEOUT_S", 0.5)
    asandbox._t.timeout = 0.5
    api.route("POST", SB + "/exec_stream", sse(
        [STDOUT_A] + [0.2, b": keepalive\n\n"] * 5
        + [b'event: exit\ndata: {"exit_code": 0, "duration_ms": 1000}\n\n']))
    r = await asandbox.exec_stream("sleep 1")
    assert r.exit_code == 0 and r.duration_ms == 1000 and r.stdout == "a"


async def test_silent_stream_gives_client_timeout(api, asandbox, monkeypatch):
    import pandastack._core as core
    monkeypatch.setattr(core, "STREAM_IDLE_TIMEOUT_S", 0.3)
    asandbox._t.timeout = 0.3
    release = threading.Event()
    api.route("POST", SB + "/exec_stream", sse([STDOUT_A, release]))
    got = []
    t0 = time.monotonic()
    with pytest.raises(TimeoutError) as ei:
        await asandbox.exec_stream("sleep 100", on_stdout=got.append)
    release.set()
    assert ei.value.code == "client_timeout" and got == ["a"]
    assert time.monotonic() - t0 < 5


async def test_the_callers_own_deadline_cancels_a_call_and_the_sandbox_stays_usable(api,
                                                                                     asandbox):
    release = threading.Event()
    api.route("POST", SB + "/exec", [slow(10, Reply(200, {"stdout": "late\n"}), release),
                                     Reply(200, {"stdout": "next\n", "exit_code": 0})])
    t0 = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(asandbox.exec("sleep 100"), 0.3)
    assert time.monotonic() - t0 < 5
    release.set()
    assert (await asandbox.exec("true")).stdout == "next\n"
    # The cancelled request's connection was closed, not pooled: the next call
    # could not have read the late answer of the first.
    p1, p2 = [r.handler.client_address[1] for r in api.calls("POST", SB + "/exec")]
    assert p1 != p2
