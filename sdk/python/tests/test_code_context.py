"""Code contexts and the Execution / Result model against the fake API: the
routes and bodies, the conveniences (.text, .png, .chart), errors, close."""
import pytest
from conftest import SID
from fakeapi import Reply, error, sse

from pandastack import CodeContext, Execution, ExecutionError, NotFoundError, Result

SB = f"/v1/sandboxes/{SID}"
CTX = SB + "/contexts/ctx_abc"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

EXECUTION = {
    "results": [
        {"is_main_result": False, "png": PNG, "text": "<Figure size 640x480 with 1 Axes>"},
        {"is_main_result": False, "svg": "<svg/>", "extra": {"application/vnd.plotly.v1+json": {"data": []}}},
        {"is_main_result": True, "text": "5050", "html": "<table></table>", "json": {"a": 1},
         "markdown": "**b**", "latex": "$x$", "javascript": "1", "jpeg": "/9j/"},
    ],
    "stdout": "hi\n", "stderr": "", "error": None, "execution_count": 3, "exit_code": 0,
    "duration_ms": 12,
}


def test_create_run_close(api, sandbox):
    api.route("POST", SB + "/contexts", Reply(201, {"id": "ctx_abc", "language": "python"}))
    api.route("POST", CTX + "/run_code", Reply(200, EXECUTION))
    api.route("DELETE", CTX, Reply(204))
    with sandbox.create_code_context(cwd="/workspace", env={"A": "b"}) as ctx:
        assert isinstance(ctx, CodeContext) and ctx.id == "ctx_abc"
        assert ctx.language == "python" and ctx.sandbox_id == SID
        ex = ctx.run_code("sum(range(101))", timeout_seconds=2.5)
    assert api.calls("POST", SB + "/contexts")[0].json() == {
        "language": "python", "cwd": "/workspace", "env": {"A": "b"}}
    assert api.calls("POST", CTX + "/run_code")[0].json() == {
        "code": "sum(range(101))", "timeout_seconds": 2.5}
    assert len(api.calls("DELETE", CTX)) == 1
    assert ex.text == "5050" and ex.stdout == "hi\n" and ex.execution_count == 3
    assert ex.png == PNG and ex.error is None and ex.exit_code == 0 and ex.duration_ms == 12


def test_run_code_without_timeout_sends_none(api, sandbox):
    ctx = CodeContext(sandbox._t, SID, "ctx_abc")
    api.route("POST", CTX + "/run_code", Reply(200, EXECUTION))
    ctx.run_code("1")
    assert api.calls("POST", CTX + "/run_code")[0].json() == {"code": "1"}


def test_results_fields_and_chart():
    ex = Execution.from_json(EXECUTION)
    fig, disp, main = ex.results
    assert fig.chart == PNG and fig.png == PNG and not fig.is_main_result
    assert disp.chart == "<svg/>" and disp.png is None
    assert disp.extra == {"application/vnd.plotly.v1+json": {"data": []}}
    assert disp.formats() == ["svg", "application/vnd.plotly.v1+json"]
    assert main.is_main_result and main.html == "<table></table>" and main.json == {"a": 1}
    assert main.markdown == "**b**" and main.latex == "$x$" and main.javascript == "1"
    assert main.chart == "/9j/"  # jpeg when there is no png
    assert str(main) == "5050" and ex.main_result is main
    assert Result().chart is None and str(Result()) == ""


def test_text_is_the_main_results_only():
    ex = Execution.from_json({"results": [{"is_main_result": False, "text": "display"}]})
    assert ex.text is None and ex.png is None


def test_error_shapes():
    ex = Execution.from_json({"results": [], "stdout": "", "stderr": "", "execution_count": 4,
                              "error": {"name": "ZeroDivisionError", "value": "division by zero",
                                        "traceback": ["Traceback...", "ZeroDivisionError: division by zero"]},
                              "exit_code": 1})
    assert isinstance(ex.error, ExecutionError) and ex.exit_code == 1
    assert ex.error.name == "ZeroDivisionError"
    assert ex.error.traceback == "Traceback...\nZeroDivisionError: division by zero"
    assert str(ex.error).startswith("ZeroDivisionError: division by zero\n")
    ex2 = Execution.from_json({"error": {"name": "TimeoutError", "value": "", "traceback": "tb"}})
    assert ex2.exit_code == 1 and str(ex2.error) == "TimeoutError\ntb"


def test_hostile_execution_json_does_not_crash():
    for doc in (None, [], "x", {"results": "no"}, {"results": [1, None, {"png": 5}]},
                {"error": "oops", "execution_count": "3", "exit_code": None}):
        ex = Execution.from_json(doc)
        assert isinstance(ex, Execution)
        assert all(r.png is None for r in ex.results)
    assert Execution.from_json({"error": "oops"}).error is None


def test_close_of_a_gone_context_is_fine(api, sandbox):
    ctx = CodeContext(sandbox._t, SID, "ctx_abc")
    api.route("DELETE", CTX, error(404, "context_not_found"))
    ctx.close()


def test_run_code_on_a_gone_context_raises(api, sandbox):
    ctx = CodeContext(sandbox._t, SID, "ctx_abc")
    api.route("POST", CTX + "/run_code", error(404, "context_not_found"))
    with pytest.raises(NotFoundError):
        ctx.run_code("1")


def test_list_code_contexts(api, sandbox):
    api.route("GET", SB + "/contexts", Reply(200, {"contexts": [
        {"id": "ctx_1", "language": "python"}, {"language": "python"}, "junk"]}))
    ctxs = sandbox.list_code_contexts()
    assert [(c.id, c.language) for c in ctxs] == [("ctx_1", "python")]


