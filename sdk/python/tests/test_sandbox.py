"""Sandbox calls against the fake API: request shapes (paths, bodies, headers,
queries), configuration from the environment, result parsing, check=True,
exec_stream callbacks, context managers."""
import json

import pytest
from conftest import KEY, SID
from fakeapi import Reply, error, sandbox_json, sse

import pandastack
from pandastack import CommandFailed, ConnectionError, ExecResult, PandaStackError, Sandbox

SB = f"/v1/sandboxes/{SID}"


def test_create_request_shape(api):
    api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID, "code-interpreter")))
    sb = Sandbox.create(template="code-interpreter", ttl_seconds=3600, env={"A": "1"},
                        metadata={"user": "alice"}, api_key=KEY, api_url=api.url)
    (req,) = api.calls("POST", "/v1/sandboxes")
    assert req.json() == {"template": "code-interpreter", "ttl_seconds": 3600,
                          "env": {"A": "1"}, "metadata": {"user": "alice"}}
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["content-type"] == "application/json"
    assert req.headers["user-agent"].startswith("pandastack-python/")
    assert sb.id == SID and sb.template == "code-interpreter" and sb.status == "running"
    assert sb.info.memory_mib == 512 and sb.info.expires_at == "2026-11-30T03:18:52.123Z"


def test_create_without_ttl_leaves_it_to_the_daemon(api):
    api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID)))
    Sandbox.create(template="base", api_key=KEY, api_url=api.url)
    assert api.calls("POST", "/v1/sandboxes")[0].json() == {"template": "base"}


def test_create_default_template_is_code_interpreter(api):
    api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID)))
    Sandbox.create(api_key=KEY, api_url=api.url)
    assert api.calls("POST", "/v1/sandboxes")[0].json() == {"template": "code-interpreter"}


def test_config_from_the_environment_with_a_path_prefix(api, monkeypatch):
    api.route("POST", "/prefix/v1/sandboxes", Reply(201, sandbox_json(SID)))
    monkeypatch.setenv("PANDASTACK_API_KEY", KEY)
    monkeypatch.setenv("PANDASTACK_API_URL", api.url + "/prefix/")
    sb = Sandbox.create(template="base")
    assert sb.id == SID
    assert api.calls("POST", "/prefix/v1/sandboxes")[0].headers["authorization"] == f"Bearer {KEY}"


def test_arguments_win_over_the_environment(api, monkeypatch):
    api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID)))
    monkeypatch.setenv("PANDASTACK_API_KEY", "pds_from_env")
    monkeypatch.setenv("PANDASTACK_API_URL", "http://127.0.0.1:1")
    Sandbox.create(template="base", api_key=KEY, api_url=api.url)
    assert api.calls("POST", "/v1/sandboxes")[0].headers["authorization"] == f"Bearer {KEY}"


def test_create_answer_without_id_is_invalid(api):
    api.route("POST", "/v1/sandboxes", Reply(201, {"template": "base"}))
    with pytest.raises(PandaStackError) as ei:
        Sandbox.create(template="base", api_key=KEY, api_url=api.url)
    assert ei.value.code == "invalid_response"


def test_non_json_success_is_invalid_response(api):
    api.route("GET", SB, Reply(200, body=b"not json"))
    with pytest.raises(PandaStackError) as ei:
        Sandbox.connect(SID, api_key=KEY, api_url=api.url)
    assert ei.value.code == "invalid_response"


def test_connect_quotes_the_id(api):
    api.route("GET", "/v1/sandboxes/a%2Fb", Reply(200, sandbox_json("a/b")))
    sb = Sandbox.connect("a/b", api_key=KEY, api_url=api.url)
    assert sb.id == "a/b"


def test_list_with_filters(api):
    api.route("GET", "/v1/sandboxes",
              Reply(200, {"sandboxes": [sandbox_json(SID), sandbox_json("sbx_2", status="stopped"),
                                        "junk"]}))
    items = Sandbox.list(status="running", metadata={"user": "al ice"}, api_key=KEY,
                         api_url=api.url)
    (req,) = api.calls("GET", "/v1/sandboxes")
    assert req.query == {"status": ["running"], "metadata.user": ["al ice"]}
    assert [s.id for s in items] == [SID, "sbx_2", ""]
    assert items[1].status == "stopped"


