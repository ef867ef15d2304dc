"""What a careless or hostile user does inside a guest must not break the
sandbox: pseudo files download whole (or fail with the file's own error), uploads do not replace device nodes,
a fork bomb ends at its timeout with the guest still answering, long names
can be written, a removed /workspace comes back, a kernel panic is reported
at once, and a NUL in a kernel's output arrives as one.
Skipped when no template is baked (`make templates`)."""
import time
from urllib.parse import quote

import pytest

from conftest import create_sandbox, exec_cmd, wait_for


@pytest.fixture(scope="module")
def base_template(vm_daemon, template):
    """The fork bomb is about the base template (else the one the tests use)."""
    ts = {t["name"]: t for t in vm_daemon.request("GET", "/v1/templates").json()["templates"]}
    return "base" if ts.get("base", {}).get("status") == "ready" else template


@pytest.fixture(scope="module")
def sbx(vm_daemon, template):
    s = create_sandbox(vm_daemon, template, ttl_seconds=3600)
    yield s
    vm_daemon.request("DELETE", f"/v1/sandboxes/{s['id']}")


def test_procfs_download_has_the_real_bytes(vm_daemon, sbx):
    d, base = vm_daemon, f"/v1/sandboxes/{sbx['id']}"
    for path in ("/proc/version", "/proc/self/status", "/proc/cpuinfo",
                 "/sys/devices/system/cpu/online"):
        r = d.request("GET", f"{base}/fs?path={path}")
        assert r.status == 200, r
        assert len(r.body) > 0, path
        assert r.headers["Content-Length"] == str(len(r.body)), path
    want = exec_cmd(d, sbx["id"], "cat /proc/version")["stdout"].encode()
    assert d.request("GET", f"{base}/fs?path=/proc/version").body == want
    want = exec_cmd(d, sbx["id"], "cat /sys/devices/system/cpu/online")["stdout"].encode()
    assert d.request("GET", f"{base}/fs?path=/sys/devices/system/cpu/online").body == want
    assert d.request("GET", f"{base}/fs?path=/proc/self/status").body.startswith(b"Name:")


def test_a_huge_kernel_file_is_refused_not_streamed(vm_daemon, sbx):
    """/proc/kcore reports the kernel's whole address space (128 TiB): a
    download of it is refused at once instead of streaming without end."""
    d, base = vm_daemon, f"/v1/sandboxes/{sbx['id']}"
    size = int(exec_cmd(d, sbx["id"], "stat -c %s /proc/kcore")["stdout"])
    assert size > 64 << 20  # the control: the kernel does report a huge size
    r = d.request("GET", f"{base}/fs?path=/proc/kcore", timeout=60)
    assert r.status == 413 and r.error_code() == "body_too_large", r
    assert "kernel file" in r.json()["error"]["message"], r
    assert d.request("GET", f"{base}/fs?path=/proc/version").status == 200


def test_unreadable_pseudo_file_is_the_callers_error(vm_daemon, sbx):
    """/proc/self/mem exists, but reading it from offset 0 fails with EIO:
    that is a 422 naming the errno, not a 500 from the service."""
    d, base = vm_daemon, f"/v1/sandboxes/{sbx['id']}"
    assert d.request("GET", f"{base}/fs?path=/proc/self/status").status == 200  # control
    r = d.request("GET", f"{base}/fs?path=/proc/self/mem")
    assert r.status == 422 and r.error_code() == "file_io_error", r
    assert "EIO" in r.json()["error"]["message"], r


