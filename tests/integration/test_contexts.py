"""Code contexts and run_code on real VMs (docs/api.md, "Code contexts"):
persistent kernels with rich results on `code-interpreter`, plain-text
results on `base`, timeouts, dying kernels, the busy queue, streaming, the
idle reaper, warm kernels reseeded per sandbox, and the one-shot
POST .../run_code.  Skipped when the two templates are not baked
(`make templates`)."""
import base64
import json
import struct
import threading
import time

import pytest

from conftest import (
    Daemon, context_create, context_run, create_sandbox, read_sse, reap_vms, wait_for)


def templates_ready(d):
    ts = {t["name"]: t for t in d.request("GET", "/v1/templates").json()["templates"]}
    return all(ts.get(n, {}).get("status") == "ready" for n in ("code-interpreter", "base"))


@pytest.fixture(scope="module")
def ctx_daemon(tmp_path_factory):
    """A daemon over the real template cache, with a short idle timeout for
    contexts so the reaper can be seen (contexts in use are never reaped)."""
    root = tmp_path_factory.mktemp("contexts")
    d = Daemon(root / "data", ["--pool-size", "1", "--context-idle-timeout", "8"]).start()
    if not templates_ready(d):
        d.stop()
        pytest.skip("code-interpreter and base are not baked (run `make templates`)")
    yield d
    d.stop()
    reap_vms(d.data_dir)


@pytest.fixture(scope="module")
def ci(ctx_daemon):
    s = create_sandbox(ctx_daemon, "code-interpreter", ttl_seconds=3600)
    yield s["id"]
    ctx_daemon.request("DELETE", f"/v1/sandboxes/{s['id']}")


@pytest.fixture(scope="module")
def base(ctx_daemon):
    s = create_sandbox(ctx_daemon, "base", ttl_seconds=3600)
    yield s["id"]
    ctx_daemon.request("DELETE", f"/v1/sandboxes/{s['id']}")


new_context = context_create


def run(d, sid, cid, code, **fields):
    ex = context_run(d, sid, cid, code, **fields)
    assert set(ex) == {"results", "stdout", "stderr", "error", "execution_count",
                       "exit_code", "duration_ms"}, ex
    assert ex["exit_code"] == (1 if ex["error"] else 0)
    return ex


def main_text(ex):
    mains = [r for r in ex["results"] if r["is_main_result"]]
    return mains[0].get("text") if mains else None


def png_size(b64):
    raw = base64.b64decode(b64)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    assert raw[12:16] == b"IHDR"
    return struct.unpack(">II", raw[16:24])


# ---- code-interpreter: rich results ------------------------------------------------

def test_values_stdout_errors_and_state(ctx_daemon, ci):
    c = new_context(ctx_daemon, ci)
    assert c["id"].startswith("ctx_") and len(c["id"]) == 24
    assert c["language"] == "python" and c["kernel"] == "jupyter"
    cid = c["id"]
    ex = run(ctx_daemon, ci, cid, "sum(range(101))")
    assert main_text(ex) == "5050" and ex["stdout"] == "" and ex["error"] is None
    ex = run(ctx_daemon, ci, cid, "print('hi'); 7")
    assert ex["stdout"] == "hi\n" and main_text(ex) == "7"
    ex = run(ctx_daemon, ci, cid, "x = 41\n1/0")
    assert ex["error"]["name"] == "ZeroDivisionError" and ex["exit_code"] == 1
    assert "\x1b" not in ex["error"]["traceback"]          # no ANSI colours
    assert "ZeroDivisionError" in ex["error"]["traceback"]
    ex = run(ctx_daemon, ci, cid, "x + 1")                 # usable; x persisted
    assert ex["error"] is None and main_text(ex) == "42"
    n = ex["execution_count"]
    assert run(ctx_daemon, ci, cid, "x")["execution_count"] == n + 1
    # input() fails at once instead of waiting for a user
    t0 = time.time()
    ex = run(ctx_daemon, ci, cid, "input('name? ')", timeout_seconds=60)
    assert ex["error"] is not None and ex["error"]["name"] != "TimeoutError"
    assert time.time() - t0 < 30


