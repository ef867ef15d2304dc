"""The product documents' examples (../shared/conformance: http/*.sh and the
CLI's cli/*.sh), run unchanged against a live daemon on real VMs, each in a
fresh temporary folder with PANDASTACK_API_URL and PANDASTACK_API_KEY set."""
import os
import pathlib
import subprocess

import pytest

from conftest import ROOT

CONFORMANCE = pathlib.Path(os.environ.get("PANDASTACK_CONFORMANCE",
                                          ROOT.parent / "shared" / "conformance"))
CLI = ROOT / "build" / "pandastack"

CLI_SCRIPTS = ["01_exec.sh", "02_run_code.sh", "03_fs.sh"]


def scripts(kind, names=None):
    d = CONFORMANCE / kind
    if not d.is_dir():
        return []
    return sorted(p for p in d.glob("*.sh") if names is None or p.name in names)


def run_script(daemon, script, tmp_path, path_prefix=None):
    env = dict(os.environ, PANDASTACK_API_URL=f"http://127.0.0.1:{daemon.port}",
               PANDASTACK_API_KEY=daemon.admin_key)
    if path_prefix:
        env["PATH"] = f"{path_prefix}:{env['PATH']}"
    p = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, f"{script.name} exited {p.returncode}\n{p.stdout}\n{p.stderr}"


@pytest.mark.skipif(not scripts("http"), reason="no conformance folder")
@pytest.mark.parametrize("script", scripts("http"), ids=lambda p: p.name)
def test_http_examples(vm_daemon, script, tmp_path):
    run_script(vm_daemon, script, tmp_path)


@pytest.mark.skipif(not CLI.exists(), reason="build/pandastack is not built")
@pytest.mark.parametrize("script", scripts("cli", CLI_SCRIPTS), ids=lambda p: p.name)
def test_cli_examples(vm_daemon, script, tmp_path):
    run_script(vm_daemon, script, tmp_path, path_prefix=str(CLI.parent))
