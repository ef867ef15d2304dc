"""Notebooks and late output of code contexts on a real VM (docs/api.md,
"Code contexts", "Notebooks"): the context's notebook file after 3 cells
opens with nbformat (Debian's python3-nbformat) and validates, with the
cells and an image output; a thread printing after its cell ended reaches
the caller, in order, with the context's next call.  Skipped when the
code-interpreter template is not baked (`make templates`)."""
import base64
import json
import pathlib
import shutil
import tempfile
import time

import pytest

from conftest import Daemon, context_create, context_run, create_sandbox, reap_vms

nbformat = pytest.importorskip("nbformat")


@pytest.fixture(scope="module")
def d():
    root = pathlib.Path(tempfile.mkdtemp(prefix="pandastackd-nb-"))
    dm = Daemon(root / "data", ["--pool-size", "0"]).start()
    ts = {t["name"]: t for t in dm.request("GET", "/v1/templates").json()["templates"]}
    if ts.get("code-interpreter", {}).get("status") != "ready":
        dm.stop()
        pytest.skip("code-interpreter is not baked (run `make templates`)")
    yield dm
    dm.stop()
    reap_vms(dm.data_dir)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def sid(d):
    s = create_sandbox(d, "code-interpreter", ttl_seconds=3600)
    yield s["id"]
    d.request("DELETE", f"/v1/sandboxes/{s['id']}")


# The contexts the tests made, by name: the template has two warm kernels,
# a third context would start one (tens of seconds under TCG).
CONTEXTS = {}


new_context = context_create
run = context_run


def download(d, sid, path):
    return d.request("GET", f"/v1/sandboxes/{sid}/fs?path={path}")


CELLS = ["x = 6 * 7\nprint('x is', x)",
         "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()",
         "x + 1"]


def test_notebook_after_three_cells(d, sid):
    c = new_context(d, sid)
    assert c["notebook"] == "/workspace/notebook.ipynb", c
    # control: no file before a cell ran (the probe sees a missing one)
    assert download(d, sid, c["notebook"]).status == 404
    for code in CELLS:
        assert run(d, sid, c["id"], code)["error"] is None
    r = download(d, sid, c["notebook"])
    assert r.status == 200, r
    nb = nbformat.reads(r.body.decode(), as_version=4)
    nbformat.validate(nb)
    assert [cell.source for cell in nb.cells] == CELLS
    assert nb.cells[0].outputs[0].text == "x is 42\n"
    pngs = [o.data["image/png"] for o in nb.cells[1].outputs if "image/png" in o.get("data", {})]
    assert pngs and base64.b64decode(pngs[0])[:8] == b"\x89PNG\r\n\x1a\n"
    assert nb.cells[2].outputs[0].data["text/plain"] == "43"
    assert [cell.execution_count for cell in nb.cells] == [1, 2, 3]
    # a second context gets a file of its own (a named one and "" for none:
    # tests/unit/test_agent_contexts.c)
    other = new_context(d, sid)
    assert other["notebook"] == f"/workspace/notebook-{other['id']}.ipynb"
    run(d, sid, other["id"], "1")
    assert json.loads(download(d, sid, other["notebook"]).body)["nbformat"] == 4
    CONTEXTS["other"] = other


def test_thread_output_after_its_cell_reaches_the_next_call(d, sid):
    c = CONTEXTS.get("other") or new_context(d, sid)
    first = run(d, sid, c["id"],
                "import threading, time\n"
                "def talk():\n"
                "    for i in range(3):\n"
                "        time.sleep(1)\n"
                "        print('line', i, flush=True)\n"
                "threading.Thread(target=talk).start()\n")
    second = run(d, sid, c["id"], "'at once'")
    # control: the thread had not printed its last line when both answered
    assert "line 2" not in first["stdout"] + second["stdout"]
    time.sleep(5)
    third = run(d, sid, c["id"], "print('third')")
    assert first["stdout"] + second["stdout"] + third["stdout"] == \
        "line 0\nline 1\nline 2\nthird\n"