def test_chart_dataframe_and_displays(ctx_daemon, ci):
    cid = new_context(ctx_daemon, ci)["id"]
    # the documents' chart: plt.show() gives a PNG result
    ex = run(ctx_daemon, ci, cid, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
    pngs = [r for r in ex["results"] if "png" in r]
    assert len(pngs) == 1 and not pngs[0]["is_main_result"], ex
    w, h = png_size(pngs[0]["png"])
    assert w > 100 and h > 100
    # a figure of a known size, rendered without cropping: exactly its pixels
    ex = run(ctx_daemon, ci, cid,
             "get_ipython().run_line_magic('config', "
             "\"InlineBackend.print_figure_kwargs = {'bbox_inches': None}\")\n"
             "fig = plt.figure(figsize=(4, 3), dpi=100)\nplt.plot([3, 1, 2])\nplt.show()")
    pngs = [r for r in ex["results"] if "png" in r]
    assert len(pngs) == 1 and png_size(pngs[0]["png"]) == (400, 300)
    # a DataFrame as the last expression: html and text
    ex = run(ctx_daemon, ci, cid,
             "import pandas as pd\npd.DataFrame({'revenue': [1, 2], 'cost': [3, 4]})")
    main = [r for r in ex["results"] if r["is_main_result"]]
    assert len(main) == 1 and "<table" in main[0]["html"] and "revenue" in main[0]["text"]
    # display() of two objects: two results, in order, neither the main one
    ex = run(ctx_daemon, ci, cid,
             "from IPython.display import display, HTML, Markdown\n"
             "display(HTML('<b>first</b>'))\ndisplay(Markdown('*second*'))\n")
    assert [r.get("html") for r in ex["results"]] == ["<b>first</b>", None]
    assert ex["results"][1]["markdown"] == "*second*"
    assert not any(r["is_main_result"] for r in ex["results"])
    # json results are objects; other MIME types go to extra
    ex = run(ctx_daemon, ci, cid,
             "from IPython.display import JSON, display\n"
             "display(JSON({'a': [1, 2]}))\n"
             "display({'application/vnd.custom+json': {'k': 1}, 'text/plain': 'c'}, raw=True)")
    assert ex["results"][0]["json"] == {"a": [1, 2]}
    assert ex["results"][1]["extra"] == {"application/vnd.custom+json": {"k": 1}}


def test_timeout_interrupts_and_keeps_state(ctx_daemon, ci):
    cid = new_context(ctx_daemon, ci)["id"]
    run(ctx_daemon, ci, cid, "kept = 'still here'")
    t0 = time.time()
    ex = run(ctx_daemon, ci, cid, "import time\ntime.sleep(100)", timeout_seconds=2)
    elapsed = time.time() - t0
    assert ex["error"]["name"] == "TimeoutError", ex
    assert "timed out" in ex["error"]["value"]
    assert elapsed < 30                         # generous: interrupted, not run out
    ex = run(ctx_daemon, ci, cid, "kept")
    assert ex["error"] is None and main_text(ex) == "still here"
    # the interrupt reaches the cell's child processes too
    ex = run(ctx_daemon, ci, cid,
             "import subprocess\nsubprocess.run(['sleep', '100'])", timeout_seconds=2)
    assert ex["error"]["name"] == "TimeoutError"
    assert main_text(run(ctx_daemon, ci, cid, "kept")) == "still here"


def test_interrupt_and_restart_routes(ctx_daemon, ci):
    cid = new_context(ctx_daemon, ci)["id"]
    base_path = f"/v1/sandboxes/{ci}/contexts/{cid}"
    run(ctx_daemon, ci, cid, "kept = 'still here'")
    out = {}

    def long_cell():
        out["ex"] = run(ctx_daemon, ci, cid, "import time\ntime.sleep(100)")

    t = threading.Thread(target=long_cell)
    t.start()
    time.sleep(2)
    assert ctx_daemon.request("POST", base_path + "/interrupt").status == 204
    t.join(60)
    assert not t.is_alive()
    assert out["ex"]["error"]["name"] == "KeyboardInterrupt", out["ex"]
    assert main_text(run(ctx_daemon, ci, cid, "kept")) == "still here"
    # nothing running: still 204
    assert ctx_daemon.request("POST", base_path + "/interrupt", {}).status == 204
    r = ctx_daemon.request("POST", base_path + "/restart", {"hard": True})
    assert r.status == 400 and r.error_code() == "unknown_field"
    assert ctx_daemon.request("POST", base_path + "/restart").status == 204
    ex = run(ctx_daemon, ci, cid, "kept")
    assert ex["error"]["name"] == "NameError", ex
    assert main_text(run(ctx_daemon, ci, cid, "6 * 7")) == "42"
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/contexts/ctx_{'0' * 20}/interrupt")
    assert r.status == 404 and r.error_code() == "context_not_found"


def test_dead_kernel_names_exit_and_restarts(ctx_daemon, ci):
    cid = new_context(ctx_daemon, ci)["id"]
    ex = run(ctx_daemon, ci, cid, "import os\nos._exit(1)")
    assert ex["error"]["name"] == "DeadKernelError", ex
    assert "exit" in ex["error"]["value"] and "1" in ex["error"]["value"]
    ex = run(ctx_daemon, ci, cid, "6 * 7")
    assert ex["error"] is None and main_text(ex) == "42"
    ex = run(ctx_daemon, ci, cid, "import ctypes\nctypes.string_at(0)")     # a crash
    assert ex["error"]["name"] == "DeadKernelError" and "SIGSEGV" in ex["error"]["value"]
    assert main_text(run(ctx_daemon, ci, cid, "'back'")) == "back"


def test_out_of_memory_is_named(ctx_daemon):
    sid = create_sandbox(ctx_daemon, "code-interpreter", ttl_seconds=600)["id"]
    try:
        cid = new_context(ctx_daemon, sid)["id"]
        ex = run(ctx_daemon, sid, cid,
                 "hog = []\nwhile True:\n    hog.append(bytearray(32 * 2**20))")
        assert ex["error"]["name"] == "DeadKernelError", ex
        assert "out-of-memory" in ex["error"]["value"]
        assert main_text(run(ctx_daemon, sid, cid, "'alive'")) == "alive"
    finally:
        ctx_daemon.request("DELETE", f"/v1/sandboxes/{sid}")


def test_busy_context_waits_its_turn(ctx_daemon, ci):
    cid = new_context(ctx_daemon, ci)["id"]
    results = {}

    def first():
        results["first"] = run(ctx_daemon, ci, cid,
                               "import time\ntime.sleep(3)\norder = ['first']")

    t = threading.Thread(target=first)
    t.start()
    time.sleep(1)
    second = run(ctx_daemon, ci, cid, "order.append('second'); order")
    t.join()
    assert results["first"]["error"] is None
    assert second["error"] is None and main_text(second) == "['first', 'second']"


def test_output_cap_and_streams(ctx_daemon, ci):
    cid = new_context(ctx_daemon, ci)["id"]
    ex = run(ctx_daemon, ci, cid, "import sys\nprint('out')\nprint('err', file=sys.stderr)")
    assert ex["stdout"] == "out\n" and ex["stderr"] == "err\n"
    ex = run(ctx_daemon, ci, cid, "print('x' * (17 * 1024 * 1024))")
    assert "[pandastack: output truncated at" in ex["stdout"]
    assert len(ex["stdout"]) < 17 * 1024 * 1024
    assert main_text(run(ctx_daemon, ci, cid, "'fine'")) == "fine"


def test_run_code_stream(ctx_daemon, ci):
    cid = new_context(ctx_daemon, ci)["id"]
    c = ctx_daemon.conn()
    c.request("POST", f"/v1/sandboxes/{ci}/contexts/{cid}/run_code_stream",
              body=json.dumps({"code": "import time\nfor i in range(3):\n"
                                       "    print(i, flush=True); time.sleep(0.3)\n"
                                       "display('shown')\n1/0"}),
              headers={"Authorization": f"Bearer {ctx_daemon.admin_key}"})
    resp = c.getresponse()
    assert resp.status == 200
    assert resp.getheader("Content-Type") == "text/event-stream"
    events = list(read_sse(resp))
    names = [e for e, _ in events]
    assert names[-1] == "done"
    assert "".join(d["text"] for e, d in events if e == "stdout") == "0\n1\n2\n"
    assert [d["text"] for e, d in events if e == "result"] == ["shown"]
    done = events[-1][1]
    assert done["error"]["name"] == "ZeroDivisionError" and done["exit_code"] == 1
    # an unknown context is an ordinary 404 before any event
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/contexts/ctx_00000000000000000000/"
                           "run_code_stream", {"code": "1"})
    assert r.status == 404 and r.error_code() == "context_not_found"


