"""A real pandastackd for the SDK's live tests (test_live_daemon.py,
test_async_live.py), skipped when build/pandastackd is not built or no
template is baked in the cache.

The daemon is started on a temporary data dir and a free port (read back
from its `event=http.listening` log line), with its admin key from
<data-dir>/admin.key; it and every sandbox it made are stopped at the end.
Environment: PANDASTACK_CACHE (default /var/cache/pandastack),
PANDASTACK_TEST_TEMPLATE (default: code-interpreter if ready, else base).
"""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import pytest

from pandastack import Sandbox

ROOT = pathlib.Path(__file__).resolve().parents[3]
DAEMON = ROOT / "build" / "pandastackd"
CACHE = os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack")


class Daemon:
    """One pandastackd on its own data dir under ``root``: ``url``, ``key``
    (the admin key), ``template`` (set by :func:`live_daemon`)."""

    def __init__(self, root, *args):
        self.root = pathlib.Path(root)
        self.data = self.root / "data"
        self.log = self.root / "daemon.log"
        self.template = None
        with open(self.log, "wb") as err, open(self.root / "daemon.out", "wb") as out:
            self.proc = subprocess.Popen(
                [str(DAEMON), "--listen", "127.0.0.1:0", "--data-dir", str(self.data),
                 "--cache", CACHE, *args], stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = re.search(r"event=http\.listening host=\S+ port=(\d+)", self.log.read_text())
            if m and (self.data / "admin.key").exists():
                self.url = f"http://127.0.0.1:{m.group(1)}"
                self.key = (self.data / "admin.key").read_text().strip()
                return
            if self.proc.poll() is not None:
                raise RuntimeError("pandastackd exited:\n" + self.log.read_text()[-2000:])
            time.sleep(0.05)
        raise RuntimeError("pandastackd did not start")

    def templates(self):
        """The daemon's templates by name."""
        req = urllib.request.Request(self.url + "/v1/templates",
                                     headers={"Authorization": f"Bearer {self.key}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return {t["name"]: t for t in json.load(r)["templates"]}

    def ready(self, name):
        """True when the template ``name`` is baked and ready."""
        return self.templates().get(name, {}).get("status") == "ready"

    def stop(self):
        """Delete every running sandbox, then stop the daemon."""
        try:
            for s in Sandbox.list(api_key=self.key, api_url=self.url, status="running"):
                Sandbox.connect(s.id, api_key=self.key, api_url=self.url).kill()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def kernel_log_tail():
    """The kernel's last lines about killed or faulting processes (the OOM
    killer, segfaults), for the report of a daemon that died; empty when
    the kernel log cannot be read."""
    try:
        p = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = [ln for ln in p.stdout.splitlines()
             if re.search(r"oom|killed|segfault|traps|general protection", ln, re.I)]
    return "\nkernel log:\n" + "\n".join(lines[-20:]) if lines else ""


def live_daemon(*args):
    """Body of a module-scoped fixture: yields a started Daemon with
    ``template`` set (the daemon gets ``args``), stops it afterwards; skips
    when the daemon is not built or no template is baked."""
    if not DAEMON.exists():
        pytest.skip("build/pandastackd is not built (make)")
    root = pathlib.Path(tempfile.mkdtemp(prefix="pandastack-sdk-live-"))
    d = Daemon(root, *args)
    try:
        want = os.environ.get("PANDASTACK_TEST_TEMPLATE")
        names = [want] if want else ["code-interpreter", "base"]
        d.template = next((n for n in names if d.ready(n)), None)
        if d.template is None:
            pytest.skip("no baked template in the cache (make templates)")
        yield d
    finally:
        died = d.proc.poll()
        d.stop()
        if died is not None:
            print(f"pandastackd died during the tests (status {died}):\n"
                  + d.log.read_text(errors="replace")[-4000:] + kernel_log_tail())
        shutil.rmtree(root, ignore_errors=True)