def test_exec_request_and_result(api, sandbox):
    api.route("POST", SB + "/exec", Reply(200, {
        "stdout": "1024\n", "stderr": "", "exit_code": 0, "duration_ms": 41,
        "timed_out": False, "signal": None, "stdout_truncated": False,
        "stderr_truncated": False}))
    r = sandbox.exec("python -c 'print(2 ** 10)'", timeout_seconds=30, env={"X": "y"},
                     cwd="/tmp", stdin="in")
    assert api.calls("POST", SB + "/exec")[0].json() == {
        "cmd": "python -c 'print(2 ** 10)'", "timeout_seconds": 30, "env": {"X": "y"},
        "cwd": "/tmp", "stdin": "in"}
    assert r == ExecResult(stdout="1024\n", stderr="", exit_code=0, duration_ms=41)
    assert isinstance(r.duration_ms, int)


def test_exec_minimal_body(api, sandbox):
    api.route("POST", SB + "/exec", Reply(200, {"stdout": "", "exit_code": 0, "duration_ms": 1}))
    sandbox.exec("true")
    assert api.calls("POST", SB + "/exec")[0].json() == {"cmd": "true"}


def test_exec_non_zero_exit_is_a_result_then_check_raises(api, sandbox):
    api.route("POST", SB + "/exec", Reply(200, {"stdout": "", "stderr": "oops\n",
                                                "exit_code": 3, "duration_ms": 5}))
    r = sandbox.exec("sh -c 'echo oops >&2; exit 3'")
    assert r.exit_code == 3 and r.stderr == "oops\n"
    with pytest.raises(CommandFailed) as ei:
        sandbox.exec("sh -c 'exit 3'", check=True)
    assert ei.value.result.exit_code == 3 and ei.value.result.stderr == "oops\n"


def test_exec_result_with_odd_types_does_not_crash(api, sandbox):
    api.route("POST", SB + "/exec", Reply(200, {"stdout": 5, "stderr": None, "exit_code": "x",
                                                "duration_ms": 2.0, "signal": True}))
    r = sandbox.exec("x")
    assert r.stdout == "" and r.stderr == "" and r.exit_code == -1 and r.duration_ms == 2
    assert r.signal is None


def test_exec_rejects_a_non_string_command(sandbox):
    with pytest.raises(TypeError):
        sandbox.exec(["ls", "-l"])  # type: ignore[arg-type]


def test_exec_stream_callbacks_and_result(api, sandbox):
    api.route("POST", SB + "/exec_stream", sse([
        b'event: started\ndata: {"pid": 1234}\n\n',
        b'event: stdout\ndata: {"data": "line 1\\n"}\n\n',
        b': keepalive\n\n',
        b'event: stderr\r\ndata: {"data": "warning\\n"}\r\n\r\n',
        b'event: stdout\ndata: {"data": "line 2\\n"}\n\n',
        b'event: surprise\ndata: {}\n\n',
        b'event: exit\ndata: {"exit_code": 0, "duration_ms": 812, "timed_out": false, '
        b'"signal": null, "stdout_truncated": false, "stderr_truncated": false}\n\n',
    ]))
    out, err, pids = [], [], []
    r = sandbox.exec_stream("cmd", on_stdout=out.append, on_stderr=err.append,
                            timeout_seconds=5, on_start=pids.append)
    (req,) = api.calls("POST", SB + "/exec_stream")
    assert req.json() == {"cmd": "cmd", "timeout_seconds": 5}
    assert req.headers["accept"] == "text/event-stream"
    assert out == ["line 1\n", "line 2\n"] and err == ["warning\n"] and pids == [1234]
    assert r.stdout == "line 1\nline 2\n" and r.stderr == "warning\n"
    assert r.exit_code == 0 and r.duration_ms == 812


def test_exec_stream_check_raises(api, sandbox):
    api.route("POST", SB + "/exec_stream", sse([
        b'event: stdout\ndata: {"data": "x"}\n\n',
        b'event: exit\ndata: {"exit_code": 2, "duration_ms": 1}\n\n']))
    with pytest.raises(CommandFailed) as ei:
        sandbox.exec_stream("cmd", check=True)
    assert ei.value.result.exit_code == 2 and ei.value.result.stdout == "x"