FLOOD = "i = 0\nwhile True:\n    print(i, 'z' * 1000); i += 1"


def test_client_leaving_interrupts_the_cell(ctx_daemon, ci):
    """A client that leaves a run (run_code or run_code_stream) of a cell
    flooding output without end: the cell is interrupted, the context keeps
    its state and answers the next run (a backlog of the flood's output
    once held every later run for as long as it took to read)."""
    cid = new_context(ctx_daemon, ci)["id"]
    run(ctx_daemon, ci, cid, "kept = 7")
    # control: while the flood runs, a second run waits its turn
    c = ctx_daemon.conn(timeout=6)
    c.request("POST", f"/v1/sandboxes/{ci}/contexts/{cid}/run_code",
              body=json.dumps({"code": FLOOD, "timeout_seconds": 0}),
              headers={"Authorization": f"Bearer {ctx_daemon.admin_key}"})
    with pytest.raises(TimeoutError):
        c.getresponse()
    r = ctx_daemon.request("GET", f"/v1/sandboxes/{ci}/contexts")
    assert [x["busy"] for x in r.json()["contexts"] if x["id"] == cid] == [True]
    c.close()  # the client leaves
    t0 = time.time()
    ex = run(ctx_daemon, ci, cid, "kept", timeout_seconds=60)
    assert main_text(ex) == "7", ex
    left_run = time.time() - t0
    # the same through the stream: a few events read, then gone
    c = ctx_daemon.conn()
    c.request("POST", f"/v1/sandboxes/{ci}/contexts/{cid}/run_code_stream",
              body=json.dumps({"code": FLOOD, "timeout_seconds": 0}),
              headers={"Authorization": f"Bearer {ctx_daemon.admin_key}"})
    resp = c.getresponse()
    assert resp.status == 200
    assert any(name == "stdout" for name, _ in read_sse(resp))  # stops at the first
    time.sleep(4)
    resp.close()  # the answer holds the connection (the daemon closes after it)
    c.close()
    t0 = time.time()
    ex = run(ctx_daemon, ci, cid, "kept + 1", timeout_seconds=60)
    assert main_text(ex) == "8", ex
    print(f"next run after the client left: {left_run:.1f} s (run_code), "
          f"{time.time() - t0:.1f} s (run_code_stream)")


