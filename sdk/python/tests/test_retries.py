"""Retries only where safe: GET/DELETE after a lost connection or a 502/503;
never a POST or PUT whose request went out; a bounded number of attempts."""
import time

import pytest
from conftest import KEY, SID
from fakeapi import Reply, drop_connection, error, sandbox_json

import pandastack
from pandastack import ConnectionError, NotFoundError, SandboxError

SB = f"/v1/sandboxes/{SID}"
EXEC_OK = {"stdout": "ok\n", "stderr": "", "exit_code": 0, "duration_ms": 3}


def test_get_retried_after_503(api):
    api.route("GET", SB, [error(503, "agent_busy"), Reply(200, sandbox_json(SID))])
    sb = pandastack.Sandbox.connect(SID, api_key=KEY, api_url=api.url)
    assert sb.id == SID
    assert len(api.calls("GET", SB)) == 2


def test_get_retried_after_a_lost_connection(api):
    api.route("GET", SB, [drop_connection, Reply(200, sandbox_json(SID))])
    sb = pandastack.Sandbox.connect(SID, api_key=KEY, api_url=api.url)
    assert sb.status == "running"
    assert len(api.calls("GET", SB)) == 2


def test_get_retries_are_bounded(api):
    api.route("GET", SB, error(503, "agent_busy", "busy"))
    t0 = time.monotonic()
    with pytest.raises(SandboxError) as ei:
        pandastack.Sandbox.connect(SID, api_key=KEY, api_url=api.url, max_retries=3)
    assert ei.value.status == 503 and ei.value.code == "agent_busy"
    assert len(api.calls("GET", SB)) == 4
    assert time.monotonic() - t0 < 5  # backoff stays small


def test_max_retries_zero_disables_retries(api):
    api.route("GET", SB, [error(503, "agent_busy"), Reply(200, sandbox_json(SID))])
    with pytest.raises(SandboxError):
        pandastack.Sandbox.connect(SID, api_key=KEY, api_url=api.url, max_retries=0)
    assert len(api.calls("GET", SB)) == 1


def test_get_not_retried_on_other_errors(api):
    api.route("GET", SB, [error(500, "internal"), Reply(200, sandbox_json(SID))])
    with pytest.raises(SandboxError):
        pandastack.Sandbox.connect(SID, api_key=KEY, api_url=api.url)
    assert len(api.calls("GET", SB)) == 1


def test_post_exec_not_retried_after_a_lost_connection(api, sandbox):
    api.route("POST", SB + "/exec", [drop_connection, Reply(200, EXEC_OK)])
    with pytest.raises(ConnectionError) as ei:
        sandbox.exec("touch /tmp/once")
    assert ei.value.code == "connection_failed"
    assert len(api.calls("POST", SB + "/exec")) == 1


def test_post_exec_not_retried_after_503(api, sandbox):
    api.route("POST", SB + "/exec", [error(503, "agent_busy"), Reply(200, EXEC_OK)])
    with pytest.raises(SandboxError):
        sandbox.exec("touch /tmp/once")
    assert len(api.calls("POST", SB + "/exec")) == 1


def test_post_create_not_retried_after_a_lost_connection(api):
    api.route("POST", "/v1/sandboxes", [drop_connection, Reply(201, sandbox_json(SID))])
    with pytest.raises(ConnectionError):
        pandastack.Sandbox.create(template="base", api_key=KEY, api_url=api.url)
    assert len(api.calls("POST", "/v1/sandboxes")) == 1


def test_put_upload_not_retried(api, sandbox, tmp_path):
    api.route("PUT", SB + "/fs", [drop_connection, Reply(200, {"path": "/x", "size": 3})])
    src = tmp_path / "f"
    src.write_bytes(b"abc")
    with pytest.raises(ConnectionError):
        sandbox.filesystem.upload(str(src), "/x")
    assert len(api.calls("PUT", SB + "/fs")) == 1


def test_delete_retried_and_a_404_on_the_retry_counts_as_done(api, sandbox):
    """The first DELETE removed the file but its answer was lost: the retry's
    404 means the job is done."""
    api.route("DELETE", SB + "/fs", [drop_connection, error(404, "file_not_found")])
    sandbox.filesystem.remove("/workspace/x")
    assert len(api.calls("DELETE", SB + "/fs")) == 2


def test_delete_404_on_the_first_attempt_is_an_error(api, sandbox):
    api.route("DELETE", SB + "/fs", error(404, "file_not_found"))
    with pytest.raises(NotFoundError):
        sandbox.filesystem.remove("/workspace/x")


def test_kill_retried_after_a_lost_connection(api, sandbox):
    api.route("DELETE", SB, [drop_connection, Reply(204)])
    sandbox.kill()
    assert len(api.calls("DELETE", SB)) == 2


def test_kill_of_a_sandbox_already_gone_is_fine(api, sandbox):
    api.route("DELETE", SB, error(404, "sandbox_not_found"))
    sandbox.kill()
    sandbox.kill()
    assert len(api.calls("DELETE", SB)) == 2