def test_context_create_without_id_is_invalid(api, sandbox):
    from pandastack import PandaStackError
    api.route("POST", SB + "/contexts", Reply(201, {"language": "python"}))
    with pytest.raises(PandaStackError) as ei:
        sandbox.create_code_context()
    assert ei.value.code == "invalid_response"


def test_interrupt_and_restart(api, sandbox):
    ctx = CodeContext(sandbox._t, SID, "ctx_abc")
    api.route("POST", CTX + "/interrupt", Reply(204))
    api.route("POST", CTX + "/restart", Reply(204))
    assert ctx.interrupt() is None
    assert ctx.restart() is None
    assert [c.json() for c in api.calls("POST", CTX + "/interrupt")] == [{}]
    assert [c.json() for c in api.calls("POST", CTX + "/restart")] == [{}]
    api.route("POST", CTX + "/interrupt",
              error(404, "context_not_found", "no context 'ctx_abc'"))
    with pytest.raises(NotFoundError) as e:
        ctx.interrupt()
    assert e.value.code == "context_not_found"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1, "5", True])
def test_bad_timeout_is_refused_before_sending(api, sandbox, bad):
    ctx = CodeContext(sandbox._t, SID, "ctx_abc")
    with pytest.raises(ValueError, match="timeout_seconds"):
        ctx.run_code("1", timeout_seconds=bad)
    with pytest.raises(ValueError, match="timeout_seconds"):
        sandbox.exec("true", timeout_seconds=bad)
    assert api.calls("POST", CTX + "/run_code") == []
    assert api.calls("POST", SB + "/exec") == []


def test_connect_needs_an_id(api):
    from pandastack import Sandbox
    with pytest.raises(ValueError, match="sandbox_id"):
        Sandbox.connect("", api_key="pds_x", api_url="http://127.0.0.1:9")


def test_context_info_keeps_the_api_fields(api, sandbox):
    api.route("POST", SB + "/contexts", Reply(201, {
        "id": "ctx_abc", "language": "python", "cwd": "/tmp", "kernel": "jupyter",
        "language_version": "3.11.2", "busy": False, "created_at": "2026-11-30T03:50:04.695Z"}))
    ctx = sandbox.create_code_context(cwd="/tmp")
    i = ctx.info
    assert (i.id, i.cwd, i.kernel, i.language_version, i.busy, i.created_at) == (
        "ctx_abc", "/tmp", "jupyter", "3.11.2", False, "2026-11-30T03:50:04.695Z")


def test_run_code_streams_to_callbacks(api, sandbox):
    ctx = CodeContext(sandbox._t, SID, "ctx_abc")
    api.route("POST", CTX + "/run_code_stream", sse([
        b'event: stdout\ndata: {"text": "0\\n"}\n\n',
        b': keepalive\n\n',
        b'event: result\ndata: {"is_main_result": false, "png": "' + PNG.encode() + b'"}\n\n',
        b'event: stderr\ndata: {"text": "warn\\n"}\n\n',
        b'event: stdout\ndata: {"text": "1\\n"}\n\n',
        b'event: result\ndata: {"is_main_result": true, "text": "42"}\n\n',
        b'event: done\ndata: {"error": null, "execution_count": 4, "exit_code": 0, '
        b'"duration_ms": 1616}\n\n',
    ]))
    out, err, res = [], [], []
    ex = ctx.run_code("loop()", timeout_seconds=3, on_stdout=out.append,
                      on_stderr=err.append, on_result=res.append)
    (req,) = api.calls("POST", CTX + "/run_code_stream")
    assert req.json() == {"code": "loop()", "timeout_seconds": 3}
    assert req.headers["accept"] == "text/event-stream"
    assert out == ["0\n", "1\n"] and err == ["warn\n"]
    assert [isinstance(r, Result) for r in res] == [True, True] and res[0].png == PNG
    assert ex.stdout == "0\n1\n" and ex.stderr == "warn\n" and ex.text == "42"
    assert ex.png == PNG and ex.execution_count == 4 and ex.duration_ms == 1616
    assert ex.error is None and ex.exit_code == 0 and api.calls("POST", CTX + "/run_code") == []


def test_run_code_stream_errors(api, sandbox):
    ctx = CodeContext(sandbox._t, SID, "ctx_abc")
    api.route("POST", CTX + "/run_code_stream", sse([
        b'event: stdout\ndata: {"text": "x"}\n\n',
        b'event: done\ndata: {"error": {"name": "ZeroDivisionError", "value": "division by zero",'
        b' "traceback": "..."}, "execution_count": 5, "exit_code": 1, "duration_ms": 3}\n\n']))
    ex = ctx.run_code("1/0", on_stdout=lambda s: None)
    assert ex.error.name == "ZeroDivisionError" and ex.exit_code == 1
    api.route("POST", CTX + "/run_code_stream", sse([
        b'event: error\ndata: {"error": {"code": "context_not_found", "message": "gone"}}\n\n']))
    with pytest.raises(NotFoundError):
        ctx.run_code("1", on_result=lambda r: None)
    api.route("POST", CTX + "/run_code_stream", sse([b'event: stdout\ndata: {"text": "x"}\n\n']))
    from pandastack import ConnectionError as PSConnectionError
    with pytest.raises(PSConnectionError):
        ctx.run_code("1", on_stdout=lambda s: None)
    api.route("POST", CTX + "/run_code_stream", sse([
        b'event: stdout\ndata: {"text": "x"}\n\n',
        b'event: done\ndata: {"error": null, "exit_code": 0, "duration_ms": 1}\n\n']))

    def boom(_):
        raise KeyError("mine")
    with pytest.raises(KeyError):
        ctx.run_code("1", on_stdout=boom)