def test_list_delete_and_errors(ctx_daemon, ci):
    c = new_context(ctx_daemon, ci, cwd="/tmp", env={"GREETING": "it's \"here\""})
    cid = c["id"]
    assert c["cwd"] == "/tmp"
    ex = run(ctx_daemon, ci, cid, "import os\nprint(os.getcwd(), os.environ['GREETING'])")
    assert ex["stdout"] == "/tmp it's \"here\"\n"
    ids = [x["id"] for x in ctx_daemon.request("GET", f"/v1/sandboxes/{ci}/contexts")
           .json()["contexts"]]
    assert cid in ids
    r = ctx_daemon.request("DELETE", f"/v1/sandboxes/{ci}/contexts/{cid}")
    assert r.status == 204
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/contexts/{cid}/run_code", {"code": "1"})
    assert r.status == 404 and r.error_code() == "context_not_found"
    r = ctx_daemon.request("DELETE", f"/v1/sandboxes/{ci}/contexts/{cid}")
    assert r.status == 404
    ids = [x["id"] for x in ctx_daemon.request("GET", f"/v1/sandboxes/{ci}/contexts")
           .json()["contexts"]]
    assert cid not in ids
    # bad bodies and ids
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/contexts", {"language": "ruby"})
    assert r.status == 400 and r.error_code() == "invalid_field"
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/contexts", {"cwd": "/nonexistent"})
    assert r.status == 404 and r.error_code() == "file_not_found"
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/contexts/not-an-id/run_code",
                           {"code": "1"})
    assert r.status == 404 and r.error_code() == "context_not_found"
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/contexts/{cid}/run_code", {"cmd": "1"})
    assert r.status == 400 and r.error_code() == "unknown_field"
    # another team sees neither the sandbox nor its contexts
    other = ctx_daemon.new_key("other-team")
    r = ctx_daemon.request("GET", f"/v1/sandboxes/{ci}/contexts", key=other)
    assert r.status == 404 and r.error_code() == "sandbox_not_found"


def test_idle_context_is_reaped(ctx_daemon, ci):
    cid = new_context(ctx_daemon, ci)["id"]
    run(ctx_daemon, ci, cid, "1")

    def gone():
        ids = [x["id"] for x in ctx_daemon.request("GET", f"/v1/sandboxes/{ci}/contexts")
               .json()["contexts"]]
        return cid not in ids

    wait_for(gone, 60, interval=1, what="the idle context to be reaped")
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/contexts/{cid}/run_code", {"code": "1"})
    assert r.status == 404 and r.error_code() == "context_not_found"


