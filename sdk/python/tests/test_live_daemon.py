"""The SDK against a real pandastackd and real microVMs (skipped when
build/pandastackd is not built or no template is baked in the cache).

The daemon is started here on a temporary data dir and a free port (read back
from its `event=http.listening` log line), with its admin key from
<data-dir>/admin.key; it and every sandbox it made are stopped at the end.
Environment: PANDASTACK_CACHE (default /var/cache/pandastack),
PANDASTACK_TEST_TEMPLATE (default: code-interpreter if ready, else base).
"""
import hashlib
import os

import pytest
from livedaemon import live_daemon

from pandastack import (AuthenticationError, CommandFailed, NotFoundError, RateLimitError,
                        Sandbox, SandboxError)


@pytest.fixture(scope="module")
def live():
    yield from live_daemon("--pool-size", "0", "--max-sandboxes-per-team", "2")


@pytest.fixture
def sb(live):
    s = Sandbox.create(template=live.template, ttl_seconds=300, api_key=live.key,
                       api_url=live.url)
    yield s
    s.kill()


def test_errors_from_the_real_api(live):
    with pytest.raises(AuthenticationError) as ei:
        Sandbox.list(api_key="pds_" + "0" * 48, api_url=live.url)
    assert ei.value.status == 401 and ei.value.code == "unauthorized"
    with pytest.raises(NotFoundError) as ei:
        Sandbox.connect("sbx_0123456789abcdef0123", api_key=live.key, api_url=live.url)
    assert ei.value.code == "sandbox_not_found"
    with pytest.raises(NotFoundError) as ei:
        Sandbox.create(template="no-such-template", api_key=live.key, api_url=live.url)
    assert ei.value.code == "template_not_found"
    with pytest.raises(SandboxError) as ei:
        Sandbox.create(template=live.template, ttl_seconds=10 ** 9, api_key=live.key,
                       api_url=live.url)
    assert ei.value.status == 400 and ei.value.code == "invalid_field"


def test_team_limit_is_a_rate_limit_error(live):
    made = [Sandbox.create(template=live.template, api_key=live.key, api_url=live.url)
            for _ in range(2)]
    try:
        with pytest.raises(RateLimitError) as ei:
            Sandbox.create(template=live.template, api_key=live.key, api_url=live.url)
        assert ei.value.status == 429 and ei.value.code == "too_many_sandboxes"
    finally:
        for s in made:
            s.kill()


def test_exec_check_stream_and_timeout(sb):
    r = sb.exec("echo out; echo err >&2; exit 3", env={"X": "1"})
    assert (r.stdout, r.stderr, r.exit_code) == ("out\n", "err\n", 3)
    assert isinstance(r.duration_ms, int)
    with pytest.raises(CommandFailed) as ei:
        sb.exec("exit 4", check=True)
    assert ei.value.result.exit_code == 4
    assert sb.exec("cat", stdin="piped").stdout == "piped"
    assert sb.exec("pwd", cwd="/tmp").stdout == "/tmp\n"
    assert sb.exec("echo $X", env={"X": "y z"}).stdout == "y z\n"
    chunks, pids = [], []
    r = sb.exec_stream("for i in 1 2 3; do echo $i; sleep 0.2; done", on_stdout=chunks.append,
                       on_start=pids.append)
    assert "".join(chunks) == "1\n2\n3\n" == r.stdout and len(pids) == 1
    r = sb.exec("sleep 30", timeout_seconds=1)
    assert r.timed_out and r.exit_code != 0


def test_files_round_trip(sb, tmp_path):
    fs = sb.filesystem
    data = os.urandom(8 << 20)
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    assert fs.upload(src, "/workspace/d/src.bin").size == len(data)
    assert sb.exec("sha256sum /workspace/d/src.bin").stdout.split()[0] == \
        hashlib.sha256(data).hexdigest()
    assert fs.download("/workspace/d/src.bin", tmp_path / "back.bin").size == len(data)
    assert (tmp_path / "back.bin").read_bytes() == data
    fs.write("/workspace/d/t.txt", "héllo\n")
    assert fs.read("/workspace/d/t.txt") == "héllo\n"
    assert fs.read("/workspace/d/t.txt", format="bytes") == "héllo\n".encode()
    assert [e.name for e in fs.list("/workspace/d")] == ["src.bin", "t.txt"]
    assert fs.stat("/workspace/d/t.txt").size == 7
    assert fs.mkdir("/workspace/d/sub").type == "dir"
    with pytest.raises(SandboxError) as ei:
        fs.remove("/workspace/d")
    assert ei.value.code == "directory_not_empty"
    fs.remove("/workspace/d", recursive=True)
    assert fs.exists("/workspace/d") is False
    with pytest.raises(NotFoundError) as ei:
        fs.read("/workspace/d/t.txt")
    assert ei.value.code == "file_not_found"


def test_ttl_kill_and_gone(live):
    s = Sandbox.create(template=live.template, api_key=live.key, api_url=live.url)
    info = s.set_ttl(7200)
    assert info.status == "running" and info.expires_at
    assert s.id in [i.id for i in Sandbox.list(api_key=live.key, api_url=live.url)]
    with Sandbox.connect(s.id, api_key=live.key, api_url=live.url) as again:
        assert again.is_running()
    assert s.is_running() is False
    s.kill()  # already gone: fine
    with pytest.raises(NotFoundError):
        s.exec("true")



def test_context_cell_streamed_to_callbacks(sb):
    with sb.create_code_context() as ctx:
        out, results = [], []
        ex = ctx.run_code("import time\nfor i in range(3):\n    print(i, flush=True)\n"
                          "    time.sleep(0.2)\n6 * 7", on_stdout=out.append,
                          on_result=results.append)
        assert "".join(out) == "0\n1\n2\n" == ex.stdout and len(out) >= 2   # as printed
        assert [r.text for r in results] == ["42"] and ex.text == "42" and ex.error is None
        ex = ctx.run_code("1/0", on_stderr=lambda s: None)
        assert ex.error.name == "ZeroDivisionError" and ex.exit_code == 1


def test_background_command(sb):
    job = sb.exec("for i in 1 2 3; do echo $i; sleep 1; done; exit 3", background=True)
    assert job.info.running is True  # control: exec returned before the end
    r = job.wait(timeout=120)
    assert r.stdout == "1\n2\n3\n" and r.exit_code == 3 and job.info.running is False
    sleeper = sb.exec("sleep 300", background=True)
    assert sleeper.id in [c.id for c in sb.list_commands() if c.info.running]
    assert sleeper.kill().running is False
    assert sleeper.id not in [c.id for c in sb.list_commands() if c.info.running]
