"""Sandboxes in jails with limits, seen through the daemon (docs/security.md):
the QEMU of a sandbox made through the API runs with its own uid, no
capabilities, no_new_privs, seccomp, an empty environment and its own cgroup;
from inside its jail (a helper with its namespaces and uid, as an escaped QEMU
would be) the daemon's database, the admin key and the other sandbox are not
there; a guest that fills its memory or its disk is contained and so is the
host; a daemon killed for good leaves no sandbox past its deadline; a create
that would cross the disk reserve is refused with nothing left behind (plain
HTTP on a public address: test_tls.py).
Skipped when no template is baked (`make templates`)."""
import os
import pathlib
import shutil
import signal
import subprocess
import time

import pytest

from conftest import create_sandbox, exec_cmd, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="jails need root")


def qemu_pid(d, sid):
    return int((d.data_dir / "sandboxes" / sid / "qemu.pid").read_text())


def status_fields(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def long_exec(d, sid, cmd, seconds):
    r = d.request("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": cmd, "timeout_seconds": seconds},
                  timeout=seconds + 60)
    assert r.status == 200, r
    return r.json()


def in_jail(pid, uid, *argv):
    """Run argv in QEMU's mount/IPC/UTS/network namespaces as its uid and
    gid with no capabilities: what an escaped QEMU could do."""
    return subprocess.run(["nsenter", "-t", str(pid), "-m", "-i", "-u", "-n",
                           "-S", str(uid), "-G", str(uid), "--", *argv],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def jailed(daemon_module, template):
    d = daemon_module
    a = create_sandbox(d, template, ttl_seconds=1800)
    b = create_sandbox(d, template, ttl_seconds=1800)
    yield d, a, b
    for s in (a, b):
        d.request("DELETE", f"/v1/sandboxes/{s['id']}")


@pytest.fixture(scope="module")
def daemon_module(template):
    """A daemon with a marker in its environment (it must not reach QEMU)."""
    import tempfile
    from conftest import Daemon, reap_vms
    root = pathlib.Path(tempfile.mkdtemp(prefix="pandastackd-jail-"))
    os.environ["PANDASTACK_TEST_ENV_MARKER"] = "leaked"
    try:
        d = Daemon(root / "data", ["--pool-size", "1"]).start()
    finally:
        del os.environ["PANDASTACK_TEST_ENV_MARKER"]
    yield d
    d.stop()
    reap_vms(d.data_dir)
    shutil.rmtree(root, ignore_errors=True)


def test_qemu_process_is_jailed(jailed):
    d, a, b = jailed
    uids = []
    for s in (a, b):
        pid = qemu_pid(d, s["id"])
        f = status_fields(pid)
        uid = [int(x) for x in f["Uid"].split()]
        gid = [int(x) for x in f["Gid"].split()]
        assert len(set(uid)) == 1 and uid[0] != 0, f["Uid"]
        assert gid == uid, f["Gid"]
        uids.append(uid[0])
        assert f["Groups"] == ""
        assert f["CapEff"] == f["CapPrm"] == f["CapBnd"] == "0000000000000000"
        assert f["NoNewPrivs"] == "1"
        assert f["Seccomp"] == "2"
        # an empty environment: the daemon's marker is not there (positive
        # control: the daemon itself has it)
        assert b"PANDASTACK_TEST_ENV_MARKER=leaked" in open(f"/proc/{d.proc.pid}/environ", "rb").read()
        assert open(f"/proc/{pid}/environ", "rb").read() == b""
        # its own cgroup, with a memory and a pids limit
        cg = open(f"/proc/{pid}/cgroup").read()
        assert f"/pandastack/vm-{uid[0]}" in cg, cg
        mem_lines = [l for l in cg.splitlines() if ":memory:" in l or l.startswith("0::")]
        path = mem_lines[0].split(":", 2)[2]
        v1 = pathlib.Path("/sys/fs/cgroup/memory") / path.lstrip("/")
        v2 = pathlib.Path("/sys/fs/cgroup") / path.lstrip("/")
        lim = (v1 / "memory.limit_in_bytes") if v1.exists() else (v2 / "memory.max")
        assert int(lim.read_text()) < 1 << 40, lim
        pids_lines = [l for l in cg.splitlines() if ":pids:" in l or l.startswith("0::")]
        ppath = pids_lines[0].split(":", 2)[2].lstrip("/")
        pmax = next(p for p in (pathlib.Path("/sys/fs/cgroup/pids") / ppath / "pids.max",
                                pathlib.Path("/sys/fs/cgroup") / ppath / "pids.max") if p.exists())
        assert pmax.read_text().strip() != "max"
    assert uids[0] != uids[1]


def test_escaped_qemu_sees_nothing_of_the_host(jailed):
    d, a, b = jailed
    pid, uid = qemu_pid(d, a["id"]), status_fields(qemu_pid(d, a["id"]))["Uid"].split()[0]
    own = d.data_dir / "sandboxes" / a["id"] / "jail"
    other = d.data_dir / "sandboxes" / b["id"] / "jail"
    # positive controls: the helper runs, sees and writes its own folder
    r = in_jail(pid, uid, "/usr/bin/touch", str(own / "probe"))
    assert r.returncode == 0, r.stderr
    assert (own / "probe").exists()
    (own / "probe").unlink()
    for path in (d.data_dir / "pandastack.db", d.data_dir / "admin.key", other,
                 other / "agent.sock", d.data_dir / "sandboxes" / a["id"] / "vm.json",
                 pathlib.Path("/etc/shadow"), pathlib.Path("/root")):
        assert path.exists(), path  # on the host it is there
        r = in_jail(pid, uid, "/usr/bin/stat", str(path))
        assert r.returncode != 0 and "No such file" in r.stderr, (path, r.stdout, r.stderr)
    # the template's disk layer is there, read-only
    tpl = pathlib.Path(os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack")) / \
        "templates" / a["template"] / "disk.qcow2"
    r = in_jail(pid, uid, "/usr/bin/stat", str(tpl))
    assert r.returncode == 0, r.stderr
    r = in_jail(pid, uid, "/usr/bin/dd", "if=/dev/zero", f"of={tpl}", "bs=1", "count=1",
                "conv=notrunc")
    assert r.returncode != 0 and ("Read-only" in r.stderr or "denied" in r.stderr), r.stderr


def test_memory_hog_meets_the_guest_oom_killer(jailed):
    d, a, b = jailed
    r = long_exec(d, a["id"], "python3 -c 'a = []\nwhile True: a.append(bytearray(32 << 20))'", 300)
    assert r["exit_code"] != 0 and (r.get("signal") == 9 or r["exit_code"] in (137, -9)), r
    # the sandbox and its neighbour stay up
    assert exec_cmd(d, a["id"], "echo up")["stdout"] == "up\n"
    assert exec_cmd(d, b["id"], "echo up")["stdout"] == "up\n"
    assert alive(qemu_pid(d, a["id"]))


def test_disk_fill_stops_at_the_cap(jailed):
    d, a, b = jailed
    before = shutil.disk_usage(d.data_dir).free
    r = long_exec(d, a["id"], "dd if=/dev/zero of=/root/fill bs=1M 2>&1; sync; df -m /", 900)
    assert "No space left on device" in r["stdout"], r["stdout"][-2000:]
    after = shutil.disk_usage(d.data_dir).free
    overlay = d.data_dir / "sandboxes" / a["id"] / "jail" / "overlay.qcow2"
    cap = 2048 << 20
    assert overlay.stat().st_size <= cap
    assert before - after <= cap + (64 << 20), (before, after)
    # the guest is still usable, its neighbour too, and space comes back
    exec_cmd(d, a["id"], "rm -f /root/fill; sync")
    assert exec_cmd(d, b["id"], "echo up")["stdout"] == "up\n"


def test_killed_daemon_leaves_no_sandbox_past_its_deadline(daemon_factory, template):
    d = daemon_factory("ttl", ["--pool-size", "0", "--ttl-grace", "2"])
    s = create_sandbox(d, template, ttl_seconds=4)
    pid = qemu_pid(d, s["id"])
    assert alive(pid)
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(timeout=30)
    t0 = time.time()
    assert alive(pid)  # the daemon's death alone does not end it
    wait_for(lambda: not alive(pid), 60, what="QEMU ended by its monitor")
    exit_line = (d.data_dir / "sandboxes" / s["id"] / "qemu.exit").read_text()
    assert "deadline passed" in exit_line, exit_line
    assert time.time() - t0 < 30


def test_create_over_the_disk_reserve_is_refused(daemon_factory, template):
    # a reserve larger than any disk: every create must be refused
    d = daemon_factory("full", ["--pool-size", "0", "--reserve-disk", str(1 << 29)])
    r = d.request("POST", "/v1/sandboxes", {"template": template})
    assert r.status == 503 and r.error_code() == "host_full", r
    assert "disk" in r.json()["error"]["message"]
    assert str(d.data_dir) not in r.json()["error"]["message"]
    assert d.request("GET", "/v1/sandboxes").json()["sandboxes"] == []
    assert list((d.data_dir / "sandboxes").iterdir()) == []
    h = d.request("GET", "/healthz").json()
    assert h["capacity"]["disk_reserve_bytes"] == (1 << 29) << 20
    assert h["isolation"] in ("kvm", "tcg: software emulation, weaker isolation")
    assert h["jail"]["jail"] is True


def test_idle_timeout_cuts_silent_clients_not_long_calls(daemon_factory, template):
    import socket
    d = daemon_factory("idle", ["--pool-size", "0", "--idle-timeout", "2", "--head-timeout", "3"])
    # a client that never finishes its request head is cut at --head-timeout
    s = socket.create_connection(("127.0.0.1", d.port))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    s.settimeout(30)
    t0 = time.time()
    got = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    assert got.startswith(b"HTTP/1.1 408 ") and b'"request_timeout"' in got, got[:200]
    assert time.time() - t0 < 15
    s.close()
    # a call that takes longer than the idle timeout is answered whole
    sb = create_sandbox(d, template, ttl_seconds=300)
    t0 = time.time()
    r = exec_cmd(d, sb["id"], "sleep 5; echo done")
    assert r["stdout"] == "done\n" and time.time() - t0 >= 5, r
    d.request("DELETE", f"/v1/sandboxes/{sb['id']}")
