"""Error mapping: API statuses and codes to the typed errors, client-side
failures (connection refused, missing key), and the error classes' contract."""
import builtins
import pickle
import socket
import threading
import time

import pytest
from conftest import KEY, SID
from fakeapi import FakeApi, Reply, error, sandbox_json, sse

import pandastack
from pandastack import (AuthenticationError, CommandFailed, ConnectionError, NotFoundError,
                        PandaStackError, RateLimitError, SandboxError, TimeoutError)

SB = f"/v1/sandboxes/{SID}"


@pytest.mark.parametrize("status,code,cls", [
    (401, "unauthorized", AuthenticationError),
    (404, "sandbox_not_found", NotFoundError),
    (408, "request_timeout", TimeoutError),
    (504, "agent_timeout", TimeoutError),
    (429, "too_many_sandboxes", RateLimitError),
    (400, "invalid_field", SandboxError),
    (403, "forbidden", SandboxError),
    (409, "sandbox_not_running", SandboxError),
    (413, "body_too_large", SandboxError),
    (500, "internal", SandboxError),
    (502, "agent_unavailable", SandboxError),
    (503, "agent_busy", SandboxError),
    (507, "no_space", SandboxError),
])
def test_status_maps_to_typed_error(api, status, code, cls):
    api.route("POST", "/v1/sandboxes", error(status, code, f"message for {code}"))
    with pytest.raises(cls) as ei:
        pandastack.Sandbox.create(template="base", api_key=KEY, api_url=api.url)
    e = ei.value
    assert type(e) is cls
    assert isinstance(e, PandaStackError)
    assert e.code == code and e.status == status
    assert e.message == f"message for {code}"
    assert code in str(e) and str(status) in str(e)
    assert len(api.calls("POST", "/v1/sandboxes")) == 1  # a POST is never retried


def test_error_body_that_is_not_json(api):
    api.route("GET", SB, Reply(500, body=b"<html>proxy failure</html>"))
    with pytest.raises(SandboxError) as ei:
        pandastack.Sandbox.connect(SID, api_key=KEY, api_url=api.url, max_retries=0)
    assert ei.value.status == 500 and ei.value.code == "http_500"
    assert "proxy failure" in ei.value.message


def test_error_body_is_read_with_a_cap(api):
    huge = b'{"error": {"code": "x", "message": "' + b"a" * (4 << 20) + b'"}}'
    api.route("GET", SB, Reply(500, body=huge))
    with pytest.raises(SandboxError) as ei:
        pandastack.Sandbox.connect(SID, api_key=KEY, api_url=api.url, max_retries=0)
    assert ei.value.status == 500 and ei.value.code == "http_500"  # truncated: not parsed
    assert len(ei.value.message) <= 1000


def test_413_on_upload_is_reported_even_when_the_server_stops_reading(api, sandbox, tmp_path):
    """The daemon refuses an announced oversize body before reading it; the SDK
    must surface the 413, not a broken pipe."""
    api.route("PUT", SB + "/fs", error(413, "body_too_large", "over --max-upload"),
              stream_body=True)
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(64 << 20)
    with pytest.raises(SandboxError) as ei:
        sandbox.filesystem.upload(str(big), "/workspace/big.bin")
    assert ei.value.status == 413 and ei.value.code == "body_too_large"


def test_connection_refused_is_a_connection_error():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    t0 = time.monotonic()
    with pytest.raises(ConnectionError) as ei:
        pandastack.Sandbox.create(template="base", api_key=KEY,
                                  api_url=f"http://127.0.0.1:{port}", max_retries=2)
    assert ei.value.code == "connection_failed" and ei.value.status is None
    assert isinstance(ei.value, builtins.ConnectionError)
    assert isinstance(ei.value, PandaStackError)
    # Two retries with a bounded backoff (0.1-0.2 s, then 0.2-0.4 s).
    assert 0.1 <= time.monotonic() - t0 < 5


