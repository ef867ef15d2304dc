"""Background commands (Sandbox.exec(..., background=True), Command,
AsyncCommand) against the fake API: the requests both clients send, the
reading of output by offset until the end (wait), kill and stdin, and
argument errors raised before anything is sent."""
import pytest
from conftest import SID
from fakeapi import Reply, error

from pandastack import AsyncCommand, Command, CommandInfo, NotFoundError, TimeoutError

SB = f"/v1/sandboxes/{SID}"
CID = "cmd_0123456789abcdef0123"
CP = f"{SB}/commands/{CID}"


def cmd_json(running=True, **kw):
    d = {"id": CID, "pid": 42, "cmd": "sleep 9", "cwd": "/workspace",
         "started_at": "2026-12-01T18:00:00.000Z", "running": running, "ended_at": None,
         "exit_code": None, "signal": None, "timed_out": False, "stdout_bytes": 0,
         "stderr_bytes": 0, "stdin_open": running}
    d.update(kw)
    return d


def out_json(stdout, at, total, running, stderr="", err_at=0, err_total=0, **cmd):
    return {"stdout": stdout, "stderr": stderr, "stdout_offset": at,
            "next_stdout_offset": at + len(stdout.encode()), "stdout_dropped": 0,
            "stdout_total": total, "stderr_offset": err_at,
            "next_stderr_offset": err_at + len(stderr.encode()), "stderr_dropped": 0,
            "stderr_total": err_total, "command": cmd_json(running, **cmd)}


def reads():
    """Three reads of a command that prints a, then b, then ends with 3."""
    return [Reply(200, out_json("a\n", 0, 2, True)),
            Reply(200, out_json("b\n", 2, 4, True, stderr="e", err_total=1)),
            Reply(200, out_json("", 4, 4, False, err_at=1, err_total=1, exit_code=3,
                                ended_at="2026-12-01T18:00:02.000Z"))]


def test_start_wait_kill_stdin(api, sandbox):
    api.route("POST", SB + "/exec", Reply(201, cmd_json()))
    c = sandbox.exec("sleep 9", env={"A": "b"}, cwd="/tmp", background=True)
    assert isinstance(c, Command) and c.id == CID and c.pid == 42 and c.info.running
    assert api.calls("POST", SB + "/exec")[0].json() == {
        "cmd": "sleep 9", "env": {"A": "b"}, "cwd": "/tmp", "background": True}
    api.route("GET", CP + "/output", reads())
    r = c.wait(timeout=30)
    assert r.stdout == "a\nb\n" and r.stderr == "e" and r.exit_code == 3
    qs = [q.query for q in api.calls("GET", CP + "/output")]
    assert [(q["stdout_offset"], q["stderr_offset"]) for q in qs] == [
        (["0"], ["0"]), (["2"], ["0"]), (["4"], ["1"])]
    assert all(1 <= int(q["wait_seconds"][0]) <= 30 for q in qs)
    assert c.info.running is False and c.info.exit_code == 3
    api.route("POST", CP + "/kill", Reply(200, cmd_json(False, exit_code=143, signal=15)))
    assert c.kill("SIGTERM").signal == 15
    assert api.calls("POST", CP + "/kill")[0].json() == {"signal": "SIGTERM"}
    api.route("POST", CP + "/stdin", Reply(200, {"written": 3, "stdin_open": False}))
    assert c.send_stdin("hi\n", eof=True) == 3
    assert api.calls("POST", CP + "/stdin")[0].json() == {"data": "hi\n", "eof": True}


def test_list_output_and_errors(api, sandbox):
    api.route("GET", SB + "/commands", Reply(200, {"commands": [cmd_json(), {"id": 5}, 7]}))
    cs = sandbox.list_commands()
    assert [c.id for c in cs] == [CID, "", ""] and cs[0].info == CommandInfo.from_json(cmd_json())
    api.route("GET", CP + "/output", Reply(200, out_json("x", 5, 9, True)))
    o = cs[0].output(stdout_offset=5, max_bytes=1)
    assert o.stdout == "x" and o.next_stdout_offset == 6 and not o.complete
    assert api.calls("GET", CP + "/output")[0].query == {
        "stdout_offset": ["5"], "stderr_offset": ["0"], "max_bytes": ["1"]}
    n = len(api.requests)
    with pytest.raises(ValueError):
        cs[0].kill("SIGSTOP")
    with pytest.raises(ValueError):
        cs[0].output(wait_seconds=61)
    with pytest.raises(ValueError):
        cs[0].send_stdin()
    with pytest.raises(ValueError):
        sandbox.exec("cat", stdin="x", background=True)
    assert len(api.requests) == n  # nothing was sent
    api.route("GET", f"{SB}/commands/cmd_gone/output",
              Reply(404, error(404, "command_not_found").json))
    with pytest.raises(NotFoundError) as ei:
        sandbox.get_command("cmd_gone")
    assert ei.value.code == "command_not_found"


def test_wait_timeout_leaves_it_running(api, sandbox):
    api.route("POST", SB + "/exec", Reply(201, cmd_json()))
    c = sandbox.exec("sleep 9", background=True)
    api.route("GET", CP + "/output", Reply(200, out_json("", 0, 0, True)))
    with pytest.raises(TimeoutError) as ei:
        c.wait(timeout=0.2)
    assert ei.value.code == "client_timeout"
    assert api.calls("GET", CP + "/output")[0].query["wait_seconds"] == ["1"]


async def test_async_start_wait_kill(api, asandbox):
    api.route("POST", SB + "/exec", Reply(201, cmd_json()))
    c = await asandbox.exec("sleep 9", timeout_seconds=5, background=True)
    assert isinstance(c, AsyncCommand) and c.id == CID
    assert api.calls("POST", SB + "/exec")[0].json() == {
        "cmd": "sleep 9", "timeout_seconds": 5, "background": True}
    api.route("GET", CP + "/output", reads())
    r = await c.wait()
    assert r.stdout == "a\nb\n" and r.exit_code == 3
    api.route("POST", CP + "/kill", Reply(200, cmd_json(False, exit_code=137, signal=9)))
    assert (await c.kill()).exit_code == 137
    assert api.calls("POST", CP + "/kill")[0].json() == {"signal": "SIGKILL"}
    api.route("GET", SB + "/commands", Reply(200, {"commands": [cmd_json()]}))
    assert [x.id for x in await asandbox.list_commands()] == [CID]
    api.route("POST", CP + "/stdin", Reply(200, {"written": 0, "stdin_open": False}))
    assert await c.send_stdin(eof=True) == 0
    assert api.calls("POST", CP + "/stdin")[0].json() == {"eof": True}
