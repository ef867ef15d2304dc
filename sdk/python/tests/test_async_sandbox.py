"""AsyncSandbox calls against the fake API, as test_sandbox.py for Sandbox:
request shapes, configuration from the environment, result parsing,
check=True, exec_stream callbacks (plain and coroutine functions), `async
with`. Both clients must send the same requests: one test compares them."""
import asyncio
import json

import pytest
from conftest import KEY, SID
from fakeapi import Reply, error, sandbox_json, sse

import pandastack
from pandastack import (AsyncSandbox, CommandFailed, ConnectionError, ExecResult,
                        PandaStackError, Sandbox)

SB = f"/v1/sandboxes/{SID}"


async def test_create_request_shape(api):
    api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID, "code-interpreter")))
    sb = await AsyncSandbox.create(template="code-interpreter", ttl_seconds=3600,
                                   env={"A": "1"}, metadata={"user": "alice"}, api_key=KEY,
                                   api_url=api.url)
    await sb.aclose()
    (req,) = api.calls("POST", "/v1/sandboxes")
    assert req.json() == {"template": "code-interpreter", "ttl_seconds": 3600,
                          "env": {"A": "1"}, "metadata": {"user": "alice"}}
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["content-type"] == "application/json"
    assert req.headers["user-agent"].startswith("pandastack-python/")
    assert req.headers["host"] == f"127.0.0.1:{api.port}"
    assert sb.id == SID and sb.template == "code-interpreter" and sb.status == "running"
    assert sb.info.memory_mib == 512 and sb.info.expires_at == "2026-11-30T03:18:52.123Z"


async def test_both_clients_send_the_same_requests(api):
    """Every route of the surface, through Sandbox in a thread and through
    AsyncSandbox: same methods, targets, bodies and headers (bar Host)."""
    api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID)))
    api.route("POST", SB + "/exec", Reply(200, {"stdout": "", "exit_code": 0}))
    api.route("POST", SB + "/run_code", Reply(200, {"stdout": "", "exit_code": 0}))
    api.route("POST", SB + "/ttl", Reply(200, sandbox_json(SID)))
    api.route("GET", SB, Reply(200, sandbox_json(SID)))
    api.route("POST", SB + "/contexts", Reply(201, {"id": "ctx_1"}))
    api.route("POST", SB + "/contexts/ctx_1/run_code", Reply(200, {"results": []}))
    api.route("DELETE", SB + "/contexts/ctx_1", Reply(204))
    api.route("PUT", SB + "/fs", Reply(200, {"path": "/p", "size": 1}))
    api.route("GET", SB + "/fs/list", Reply(200, {"entries": []}))
    api.route("DELETE", SB, Reply(204))

    def sync_client():
        sb = Sandbox.create(template="base", ttl_seconds=60, api_key=KEY, api_url=api.url)
        sb.exec("echo é", timeout_seconds=5, env={"A": "b"}, cwd="/tmp", stdin="x")
        sb.run_code("1", language="shell")
        sb.set_ttl(100)
        sb.get_info()
        ctx = sb.create_code_context(cwd="/w")
        ctx.run_code("2", timeout_seconds=3)
        ctx.close()
        sb.filesystem.write("/p q", "x")
        sb.filesystem.list("/")
        sb.kill()

    async def async_client():
        sb = await AsyncSandbox.create(template="base", ttl_seconds=60, api_key=KEY,
                                       api_url=api.url)
        await sb.exec("echo é", timeout_seconds=5, env={"A": "b"}, cwd="/tmp", stdin="x")
        await sb.run_code("1", language="shell")
        await sb.set_ttl(100)
        await sb.get_info()
        ctx = await sb.create_code_context(cwd="/w")
        await ctx.run_code("2", timeout_seconds=3)
        await ctx.close()
        await sb.filesystem.write("/p q", "x")
        await sb.filesystem.list("/")
        await sb.kill()

    def seen():
        return [(r.method, r.path, r.query, r.body,
                 {k: v for k, v in r.headers.items() if k != "host"}) for r in api.requests]

    await asyncio.to_thread(sync_client)
    want = seen()
    api.requests.clear()
    await async_client()
    assert seen() == want and len(want) == 11