def test_upload_writes_procfs_in_place_and_refuses_dotdot(vm_daemon, sbx):
    """An existing procfs file has no room for a temporary file beside it:
    it is written in place, as a shell's `>` would.  A path ending in ".."
    names a directory: refused, and its parent is not made."""
    d, sid = vm_daemon, sbx["id"]
    base = f"/v1/sandboxes/{sid}"
    path = "/proc/sys/kernel/domainname"
    before = d.request("GET", f"{base}/fs?path={path}").body
    assert before != b"pandastack-test\n"  # control: not already the value
    r = d.request("PUT", f"{base}/fs?path={path}", b"pandastack-test\n")
    assert r.status == 200, r
    assert exec_cmd(d, sid, f"cat {path}")["stdout"] == "pandastack-test\n"
    r = d.request("PUT", f"{base}/fs?path=/workspace/made/..", b"x")
    assert r.status == 409 and r.error_code() == "is_a_directory", r
    assert exec_cmd(d, sid, "test -e /workspace/made; echo $?")["stdout"] == "1\n"


def test_upload_onto_device_refused(vm_daemon, sbx):
    d, sid = vm_daemon, sbx["id"]
    base = f"/v1/sandboxes/{sid}"
    r = d.request("PUT", f"{base}/fs?path=/dev/null", b"poison\n")
    assert r.status == 400 and r.error_code() == "invalid_path", r
    exec_cmd(d, sid, "mkfifo /tmp/fifo")
    r = d.request("PUT", f"{base}/fs?path=/tmp/fifo", b"poison\n")
    assert r.status == 400 and r.error_code() == "invalid_path", r
    r = exec_cmd(d, sid, "test -c /dev/null && test -p /tmp/fifo && echo ok; cat; ls -a /dev /tmp")
    assert r["stdout"].startswith("ok\n"), r  # stdin (the guest's /dev/null) reads nothing
    assert ".pandastack-" not in r["stdout"], r  # no temporary file left behind
    # a regular file is still replaced
    assert d.request("PUT", f"{base}/fs?path=/tmp/plain", b"one").status == 200
    assert d.request("PUT", f"{base}/fs?path=/tmp/plain", b"two!").status == 200
    assert d.request("GET", f"{base}/fs?path=/tmp/plain").body == b"two!"


def pids_in_execs(d, sid):
    r = exec_cmd(d, sid, "cat /sys/fs/cgroup/pandastack/pids.current", timeout_seconds=20)
    assert r["stdout"].strip().isdigit(), r
    return int(r["stdout"])


def test_fork_bomb_leaves_the_guest_usable(vm_daemon, base_template):
    d = vm_daemon
    s = create_sandbox(d, base_template, ttl_seconds=600)
    sid = s["id"]
    try:
        # a bomb whose shell waits: the timeout's kill (cgroup.kill) ends it all
        t0 = time.time()
        r = d.request("POST", f"/v1/sandboxes/{sid}/exec",
                      {"cmd": "b(){ b|b& }; b; sleep 100", "timeout_seconds": 10}, timeout=60)
        assert r.status == 200 and r.json()["timed_out"] is True, r
        assert time.time() - t0 < 25, time.time() - t0
        t1 = time.time()
        r = exec_cmd(d, sid, "echo alive", timeout_seconds=20)
        assert r["stdout"] == "alive\n" and time.time() - t1 < 10, r

        # the classic one: its first shell exits at once and the exec ends
        # with it; the bomb runs into its pids limit and is then killed
        r = d.request("POST", f"/v1/sandboxes/{sid}/exec",
                      {"cmd": "b(){ b|b& }; b", "timeout_seconds": 10}, timeout=60)
        assert r.status == 200, r
        t1 = time.time()
        r = exec_cmd(d, sid, "echo alive", timeout_seconds=20)
        assert r["stdout"] == "alive\n" and time.time() - t1 < 10, r
        deadline = time.time() + 30
        n = pids_in_execs(d, sid)
        while n >= 10 and time.time() < deadline:
            time.sleep(1)
            n = pids_in_execs(d, sid)
        assert n < 10, n  # gone, not merely contained (this cat and its shell)

        # and the guest still forks as it should
        r = exec_cmd(d, sid, "for i in 1 2 3 4 5 6 7 8; do sh -c 'echo x' & done; wait",
                     timeout_seconds=20)
        assert r["stdout"] == "x\n" * 8, r
    finally:
        d.request("DELETE", f"/v1/sandboxes/{sid}")


