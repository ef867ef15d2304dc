"""AsyncSandbox against a real pandastackd and real microVMs (livedaemon.py;
skipped when the daemon is not built or no template is baked):

- the documents' Python examples rewritten with `await` (async_examples/,
  one per example of tests/conformance/python), each run as a script in a
  fresh working folder, as scripts/run-conformance-python.sh runs the
  originals;
- 20 run_code calls in flight at once on 5 sandboxes from one event loop,
  each returning its own cell's value;
- errors, exec and its stream, files and a streamed cell, as
  test_live_daemon.py does for Sandbox.
"""
import asyncio
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from livedaemon import ROOT, live_daemon

from pandastack import (AsyncSandbox, AuthenticationError, CommandFailed, NotFoundError,
                        SandboxError)

HERE = pathlib.Path(__file__).resolve().parent
EXAMPLES = sorted((HERE / "async_examples").glob("*.py"))
DOCUMENTS = ROOT / "tests" / "conformance"


@pytest.fixture(scope="module")
def live():
    yield from live_daemon("--pool-size", "0", "--max-sandboxes-per-team", "6")


def test_every_document_example_has_an_async_version():
    want = sorted(p.name for p in (DOCUMENTS / "python").glob("*.py"))
    assert want  # the probe finds the documents' examples
    assert [p.name for p in EXAMPLES] == want


@pytest.fixture(scope="module")
def examples_root(tmp_path_factory):
    """The async examples beside the documents' data/, as the originals sit."""
    root = tmp_path_factory.mktemp("async-examples")
    shutil.copytree(HERE / "async_examples", root / "python")
    shutil.copytree(DOCUMENTS / "data", root / "data")
    return root


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_document_example_with_await(live, examples_root, example, tmp_path):
    if not live.ready("code-interpreter"):
        pytest.skip("the examples use the code-interpreter template (make templates)")
    env = dict(os.environ, PANDASTACK_API_URL=live.url, PANDASTACK_API_KEY=live.key,
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    p = subprocess.run([sys.executable, str(examples_root / "python" / example.name)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"{example.name} exited {p.returncode}\n{p.stdout}\n{p.stderr}"


async def test_twenty_concurrent_cells_on_five_sandboxes(live):
    """Each cell computes a value from its own sandbox's state and its own
    argument; every one of the 20 concurrent calls must get its own."""
    sandboxes = await asyncio.gather(*(
        AsyncSandbox.create(template=live.template, ttl_seconds=900, api_key=live.key,
                            api_url=live.url, metadata={"n": str(k)}) for k in range(5)))
    try:
        contexts = await asyncio.gather(*(sb.create_code_context() for sb in sandboxes))
        await asyncio.gather(*(ctx.run_code(f"base = {1000 * (k + 1)}")
                               for k, ctx in enumerate(contexts)))

        async def cell(k, m):
            printed = []
            code = f"import time\ntime.sleep(0.1 * {m % 3})\nprint(base + {m})\nbase * {m}"
            if m % 2:
                ex = await contexts[k].run_code(code, on_stdout=printed.append)
                assert "".join(printed) == f"{1000 * (k + 1) + m}\n"
            else:
                ex = await contexts[k].run_code(code)
            assert ex.error is None, ex.error
            assert ex.stdout == f"{1000 * (k + 1) + m}\n"
            return ex.text

        calls = [(k, m) for k in range(5) for m in range(1, 5)]
        got = await asyncio.gather(*(cell(k, m) for k, m in calls))
        assert got == [str(1000 * (k + 1) * m) for k, m in calls]
    finally:
        await asyncio.gather(*(sb.kill() for sb in sandboxes), return_exceptions=True)


async def test_errors_from_the_real_api(live):
    with pytest.raises(AuthenticationError) as ei:
        await AsyncSandbox.list(api_key="pds_" + "0" * 48, api_url=live.url)
    assert ei.value.status == 401 and ei.value.code == "unauthorized"
    with pytest.raises(NotFoundError) as ei:
        await AsyncSandbox.connect("sbx_0123456789abcdef0123", api_key=live.key,
                                   api_url=live.url)
    assert ei.value.code == "sandbox_not_found"
    with pytest.raises(NotFoundError) as ei:
        await AsyncSandbox.create(template="no-such-template", api_key=live.key,
                                  api_url=live.url)
    assert ei.value.code == "template_not_found"


async def test_exec_stream_files_context_and_kill(live, tmp_path):
    async with await AsyncSandbox.create(template=live.template, ttl_seconds=300,
                                         api_key=live.key, api_url=live.url) as sb:
        r = await sb.exec("echo out; echo err >&2; exit 3")
        assert (r.stdout, r.stderr, r.exit_code) == ("out\n", "err\n", 3)
        with pytest.raises(CommandFailed):
            await sb.exec("exit 4", check=True)
        assert (await sb.exec("cat", stdin="piped")).stdout == "piped"
        assert (await sb.exec("echo $X; pwd", env={"X": "y z"}, cwd="/tmp")).stdout == \
            "y z\n/tmp\n"
        chunks, pids = [], []

        async def on_stdout(chunk):
            chunks.append(chunk)

        r = await sb.exec_stream("for i in 1 2 3; do echo $i; sleep 0.2; done",
                                 on_stdout=on_stdout, on_start=pids.append)
        assert "".join(chunks) == "1\n2\n3\n" == r.stdout and len(pids) == 1
        r = await sb.exec("sleep 30", timeout_seconds=1)
        assert r.timed_out and r.exit_code != 0

        fs = sb.filesystem
        data = os.urandom(8 << 20)
        (tmp_path / "src.bin").write_bytes(data)
        assert (await fs.upload(tmp_path / "src.bin", "/workspace/d/src.bin")).size == len(data)
        digest = (await sb.exec("sha256sum /workspace/d/src.bin")).stdout.split()[0]
        assert digest == hashlib.sha256(data).hexdigest()
        assert (await fs.download("/workspace/d/src.bin", tmp_path / "back.bin")).size == \
            len(data)
        assert (tmp_path / "back.bin").read_bytes() == data
        await fs.write("/workspace/d/t.txt", "héllo\n")
        assert await fs.read("/workspace/d/t.txt") == "héllo\n"
        assert [e.name for e in await fs.list("/workspace/d")] == ["src.bin", "t.txt"]
        with pytest.raises(SandboxError) as ei:
            await fs.remove("/workspace/d")
        assert ei.value.code == "directory_not_empty"
        await fs.remove("/workspace/d", recursive=True)
        assert await fs.exists("/workspace/d") is False

        async with await sb.create_code_context() as ctx:
            out, results = [], []
            ex = await ctx.run_code("import time\nfor i in range(3):\n    print(i, flush=True)\n"
                                    "    time.sleep(0.2)\n6 * 7", on_stdout=out.append,
                                    on_result=results.append)
            assert "".join(out) == "0\n1\n2\n" == ex.stdout
            assert [r.text for r in results] == ["42"] and ex.text == "42"
            assert (await ctx.run_code("1/0")).error.name == "ZeroDivisionError"
        assert await sb.is_running()
        sid = sb.id
    again = await AsyncSandbox.list(api_key=live.key, api_url=live.url, status="running")
    assert sid not in [s.id for s in again]  # async with killed it