async def test_create_default_template_is_code_interpreter(api):
    api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID)))
    await (await AsyncSandbox.create(api_key=KEY, api_url=api.url)).aclose()
    assert api.calls("POST", "/v1/sandboxes")[0].json() == {"template": "code-interpreter"}


async def test_config_from_the_environment_with_a_path_prefix(api, monkeypatch):
    api.route("POST", "/prefix/v1/sandboxes", Reply(201, sandbox_json(SID)))
    monkeypatch.setenv("PANDASTACK_API_KEY", KEY)
    monkeypatch.setenv("PANDASTACK_API_URL", api.url + "/prefix/")
    sb = await AsyncSandbox.create(template="base")
    await sb.aclose()
    assert sb.id == SID
    assert api.calls("POST", "/prefix/v1/sandboxes")[0].headers["authorization"] == f"Bearer {KEY}"


async def test_arguments_win_over_the_environment(api, monkeypatch):
    api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID)))
    monkeypatch.setenv("PANDASTACK_API_KEY", "pds_from_env")
    monkeypatch.setenv("PANDASTACK_API_URL", "http://127.0.0.1:1")
    await (await AsyncSandbox.create(template="base", api_key=KEY, api_url=api.url)).aclose()
    assert api.calls("POST", "/v1/sandboxes")[0].headers["authorization"] == f"Bearer {KEY}"


async def test_create_answer_without_id_is_invalid(api):
    api.route("POST", "/v1/sandboxes", Reply(201, {"template": "base"}))
    with pytest.raises(PandaStackError) as ei:
        await AsyncSandbox.create(template="base", api_key=KEY, api_url=api.url)
    assert ei.value.code == "invalid_response"


async def test_non_json_success_is_invalid_response(api):
    api.route("GET", SB, Reply(200, body=b"not json"))
    with pytest.raises(PandaStackError) as ei:
        await AsyncSandbox.connect(SID, api_key=KEY, api_url=api.url)
    assert ei.value.code == "invalid_response"


async def test_connect_quotes_the_id_and_needs_one(api):
    api.route("GET", "/v1/sandboxes/a%2Fb", Reply(200, sandbox_json("a/b")))
    sb = await AsyncSandbox.connect("a/b", api_key=KEY, api_url=api.url)
    await sb.aclose()
    assert sb.id == "a/b"
    with pytest.raises(ValueError, match="sandbox_id"):
        await AsyncSandbox.connect("", api_key=KEY, api_url=api.url)


async def test_list_with_filters(api):
    api.route("GET", "/v1/sandboxes",
              Reply(200, {"sandboxes": [sandbox_json(SID), sandbox_json("sbx_2", status="stopped"),
                                        "junk"]}))
    items = await AsyncSandbox.list(status="running", metadata={"user": "al ice"}, api_key=KEY,
                                    api_url=api.url)
    (req,) = api.calls("GET", "/v1/sandboxes")
    assert req.query == {"status": ["running"], "metadata.user": ["al ice"]}
    assert [s.id for s in items] == [SID, "sbx_2", ""]


async def test_exec_request_and_result(api, asandbox):
    api.route("POST", SB + "/exec", Reply(200, {
        "stdout": "1024\n", "stderr": "", "exit_code": 0, "duration_ms": 41,
        "timed_out": False, "signal": None, "stdout_truncated": False,
        "stderr_truncated": False}))
    r = await asandbox.exec("python -c 'print(2 ** 10)'", timeout_seconds=30, env={"X": "y"},
                            cwd="/tmp", stdin="in")
    assert api.calls("POST", SB + "/exec")[0].json() == {
        "cmd": "python -c 'print(2 ** 10)'", "timeout_seconds": 30, "env": {"X": "y"},
        "cwd": "/tmp", "stdin": "in"}
    assert r == ExecResult(stdout="1024\n", stderr="", exit_code=0, duration_ms=41)


async def test_exec_non_zero_exit_is_a_result_then_check_raises(api, asandbox):
    api.route("POST", SB + "/exec", Reply(200, {"stdout": "", "stderr": "oops\n",
                                                "exit_code": 3, "duration_ms": 5}))
    r = await asandbox.exec("sh -c 'echo oops >&2; exit 3'")
    assert r.exit_code == 3 and r.stderr == "oops\n"
    with pytest.raises(CommandFailed) as ei:
        await asandbox.exec("sh -c 'exit 3'", check=True)
    assert ei.value.result.exit_code == 3 and ei.value.result.stderr == "oops\n"


