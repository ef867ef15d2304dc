"""AsyncSandbox retries, as test_retries.py for Sandbox: GET/DELETE after a
lost connection or a 502/503; never a POST or PUT whose request went out; a
bounded number of attempts. Plus the keep-alive case: a pooled connection
that the server closed while it was idle."""
import io
import time

import pytest
from conftest import KEY, SID
from fakeapi import Reply, drop_connection, error, sandbox_json

from pandastack import AsyncSandbox, ConnectionError, NotFoundError, SandboxError

SB = f"/v1/sandboxes/{SID}"
EXEC_OK = {"stdout": "ok\n", "stderr": "", "exit_code": 0, "duration_ms": 3}


async def connect(api, **kw):
    sb = await AsyncSandbox.connect(SID, api_key=KEY, api_url=api.url, **kw)
    await sb.aclose()
    return sb


async def test_get_retried_after_503(api):
    api.route("GET", SB, [error(503, "agent_busy"), Reply(200, sandbox_json(SID))])
    assert (await connect(api)).id == SID
    assert len(api.calls("GET", SB)) == 2


async def test_get_retried_after_a_lost_connection(api):
    api.route("GET", SB, [drop_connection, Reply(200, sandbox_json(SID))])
    assert (await connect(api)).status == "running"
    assert len(api.calls("GET", SB)) == 2


async def test_get_retries_are_bounded(api):
    api.route("GET", SB, error(503, "agent_busy", "busy"))
    t0 = time.monotonic()
    with pytest.raises(SandboxError) as ei:
        await connect(api, max_retries=3)
    assert ei.value.status == 503 and ei.value.code == "agent_busy"
    assert len(api.calls("GET", SB)) == 4
    assert time.monotonic() - t0 < 5  # backoff stays small


async def test_max_retries_zero_disables_retries(api):
    api.route("GET", SB, [error(503, "agent_busy"), Reply(200, sandbox_json(SID))])
    with pytest.raises(SandboxError):
        await connect(api, max_retries=0)
    assert len(api.calls("GET", SB)) == 1


async def test_get_not_retried_on_other_errors(api):
    api.route("GET", SB, [error(500, "internal"), Reply(200, sandbox_json(SID))])
    with pytest.raises(SandboxError):
        await connect(api)
    assert len(api.calls("GET", SB)) == 1


async def test_post_exec_not_retried_after_a_lost_connection(api, asandbox):
    api.route("POST", SB + "/exec", [drop_connection, Reply(200, EXEC_OK)])
    with pytest.raises(ConnectionError) as ei:
        await asandbox.exec("touch /tmp/once")
    assert ei.value.code == "connection_failed"
    assert len(api.calls("POST", SB + "/exec")) == 1


async def test_post_exec_not_retried_after_503(api, asandbox):
    api.route("POST", SB + "/exec", [error(503, "agent_busy"), Reply(200, EXEC_OK)])
    with pytest.raises(SandboxError):
        await asandbox.exec("touch /tmp/once")
    assert len(api.calls("POST", SB + "/exec")) == 1


async def test_post_create_not_retried_after_a_lost_connection(api):
    api.route("POST", "/v1/sandboxes", [drop_connection, Reply(201, sandbox_json(SID))])
    with pytest.raises(ConnectionError):
        await AsyncSandbox.create(template="base", api_key=KEY, api_url=api.url)
    assert len(api.calls("POST", "/v1/sandboxes")) == 1


async def test_put_upload_not_retried(api, asandbox, tmp_path):
    api.route("PUT", SB + "/fs", [drop_connection, Reply(200, {"path": "/x", "size": 3})])
    src = tmp_path / "f"
    src.write_bytes(b"abc")
    with pytest.raises(ConnectionError):
        await asandbox.filesystem.upload(str(src), "/x")
    assert len(api.calls("PUT", SB + "/fs")) == 1


async def test_delete_retried_and_a_404_on_the_retry_counts_as_done(api, asandbox):
    api.route("DELETE", SB + "/fs", [drop_connection, error(404, "file_not_found")])
    await asandbox.filesystem.remove("/workspace/x")
    assert len(api.calls("DELETE", SB + "/fs")) == 2


async def test_delete_404_on_the_first_attempt_is_an_error(api, asandbox):
    api.route("DELETE", SB + "/fs", error(404, "file_not_found"))
    with pytest.raises(NotFoundError):
        await asandbox.filesystem.remove("/workspace/x")


async def test_kill_retried_after_a_lost_connection(api, asandbox):
    api.route("DELETE", SB, [drop_connection, Reply(204)])
    await asandbox.kill()
    assert len(api.calls("DELETE", SB)) == 2


async def test_kill_of_a_sandbox_already_gone_is_fine(api, asandbox):
    api.route("DELETE", SB, error(404, "sandbox_not_found"))
    await asandbox.kill()
    await asandbox.kill()
    assert len(api.calls("DELETE", SB)) == 2


def ports(api, method, path):
    return [r.handler.client_address[1] for r in api.calls(method, path)]


async def test_a_get_on_a_pooled_connection_the_server_dropped_is_sent_again(api, asandbox):
    """The server closes a kept-alive connection when the next request
    arrives, before answering: a GET goes again at once on a new
    connection, without using up a retry."""
    asandbox._t.max_retries = 0
    api.route("GET", SB, [Reply(200, sandbox_json(SID)), drop_connection,
                          Reply(200, sandbox_json(SID, status="paused"))])
    assert (await asandbox.get_info()).status == "running"
    assert (await asandbox.get_info()).status == "paused"
    first, dropped, again = ports(api, "GET", SB)
    assert first == dropped != again  # the second went on the pooled connection
    assert asandbox._t.pool.opened == 2


async def test_a_post_on_a_pooled_connection_the_server_dropped_is_not_sent_again(api,
                                                                                   asandbox):
    api.route("POST", SB + "/exec", [Reply(200, EXEC_OK), drop_connection, Reply(200, EXEC_OK)])
    assert (await asandbox.exec("true")).stdout == "ok\n"
    with pytest.raises(ConnectionError) as ei:
        await asandbox.exec("touch /tmp/once")
    assert ei.value.code == "connection_failed"
    first, dropped = ports(api, "POST", SB + "/exec")
    assert first == dropped  # the pooled connection was used, and not given up silently


async def test_a_streamed_put_is_not_sent_again_on_a_dropped_pooled_connection(api, asandbox):
    api.route("PUT", SB + "/fs", [Reply(200, {"path": "/x", "size": 3}), drop_connection])
    await asandbox.filesystem.write("/x", b"abc")
    with pytest.raises(ConnectionError):
        await asandbox.filesystem.write("/x", io.BytesIO(b"abc"))
    assert len(api.calls("PUT", SB + "/fs")) == 2