def test_exec_stream_cut_short_is_a_connection_error(api, sandbox):
    api.route("POST", SB + "/exec_stream", sse([b'event: stdout\ndata: {"data": "x"}\n\n']))
    with pytest.raises(ConnectionError):
        sandbox.exec_stream("cmd")


def test_exec_stream_callback_error_propagates(api, sandbox):
    api.route("POST", SB + "/exec_stream", sse([
        b'event: stdout\ndata: {"data": "x"}\n\n',
        b'event: exit\ndata: {"exit_code": 0, "duration_ms": 1}\n\n']))

    def boom(_):
        raise KeyError("mine")

    with pytest.raises(KeyError):
        sandbox.exec_stream("cmd", on_stdout=boom)

    def closed_pipe(_):
        raise BrokenPipeError("the caller's own pipe")  # an OSError, not a network one

    with pytest.raises(BrokenPipeError):
        sandbox.exec_stream("cmd", on_stdout=closed_pipe)


def test_exec_stream_error_before_start_is_a_json_error(api, sandbox):
    api.route("POST", SB + "/exec_stream", error(409, "sandbox_not_running"))
    with pytest.raises(pandastack.SandboxError) as ei:
        sandbox.exec_stream("cmd")
    assert ei.value.code == "sandbox_not_running" and ei.value.status == 409


def test_exec_stream_event_over_the_cap(api, sandbox, monkeypatch):
    import pandastack._sse as s
    monkeypatch.setattr(s, "MAX_EVENT", 1000)
    api.route("POST", SB + "/exec_stream", sse([
        b'event: stdout\ndata: {"data": "' + b"a" * 2000 + b'"}\n\n']))
    with pytest.raises(PandaStackError) as ei:
        sandbox.exec_stream("cmd")
    assert ei.value.code == "invalid_response"


def test_run_code_one_shot(api, sandbox):
    api.route("POST", SB + "/run_code", Reply(200, {"stdout": "42 84\n", "stderr": "",
                                                    "exit_code": 0, "duration_ms": 9}))
    out = sandbox.run_code("x = 42\nprint(x, x * 2)\n", language="python")
    assert out.stdout == "42 84\n" and out.exit_code == 0
    out = sandbox.run_code("python --version", language="shell", timeout_seconds=10)
    bodies = [r.json() for r in api.calls("POST", SB + "/run_code")]
    assert bodies == [{"code": "x = 42\nprint(x, x * 2)\n", "language": "python"},
                      {"code": "python --version", "language": "shell", "timeout_seconds": 10}]


def test_set_ttl_and_get_info(api, sandbox):
    api.route("POST", SB + "/ttl", Reply(200, sandbox_json(SID, expires_at="later")))
    info = sandbox.set_ttl(7200)
    assert api.calls("POST", SB + "/ttl")[0].json() == {"ttl_seconds": 7200}
    assert info.expires_at == "later" and sandbox.info.expires_at == "later"
    api.route("GET", SB, Reply(200, sandbox_json(SID, status="stopped", reason="ttl expired")))
    assert sandbox.get_info().reason == "ttl expired"
    assert sandbox.is_running() is False


def test_context_manager_kills(api, sandbox):
    api.route("DELETE", SB, Reply(204))
    with sandbox as sb:
        assert sb is sandbox
    assert len(api.calls("DELETE", SB)) == 1


def test_context_manager_keeps_the_original_error(api, sandbox):
    api.route("DELETE", SB, error(500, "internal"))
    with pytest.raises(KeyError):
        with sandbox:
            raise KeyError("user error")
    assert len(api.calls("DELETE", SB)) == 1


def test_kill_error_is_raised_when_the_block_succeeded(api, sandbox):
    api.route("DELETE", SB, error(500, "internal"))
    with pytest.raises(pandastack.SandboxError):
        with sandbox:
            pass


def test_repr_never_shows_the_key(sandbox):
    assert KEY not in repr(sandbox) and KEY not in repr(sandbox._t)


def test_json_body_is_utf8(api, sandbox):
    api.route("POST", SB + "/exec", Reply(200, {"stdout": "é\n", "exit_code": 0,
                                                "duration_ms": 1}))
    r = sandbox.exec("echo é")
    raw = api.calls("POST", SB + "/exec")[0].body
    assert json.loads(raw.decode("utf-8")) == {"cmd": "echo é"}
    assert r.stdout == "é\n"