def test_long_file_names_can_be_written(vm_daemon, sbx):
    d, base = vm_daemon, f"/v1/sandboxes/{sbx['id']}"
    for name in ("a" * 250, "b" * 255, "é" * 127):       # up to NAME_MAX bytes
        q = quote("/workspace/" + name)
        assert d.request("PUT", f"{base}/fs?path={q}", b"first").status == 200, name
        assert d.request("PUT", f"{base}/fs?path={q}", b"second").status == 200, name
        assert d.request("GET", f"{base}/fs?path={q}").body == b"second"
    r = d.request("PUT", f"{base}/fs?path=/workspace/{'c' * 256}", b"x")
    assert r.status == 400 and r.error_code() == "invalid_path", r
    r = exec_cmd(d, sbx["id"], "ls -a /workspace | grep -c pandastack || true")
    assert r["stdout"].strip() == "0", r       # no temporary file left behind


def test_removed_workspace_comes_back(vm_daemon, template):
    d = vm_daemon
    s = create_sandbox(d, template, ttl_seconds=600)
    try:
        exec_cmd(d, s["id"], "rm -rf /workspace", cwd="/")
        r = exec_cmd(d, s["id"], "pwd")
        assert r["exit_code"] == 0 and r["stdout"] == "/workspace\n", r
        r = d.request("POST", f"/v1/sandboxes/{s['id']}/run_code",
                      {"code": "import os; print(os.getcwd())", "language": "python"})
        assert r.status == 200 and r.json()["stdout"] == "/workspace\n", r
        # an explicit cwd that does not exist is still the user's error
        r = d.request("POST", f"/v1/sandboxes/{s['id']}/exec", {"cmd": "pwd", "cwd": "/nope"})
        assert r.status == 404 and r.error_code() == "file_not_found", r
    finally:
        d.request("DELETE", f"/v1/sandboxes/{s['id']}")


def test_kernel_panic_is_reported_at_once(vm_daemon, template):
    d = vm_daemon
    s = create_sandbox(d, template, ttl_seconds=600)
    t0 = time.time()
    r = d.request("POST", f"/v1/sandboxes/{s['id']}/exec",
                  {"cmd": "echo c > /proc/sysrq-trigger", "timeout_seconds": 20})
    assert r.status in (409, 502), r             # the guest went down under the call
    assert time.time() - t0 < 15

    def failed():
        g = d.request("GET", f"/v1/sandboxes/{s['id']}").json()
        return g if g["status"] == "error" else None
    g = wait_for(failed, timeout=10, interval=0.1, what="the panicked guest to be reported")
    assert "panicked" in g["reason"], g
    d.request("DELETE", f"/v1/sandboxes/{s['id']}")


def test_nul_in_context_output(vm_daemon):
    d = vm_daemon
    ts = {t["name"]: t for t in d.request("GET", "/v1/templates").json()["templates"]}
    if ts.get("code-interpreter", {}).get("status") != "ready":
        pytest.skip("code-interpreter is not baked")
    s = create_sandbox(d, "code-interpreter", ttl_seconds=600)
    try:
        r = d.request("POST", f"/v1/sandboxes/{s['id']}/contexts", {})
        assert r.status == 201, r
        cid = r.json()["id"]
        r = d.request("POST", f"/v1/sandboxes/{s['id']}/contexts/{cid}/run_code",
                      {"code": "from IPython.display import display\n"
                               "print('a\\x00b')\n"
                               "display({'text/plain': 'c\\x00d'}, raw=True)"})
        assert r.status == 200, r
        ex = r.json()
        assert ex["stdout"] == "a\x00b\n" and ex["error"] is None, ex
        assert [res.get("text") for res in ex["results"]] == ["c\x00d"], ex
        r = d.request("POST", f"/v1/sandboxes/{s['id']}/contexts/{cid}/run_code",
                      {"code": "raise ValueError('e\\x00f')"})
        assert r.status == 200 and r.json()["error"]["name"] == "ValueError", r
    finally:
        d.request("DELETE", f"/v1/sandboxes/{s['id']}")