def test_connection_refused_then_up_is_retried_even_for_post():
    """A connection that could not be opened sent nothing: even a create is retried."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    box = {}

    def bring_up():
        time.sleep(0.05)
        api = FakeApi(port)
        api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID)))
        box["api"] = api.start()

    threading.Thread(target=bring_up, daemon=True).start()
    sb = pandastack.Sandbox.create(template="base", api_key=KEY,
                                   api_url=f"http://127.0.0.1:{port}", max_retries=5)
    api = box["api"]
    try:
        assert sb.id == SID
        assert len(api.calls("POST", "/v1/sandboxes")) == 1
    finally:
        api.stop()


def test_missing_key_fails_before_any_request(api):
    with pytest.raises(AuthenticationError) as ei:
        pandastack.Sandbox.create(template="base", api_url=api.url)
    assert ei.value.code == "missing_api_key" and ei.value.status is None
    assert api.requests == []


@pytest.mark.parametrize("kwargs", [
    {"api_url": "ftp://example"}, {"api_url": "http://"}, {"api_url": "http://h:port"},
    {"request_timeout": 0}, {"request_timeout": -1}, {"max_retries": -1}, {"max_retries": 11},
])
def test_bad_config_is_refused_before_any_request(kwargs):
    args = {"api_key": KEY, "api_url": "http://127.0.0.1:1"}
    args.update(kwargs)
    with pytest.raises(PandaStackError) as ei:
        pandastack.Sandbox.create(template="base", **args)
    assert ei.value.code == "invalid_config"


@pytest.mark.parametrize("key", ["pds_a b", "pds_\u00e9", "pds_x\r\nX-Evil: 1"])
def test_a_key_that_cannot_be_a_header_is_refused(key):
    with pytest.raises(AuthenticationError) as ei:
        pandastack.Sandbox.create(template="base", api_key=key, api_url="http://127.0.0.1:1")
    assert ei.value.code == "invalid_api_key"


def test_timeout_error_is_also_the_builtin_one():
    e = TimeoutError("late", "client_timeout")
    assert isinstance(e, builtins.TimeoutError) and isinstance(e, PandaStackError)
    assert e.code == "client_timeout" and e.status is None and e.message == "late"
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is TimeoutError and back.code == "client_timeout"


def test_command_failed_carries_the_result():
    r = pandastack.ExecResult(stdout="", stderr="oops\n", exit_code=3, duration_ms=5)
    e = CommandFailed(r)
    assert e.result is r and e.code == "command_failed" and isinstance(e, PandaStackError)
    assert "3" in str(e)
    assert pickle.loads(pickle.dumps(e)).result == r


@pytest.mark.parametrize("code,cls", [
    ("sandbox_not_running", SandboxError),
    ("sandbox_not_found", NotFoundError),
    ("agent_timeout", TimeoutError),
    ("agent_unavailable", SandboxError),
    ("unauthorized", AuthenticationError),
    ("too_many_sandboxes", RateLimitError),
    ("too_many_contexts", RateLimitError),      # 429 in the API's table
    ("file_not_found", NotFoundError),
    ("vm_start_failed", SandboxError),          # 500 and 503: the first row decides
    ("thing_not_found", SandboxError),          # not an API code, though it looks like one
])
def test_error_event_in_a_stream_is_typed_by_code(api, sandbox, code, cls):
    api.route("POST", SB + "/exec_stream", sse([
        b'event: started\ndata: {"pid": 7}\n\n',
        b'event: stdout\ndata: {"data": "part"}\n\n',
        b'event: error\ndata: {"error": {"code": "%s", "message": "m"}}\n\n' % code.encode()]))
    got = []
    with pytest.raises(cls) as ei:
        sandbox.exec_stream("sleep 100", on_stdout=got.append)
    assert type(ei.value) is cls and ei.value.code == code and got == ["part"]