async def test_exec_result_with_odd_types_does_not_crash(api, asandbox):
    api.route("POST", SB + "/exec", Reply(200, {"stdout": 5, "stderr": None, "exit_code": "x",
                                                "duration_ms": 2.0, "signal": True}))
    r = await asandbox.exec("x")
    assert r.stdout == "" and r.stderr == "" and r.exit_code == -1 and r.duration_ms == 2


async def test_exec_rejects_a_non_string_command(asandbox):
    with pytest.raises(TypeError):
        await asandbox.exec(["ls", "-l"])  # type: ignore[arg-type]


EXEC_EVENTS = [
    b'event: started\ndata: {"pid": 1234}\n\n',
    b'event: stdout\ndata: {"data": "line 1\\n"}\n\n',
    b': keepalive\n\n',
    b'event: stderr\r\ndata: {"data": "warning\\n"}\r\n\r\n',
    b'event: stdout\ndata: {"data": "line 2\\n"}\n\n',
    b'event: surprise\ndata: {}\n\n',
    b'event: exit\ndata: {"exit_code": 0, "duration_ms": 812, "timed_out": false, '
    b'"signal": null, "stdout_truncated": false, "stderr_truncated": false}\n\n',
]


async def test_exec_stream_callbacks_and_result(api, asandbox):
    api.route("POST", SB + "/exec_stream", sse(EXEC_EVENTS))
    out, err, pids = [], [], []
    r = await asandbox.exec_stream("cmd", on_stdout=out.append, on_stderr=err.append,
                                   timeout_seconds=5, on_start=pids.append)
    (req,) = api.calls("POST", SB + "/exec_stream")
    assert req.json() == {"cmd": "cmd", "timeout_seconds": 5}
    assert req.headers["accept"] == "text/event-stream"
    assert out == ["line 1\n", "line 2\n"] and err == ["warning\n"] and pids == [1234]
    assert r.stdout == "line 1\nline 2\n" and r.stderr == "warning\n"
    assert r.exit_code == 0 and r.duration_ms == 812


async def test_exec_stream_awaits_coroutine_callbacks_in_order(api, asandbox):
    api.route("POST", SB + "/exec_stream", sse(EXEC_EVENTS))
    seen = []

    async def slow_sink(chunk):
        await asyncio.sleep(0.05)  # the next event waits for this one
        seen.append(("out", chunk))

    async def on_stderr(chunk):
        seen.append(("err", chunk))

    r = await asandbox.exec_stream("cmd", on_stdout=slow_sink, on_stderr=on_stderr)
    assert seen == [("out", "line 1\n"), ("err", "warning\n"), ("out", "line 2\n")]
    assert r.exit_code == 0


async def test_exec_stream_over_chunked_transfer(api, asandbox):
    """The daemon sends its streams with chunked transfer encoding; events
    may be split anywhere between chunks."""
    api.route("POST", SB + "/exec_stream", sse([b"".join(EXEC_EVENTS)], chunked=7))
    out = []
    r = await asandbox.exec_stream("cmd", on_stdout=out.append)
    assert out == ["line 1\n", "line 2\n"] and r.duration_ms == 812


async def test_exec_stream_check_raises(api, asandbox):
    api.route("POST", SB + "/exec_stream", sse([
        b'event: stdout\ndata: {"data": "x"}\n\n',
        b'event: exit\ndata: {"exit_code": 2, "duration_ms": 1}\n\n']))
    with pytest.raises(CommandFailed) as ei:
        await asandbox.exec_stream("cmd", check=True)
    assert ei.value.result.exit_code == 2 and ei.value.result.stdout == "x"


async def test_exec_stream_cut_short_is_a_connection_error(api, asandbox):
    api.route("POST", SB + "/exec_stream", sse([b'event: stdout\ndata: {"data": "x"}\n\n']))
    with pytest.raises(ConnectionError):
        await asandbox.exec_stream("cmd")


async def test_exec_stream_callback_error_propagates(api, asandbox):
    api.route("POST", SB + "/exec_stream", sse([
        b'event: stdout\ndata: {"data": "x"}\n\n',
        b'event: exit\ndata: {"exit_code": 0, "duration_ms": 1}\n\n']))

    def boom(_):
        raise KeyError("mine")

    with pytest.raises(KeyError):
        await asandbox.exec_stream("cmd", on_stdout=boom)

    async def closed_pipe(_):
        raise BrokenPipeError("the caller's own pipe")  # an OSError, not a network one

    with pytest.raises(BrokenPipeError):
        await asandbox.exec_stream("cmd", on_stdout=closed_pipe)