def test_two_sandboxes_draw_different_random_numbers(ctx_daemon):
    draws = []
    for _ in range(2):
        sid = create_sandbox(ctx_daemon, "code-interpreter", ttl_seconds=600)["id"]
        try:
            cid = new_context(ctx_daemon, sid)["id"]
            ex = run(ctx_daemon, sid, cid,
                     "import random, numpy\n(random.random(), float(numpy.random.rand()))")
            draws.append(main_text(ex))
        finally:
            ctx_daemon.request("DELETE", f"/v1/sandboxes/{sid}")
    assert draws[0] and draws[1] and draws[0] != draws[1]
    a, b = (eval(x) for x in draws)
    assert a[0] != b[0] and a[1] != b[1]


def test_context_survives_daemon_restart(daemon_factory):
    d = daemon_factory("restart", ["--pool-size", "0"])
    if not templates_ready(d):
        pytest.skip("templates not baked")
    sid = create_sandbox(d, "code-interpreter", ttl_seconds=600)["id"]
    c = new_context(d, sid)
    cid = c["id"]
    run(d, sid, cid, "survivor = 'yes'")
    d.stop()
    d.start()
    listed = {x["id"]: x for x in d.request("GET", f"/v1/sandboxes/{sid}/contexts")
              .json()["contexts"]}
    assert cid in listed
    assert listed[cid]["created_at"] == c["created_at"]   # the daemon's row, kept
    assert main_text(run(d, sid, cid, "survivor")) == "yes"
    d.request("DELETE", f"/v1/sandboxes/{sid}")


# ---- base: plain text ----------------------------------------------------------------

def test_base_gives_plain_text(ctx_daemon, base):
    c = new_context(ctx_daemon, base)
    assert c["kernel"] == "fallback"
    cid = c["id"]
    ex = run(ctx_daemon, base, cid, "sum(range(101))")
    assert main_text(ex) == "5050" and ex["results"] == [{"text": "5050", "is_main_result": True}]
    ex = run(ctx_daemon, base, cid, "print('hi'); 7")
    assert ex["stdout"] == "hi\n" and main_text(ex) == "7"
    ex = run(ctx_daemon, base, cid, "y = 1\n1/0")
    assert ex["error"]["name"] == "ZeroDivisionError"
    ex = run(ctx_daemon, base, cid, "y + 1")
    assert main_text(ex) == "2"
    ex = run(ctx_daemon, base, cid, "import time\ntime.sleep(100)", timeout_seconds=2)
    assert ex["error"]["name"] == "TimeoutError"
    assert main_text(run(ctx_daemon, base, cid, "y")) == "1"
    ex = run(ctx_daemon, base, cid, "import os\nos._exit(1)")
    assert ex["error"]["name"] == "DeadKernelError"
    assert main_text(run(ctx_daemon, base, cid, "'works'")) == "works"
    # rich objects degrade to their text
    ex = run(ctx_daemon, base, cid, "class T:\n    def _repr_html_(self): return '<b>x</b>'\n"
                                    "    def __repr__(self): return 'T()'\nT()")
    assert ex["results"] == [{"text": "T()", "is_main_result": True}]


# ---- the one-shot run_code -------------------------------------------------------------

def test_one_shot_run_code(ctx_daemon, ci, base):
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/run_code",
                           {"code": "python --version", "language": "shell"})
    assert r.status == 200, r
    assert r.json()["stdout"].startswith("Python 3") and r.json()["exit_code"] == 0
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/run_code",
                           {"code": "x = 42\ny = x * 2\nprint(x, y)\n", "language": "python"})
    out = r.json()
    assert out["stdout"] == "42 84\n" and out["exit_code"] == 0
    assert isinstance(out["duration_ms"], int)
    # a fresh process each time: nothing persists
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/run_code", {"code": "print(x)"})
    assert r.json()["exit_code"] == 1 and "NameError" in r.json()["stderr"]
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/run_code",
                           {"code": "input()", "language": "python"})
    assert r.json()["exit_code"] == 1 and "EOFError" in r.json()["stderr"]
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/run_code",
                           {"code": "sleep 30", "language": "shell", "timeout_seconds": 1})
    assert r.json()["timed_out"] is True
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{base}/run_code",
                           {"code": "import sys; print(sys.version_info[0])"})
    assert r.json()["stdout"] == "3\n"
    r = ctx_daemon.request("POST", f"/v1/sandboxes/{ci}/run_code",
                           {"code": "1", "language": "ruby"})
    assert r.status == 400 and r.error_code() == "invalid_field"
