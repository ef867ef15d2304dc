"""AsyncCodeContext against the fake API, as test_code_context.py for
CodeContext: routes and bodies, typed results, streamed cells, errors, close.
Plus concurrency: many cells in flight from one event loop each get their own
answer."""
import asyncio
import re
import threading
import time

import pytest
from conftest import KEY, SID
from fakeapi import Reply, error, sandbox_json, sse

from pandastack import (AsyncCodeContext, AsyncSandbox, ConnectionError, NotFoundError,
                        PandaStackError, Result)

SB = f"/v1/sandboxes/{SID}"
CTX = SB + "/contexts/ctx_abc"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

EXECUTION = {
    "results": [
        {"is_main_result": False, "png": PNG, "text": "<Figure size 640x480 with 1 Axes>"},
        {"is_main_result": True, "text": "5050", "html": "<table></table>"},
    ],
    "stdout": "hi\n", "stderr": "", "error": None, "execution_count": 3, "exit_code": 0,
    "duration_ms": 12,
}


def ctx_of(asandbox):
    return AsyncCodeContext(asandbox._t, SID, "ctx_abc")


async def test_create_run_close(api, asandbox):
    api.route("POST", SB + "/contexts", Reply(201, {"id": "ctx_abc", "language": "python",
                                                    "kernel": "jupyter"}))
    api.route("POST", CTX + "/run_code", Reply(200, EXECUTION))
    api.route("DELETE", CTX, Reply(204))
    async with await asandbox.create_code_context(cwd="/workspace", env={"A": "b"}) as ctx:
        assert isinstance(ctx, AsyncCodeContext) and ctx.id == "ctx_abc"
        assert ctx.language == "python" and ctx.sandbox_id == SID
        assert ctx.info.kernel == "jupyter"
        ex = await ctx.run_code("sum(range(101))", timeout_seconds=2.5)
    assert api.calls("POST", SB + "/contexts")[0].json() == {
        "language": "python", "cwd": "/workspace", "env": {"A": "b"}}
    assert api.calls("POST", CTX + "/run_code")[0].json() == {
        "code": "sum(range(101))", "timeout_seconds": 2.5}
    assert len(api.calls("DELETE", CTX)) == 1
    assert ex.text == "5050" and ex.stdout == "hi\n" and ex.execution_count == 3
    assert ex.png == PNG and ex.results[1].html == "<table></table>" and ex.error is None


async def test_run_code_without_timeout_sends_none(api, asandbox):
    api.route("POST", CTX + "/run_code", Reply(200, EXECUTION))
    await ctx_of(asandbox).run_code("1")
    assert api.calls("POST", CTX + "/run_code")[0].json() == {"code": "1"}


async def test_close_of_a_gone_context_is_fine_and_run_code_raises(api, asandbox):
    api.route("DELETE", CTX, error(404, "context_not_found"))
    await ctx_of(asandbox).close()
    api.route("POST", CTX + "/run_code", error(404, "context_not_found"))
    with pytest.raises(NotFoundError):
        await ctx_of(asandbox).run_code("1")


async def test_list_code_contexts(api, asandbox):
    api.route("GET", SB + "/contexts", Reply(200, {"contexts": [
        {"id": "ctx_1", "language": "python"}, {"language": "python"}, "junk"]}))
    ctxs = await asandbox.list_code_contexts()
    assert [(type(c), c.id, c.language) for c in ctxs] == [(AsyncCodeContext, "ctx_1", "python")]


async def test_context_create_without_id_is_invalid(api, asandbox):
    api.route("POST", SB + "/contexts", Reply(201, {"language": "python"}))
    with pytest.raises(PandaStackError) as ei:
        await asandbox.create_code_context()
    assert ei.value.code == "invalid_response"