async def test_exec_stream_error_before_start_is_a_json_error(api, asandbox):
    api.route("POST", SB + "/exec_stream", error(409, "sandbox_not_running"))
    with pytest.raises(pandastack.SandboxError) as ei:
        await asandbox.exec_stream("cmd")
    assert ei.value.code == "sandbox_not_running" and ei.value.status == 409


async def test_exec_stream_line_and_event_over_the_cap(api, asandbox, monkeypatch):
    import pandastack._sse as s
    monkeypatch.setattr(s, "MAX_EVENT", 1000)
    api.route("POST", SB + "/exec_stream", sse([
        b'event: stdout\ndata: {"data": "' + b"a" * 2000 + b'"}\n\n']))
    with pytest.raises(PandaStackError) as ei:
        await asandbox.exec_stream("cmd")
    assert ei.value.code == "invalid_response"
    monkeypatch.setattr(s, "MAX_LINE", 1000)
    monkeypatch.setattr(s, "MAX_EVENT", 16 << 20)
    api.route("POST", SB + "/exec_stream", sse([b"data: " + b"b" * 5000]))  # no line end
    with pytest.raises(PandaStackError) as ei:
        await asandbox.exec_stream("cmd")
    assert ei.value.code == "invalid_response"


async def test_run_code_one_shot(api, asandbox):
    api.route("POST", SB + "/run_code", Reply(200, {"stdout": "42 84\n", "stderr": "",
                                                    "exit_code": 0, "duration_ms": 9}))
    out = await asandbox.run_code("x = 42\nprint(x, x * 2)\n", language="python")
    assert out.stdout == "42 84\n" and out.exit_code == 0
    await asandbox.run_code("python --version", language="shell", timeout_seconds=10)
    bodies = [r.json() for r in api.calls("POST", SB + "/run_code")]
    assert bodies == [{"code": "x = 42\nprint(x, x * 2)\n", "language": "python"},
                      {"code": "python --version", "language": "shell", "timeout_seconds": 10}]


async def test_set_ttl_get_info_is_running(api, asandbox):
    api.route("POST", SB + "/ttl", Reply(200, sandbox_json(SID, expires_at="later")))
    info = await asandbox.set_ttl(7200)
    assert api.calls("POST", SB + "/ttl")[0].json() == {"ttl_seconds": 7200}
    assert info.expires_at == "later" and asandbox.info.expires_at == "later"
    api.route("GET", SB, [Reply(200, sandbox_json(SID, status="stopped", reason="ttl expired")),
                          Reply(200, sandbox_json(SID)), error(404, "sandbox_not_found")])
    assert (await asandbox.get_info()).reason == "ttl expired"
    assert await asandbox.is_running() is True
    assert await asandbox.is_running() is False


async def test_async_with_kills(api, asandbox):
    api.route("DELETE", SB, Reply(204))
    async with asandbox as sb:
        assert sb is asandbox
    assert len(api.calls("DELETE", SB)) == 1


async def test_async_with_keeps_the_original_error(api, asandbox):
    api.route("DELETE", SB, error(500, "internal"))
    with pytest.raises(KeyError):
        async with asandbox:
            raise KeyError("user error")
    assert len(api.calls("DELETE", SB)) == 1


async def test_kill_error_is_raised_when_the_block_succeeded(api, asandbox):
    api.route("DELETE", SB, error(500, "internal"))
    with pytest.raises(pandastack.SandboxError):
        async with asandbox:
            pass


async def test_repr_never_shows_the_key(asandbox):
    assert KEY not in repr(asandbox) and KEY not in repr(asandbox._t)


async def test_json_body_is_utf8(api, asandbox):
    api.route("POST", SB + "/exec", Reply(200, {"stdout": "é\n", "exit_code": 0,
                                                "duration_ms": 1}))
    r = await asandbox.exec("echo é")
    raw = api.calls("POST", SB + "/exec")[0].body
    assert json.loads(raw.decode("utf-8")) == {"cmd": "echo é"}
    assert r.stdout == "é\n"