async def test_interrupt_and_restart(api, asandbox):
    ctx = ctx_of(asandbox)
    api.route("POST", CTX + "/interrupt", Reply(204))
    api.route("POST", CTX + "/restart", Reply(204))
    assert await ctx.interrupt() is None
    assert await ctx.restart() is None
    assert [c.json() for c in api.calls("POST", CTX + "/interrupt")] == [{}]
    assert [c.json() for c in api.calls("POST", CTX + "/restart")] == [{}]
    api.route("POST", CTX + "/interrupt", error(404, "context_not_found", "gone"))
    with pytest.raises(NotFoundError) as e:
        await ctx.interrupt()
    assert e.value.code == "context_not_found"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1, "5", True])
async def test_bad_timeout_is_refused_before_sending(api, asandbox, bad):
    with pytest.raises(ValueError, match="timeout_seconds"):
        await ctx_of(asandbox).run_code("1", timeout_seconds=bad)
    with pytest.raises(ValueError, match="timeout_seconds"):
        await ctx_of(asandbox).run_code("1", timeout_seconds=bad, on_stdout=print)
    with pytest.raises(ValueError, match="timeout_seconds"):
        await asandbox.exec("true", timeout_seconds=bad)
    assert api.requests == []


CELL_EVENTS = [
    b'event: stdout\ndata: {"text": "0\\n"}\n\n',
    b': keepalive\n\n',
    b'event: result\ndata: {"is_main_result": false, "png": "' + PNG.encode() + b'"}\n\n',
    b'event: stderr\ndata: {"text": "warn\\n"}\n\n',
    b'event: stdout\ndata: {"text": "1\\n"}\n\n',
    b'event: result\ndata: {"is_main_result": true, "text": "42"}\n\n',
    b'event: done\ndata: {"error": null, "execution_count": 4, "exit_code": 0, '
    b'"duration_ms": 1616}\n\n',
]


async def test_run_code_streams_to_callbacks(api, asandbox):
    api.route("POST", CTX + "/run_code_stream", sse(CELL_EVENTS))
    out, err, res = [], [], []

    async def on_result(r):
        res.append(r)

    ex = await ctx_of(asandbox).run_code("loop()", timeout_seconds=3, on_stdout=out.append,
                                         on_stderr=err.append, on_result=on_result)
    (req,) = api.calls("POST", CTX + "/run_code_stream")
    assert req.json() == {"code": "loop()", "timeout_seconds": 3}
    assert req.headers["accept"] == "text/event-stream"
    assert out == ["0\n", "1\n"] and err == ["warn\n"]
    assert [isinstance(r, Result) for r in res] == [True, True] and res[0].png == PNG
    assert ex.stdout == "0\n1\n" and ex.stderr == "warn\n" and ex.text == "42"
    assert ex.png == PNG and ex.execution_count == 4 and ex.duration_ms == 1616
    assert api.calls("POST", CTX + "/run_code") == []


async def test_run_code_stream_errors(api, asandbox):
    ctx = ctx_of(asandbox)
    api.route("POST", CTX + "/run_code_stream", sse([
        b'event: done\ndata: {"error": {"name": "ZeroDivisionError", "value": "division by zero",'
        b' "traceback": "..."}, "execution_count": 5, "exit_code": 1, "duration_ms": 3}\n\n']))
    ex = await ctx.run_code("1/0", on_stdout=lambda s: None)
    assert ex.error.name == "ZeroDivisionError" and ex.exit_code == 1
    api.route("POST", CTX + "/run_code_stream", sse([
        b'event: error\ndata: {"error": {"code": "context_not_found", "message": "gone"}}\n\n']))
    with pytest.raises(NotFoundError):
        await ctx.run_code("1", on_result=lambda r: None)
    api.route("POST", CTX + "/run_code_stream", sse([b'event: stdout\ndata: {"text": "x"}\n\n']))
    with pytest.raises(ConnectionError):
        await ctx.run_code("1", on_stdout=lambda s: None)
    api.route("POST", CTX + "/run_code_stream", sse(CELL_EVENTS))

    def boom(_):
        raise KeyError("mine")
    with pytest.raises(KeyError):
        await ctx.run_code("1", on_stdout=boom)


def kernel(delay_s):
    """A fake kernel: each context keeps `x` between cells and answers
    `x = N` / `x * M` cells (after a delay, so that calls overlap), on the
    plain and the streaming route. state["most"]: the most cells that were
    running at the same time."""
    state = {"now": 0, "most": 0}
    lock = threading.Lock()

    def value(req):
        cid = req.path.split("/")[5]
        code = req.json()["code"]
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(delay_s)
        with lock:
            state["now"] -= 1
        m = re.fullmatch(r"x = (\d+)", code)
        if m:
            state[cid] = int(m.group(1))
            return None
        m = re.fullmatch(r"x \* (\d+)", code)
        return state[cid] * int(m.group(1))

    def run(req):
        v = value(req)
        results = [] if v is None else [{"is_main_result": True, "text": str(v)}]
        return Reply(200, {"results": results, "stdout": "", "error": None, "exit_code": 0})

    def run_stream(req):
        v = value(req)
        events = [b'event: stdout\ndata: {"text": "%d\\n"}\n\n' % v,
                  b'event: result\ndata: {"is_main_result": true, "text": "%d"}\n\n' % v,
                  b'event: done\ndata: {"error": null, "exit_code": 0}\n\n']
        return sse(events)(req)

    return run, run_stream, state


async def test_twenty_concurrent_cells_on_five_sandboxes_each_get_their_own_answer(api):
    """20 run_code calls in flight at once from one event loop, on 5
    sandboxes (one context each, half of the cells streamed): every call
    returns the value its own cell computed."""
    ids = [f"sbx_{i:020d}" for i in range(5)]
    run, run_stream, state = kernel(0.3)
    for sid in ids:
        api.route("GET", f"/v1/sandboxes/{sid}", Reply(200, sandbox_json(sid)))
        api.route("POST", f"/v1/sandboxes/{sid}/contexts", Reply(201, {"id": f"ctx_{sid[-1]}"}))
        base = f"/v1/sandboxes/{sid}/contexts/ctx_{sid[-1]}"
        api.route("POST", base + "/run_code", run)
        api.route("POST", base + "/run_code_stream", run_stream)
    sandboxes = [await AsyncSandbox.connect(sid, api_key=KEY, api_url=api.url) for sid in ids]
    try:
        contexts = [await sb.create_code_context() for sb in sandboxes]
        for k, ctx in enumerate(contexts):
            await ctx.run_code(f"x = {k + 1}")

        async def cell(k, m):
            printed = []
            if m % 2:
                ex = await contexts[k].run_code(f"x * {m}", on_stdout=printed.append)
                assert printed == [f"{(k + 1) * m}\n"]
            else:
                ex = await contexts[k].run_code(f"x * {m}")
            return ex.text

        assert state["most"] == 1  # the probe: one cell at a time so far
        calls = [(k, m) for k in range(5) for m in range(10, 14)]
        got = await asyncio.gather(*(cell(k, m) for k, m in calls))
        assert got == [str((k + 1) * m) for k, m in calls]
        assert state["most"] >= 10  # in flight at the same time, not one after another
    finally:
        for sb in sandboxes:
            await sb.aclose()


async def test_sequential_calls_share_one_connection(api):
    api.route("GET", SB, Reply(200, sandbox_json(SID)))
    api.route("POST", CTX + "/run_code", Reply(200, EXECUTION))
    sb = await AsyncSandbox.connect(SID, api_key=KEY, api_url=api.url)
    try:
        for _ in range(20):
            assert (await ctx_of(sb).run_code("1")).text == "5050"
        assert sb._t.pool.opened == 1
        assert len({r.handler.client_address for r in api.requests}) == 1
    finally:
        await sb.aclose()
