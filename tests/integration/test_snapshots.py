"""Snapshots, forks, pause and resume on real VMs (docs/api.md, "Snapshots,
forks, pause and resume"; docs/snapshots.md): a warmed code context forked
four times, a chain of forks with its middle deleted, a pause that outlives
a SIGKILLed daemon, a capture cut by one, a TTL that pauses (on_timeout
"pause"), and the refusals (stopped sandbox, bad counts, another
team's snapshot, a snapshot a paused sandbox needs, a full host disk).
"""
import datetime
import json
import os
import pathlib
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import (
    Daemon, context_create, context_stdout, create_sandbox, exec_cmd, reap_vms, wait_for)

CI = "code-interpreter"


@pytest.fixture(scope="module")
def snap_daemon(template):
    if template != CI:
        pytest.skip("the snapshot tests need the code-interpreter template")
    root = pathlib.Path(tempfile.mkdtemp(prefix="pandastackd-snap-"))
    d = Daemon(root / "data", ["--pool-size", "0"]).start()
    yield d
    d.stop()
    reap_vms(d.data_dir)
    subprocess.run(["rm", "-rf", str(root)], check=False)


def new_context(d, sid):
    return context_create(d, sid)["id"]


run = context_stdout


def fork(d, sid, count, **body):
    r = d.request("POST", f"/v1/sandboxes/{sid}/fork", dict(body, count=count))
    assert r.status == 201, r
    out = r.json()["sandboxes"]
    assert len(out) == count and all(s["status"] == "running" for s in out), out
    return [s["id"] for s in out]


def qemu_pids(data_dir, sid):
    """The QEMU processes of sandbox sid (under data_dir)."""
    pids = []
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes()
        except OSError:
            continue
        if b"qemu-system" in cmd and f"{data_dir}/sandboxes/{sid}/".encode() in cmd:
            pids.append(int(p.name))
    return pids


def iso_ms(s):
    """ms since the epoch of an API timestamp (2026-11-30T02:18:52.123Z)."""
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() * 1000


DRAW = ("import random, os, numpy as np\n"
        "print(random.random(), os.urandom(16).hex(), np.random.random())\n")


def test_fork_four_times_keeps_state_and_gets_new_entropy(snap_daemon):
    d = snap_daemon
    src = create_sandbox(d, CI, ttl_seconds=900)["id"]
    cid = new_context(d, src)
    assert run(d, src, cid, "import pandas as pd, numpy as np, os\n"
                            "df = pd.DataFrame({'a': np.arange(1_000_000)})\n"
                            "secret = 42\n"
                            "open('/workspace/data.txt', 'w').write('from the source')\n"
                            "print(len(df), os.getpid())\n").split()[0] == "1000000"
    kernel_pid = run(d, src, cid, "print(os.getpid())").strip()
    # A draw twice in one sandbox differs: the comparison below can see sameness.
    assert run(d, src, cid, DRAW) != run(d, src, cid, DRAW)
    forks = fork(d, src, 4)
    assert src not in forks and len(set(forks)) == 4

    draws = {src: run(d, src, cid, DRAW)}
    for f in forks:
        # The same kernel process, not a new one that imported again.
        out = run(d, f, cid, "import sys\nprint(secret, len(df), os.getpid(), "
                             "open('/workspace/data.txt').read())\n").split(None, 3)
        assert out == ["42", "1000000", kernel_pid, "from the source\n"], out
        draws[f] = run(d, f, cid, DRAW)
    # random.random(), os.urandom and numpy: each sandbox its own.
    for i in range(3):
        values = [v.split()[i] for v in draws.values()]
        assert len(set(values)) == len(values), (i, draws)

    # Writes in one fork: seen there (the probe works), nowhere else.
    run(d, forks[0], cid, "secret = 7\nopen('/workspace/data.txt', 'w').write('fork 0')\n")
    exec_cmd(d, forks[0], "echo mine > /workspace/only0")
    assert run(d, forks[0], cid, "print(secret, open('/workspace/data.txt').read())") == \
        "7 fork 0\n"
    for s in [src] + forks[1:]:
        assert run(d, s, cid, "print(secret, open('/workspace/data.txt').read())") == \
            "42 from the source\n", s
        r = exec_cmd(d, s, "test -e /workspace/only0; echo $?")
        assert r["stdout"] == "1\n", (s, r)
    # Each fork has its own QEMU; the fork's capture is not listed as a snapshot.
    for f in forks:
        assert len(qemu_pids(d.data_dir, f)) == 1
    assert d.request("GET", f"/v1/snapshots?sandbox_id={src}").json()["snapshots"] == []
    for s in [src] + forks:
        assert d.request("DELETE", f"/v1/sandboxes/{s}").status == 204


def test_fork_of_fork_of_fork_survives_deleting_the_middle(snap_daemon):
    d = snap_daemon
    a = create_sandbox(d, CI, ttl_seconds=900)["id"]
    cid = new_context(d, a)
    run(d, a, cid, "chain = ['a']")
    exec_cmd(d, a, "echo a > /workspace/chain")
    lineage = [a]
    for name in "bcd":
        child = fork(d, lineage[-1], 1)[0]
        run(d, child, cid, f"chain.append('{name}')")
        exec_cmd(d, child, f"echo {name} >> /workspace/chain")
        lineage.append(child)
    a, b, c, dd = lineage
    assert d.request("DELETE", f"/v1/sandboxes/{b}").status == 204
    assert d.request("DELETE", f"/v1/sandboxes/{c}").status == 204
    assert run(d, a, cid, "print(chain)") == "['a']\n"
    assert run(d, dd, cid, "print(chain)") == "['a', 'b', 'c', 'd']\n"
    assert exec_cmd(d, dd, "cat /workspace/chain")["stdout"] == "a\nb\nc\nd\n"
    assert exec_cmd(d, a, "cat /workspace/chain")["stdout"] == "a\n"
    # And the end of the chain forks again.
    e = fork(d, dd, 1)[0]
    assert run(d, e, cid, "print(len(chain))") == "4\n"
    for s in (a, dd, e):
        assert d.request("DELETE", f"/v1/sandboxes/{s}").status == 204


def test_snapshot_create_from_it_and_refusals(snap_daemon):
    d = snap_daemon
    src = create_sandbox(d, CI, ttl_seconds=900, env={"WHO": "source"})["id"]
    cid = new_context(d, src)
    run(d, src, cid, "x = 'kept'")
    r = d.request("POST", f"/v1/sandboxes/{src}/snapshots", {"name": "warm"})
    assert r.status == 201, r
    snap = r.json()
    assert snap["id"].startswith("snap_") and snap["sandbox_id"] == src
    assert snap["template"] == CI and snap["name"] == "warm" and snap["size_bytes"] > 0
    assert d.request("GET", f"/v1/snapshots/{snap['id']}").json() == snap
    assert [s["id"] for s in d.request("GET", "/v1/snapshots").json()["snapshots"]] == \
        [snap["id"]]
    # The source keeps running.
    assert run(d, src, cid, "print(x)") == "kept\n"

    r = d.request("POST", "/v1/sandboxes", {"snapshot": snap["id"], "ttl_seconds": 900})
    assert r.status == 201, r
    new = r.json()
    assert new["template"] == CI
    assert run(d, new["id"], cid, "print(x)") == "kept\n"
    assert exec_cmd(d, new["id"], "echo $WHO")["stdout"] == "source\n"

    # Another team sees nothing of it.
    other = d.new_key("other-team")
    r = d.request("POST", "/v1/sandboxes", {"snapshot": snap["id"]}, key=other)
    assert r.status == 404 and r.error_code() == "snapshot_not_found", r
    assert d.request("GET", f"/v1/snapshots/{snap['id']}", key=other).status == 404
    assert d.request("DELETE", f"/v1/snapshots/{snap['id']}", key=other).status == 404
    assert d.request("GET", "/v1/snapshots", key=other).json()["snapshots"] == []

    # Counts out of range.
    for n in (0, 17, "2"):
        r = d.request("POST", f"/v1/sandboxes/{src}/fork", {"count": n})
        assert r.status == 400 and r.error_code() == "invalid_field", (n, r)

    # A paused sandbox needs the snapshot its disk and memory sit on.
    r = d.request("POST", f"/v1/sandboxes/{src}/pause")
    assert r.status == 200 and r.json()["status"] == "paused", r
    r = d.request("DELETE", f"/v1/snapshots/{snap['id']}")
    assert r.status == 409 and r.error_code() == "snapshot_in_use", r
    r = d.request("POST", f"/v1/sandboxes/{src}/snapshots")
    assert r.status == 409 and r.error_code() == "sandbox_not_running", r
    r = d.request("POST", f"/v1/sandboxes/{new['id']}/resume")
    assert r.status == 409 and r.error_code() == "sandbox_not_paused", r
    r = d.request("POST", f"/v1/sandboxes/{src}/resume")
    assert r.status == 200 and r.json()["status"] == "running", r
    assert run(d, src, cid, "print(x)") == "kept\n"
    assert d.request("DELETE", f"/v1/snapshots/{snap['id']}").status == 204
    assert d.request("GET", f"/v1/snapshots/{snap['id']}").status == 404
    # The sandboxes made from it keep working.
    assert run(d, new["id"], cid, "print(x)") == "kept\n"
    assert run(d, src, cid, "print(x)") == "kept\n"

    # A stopped sandbox: nothing to capture.
    short = create_sandbox(d, CI, ttl_seconds=1)["id"]
    wait_for(lambda: d.request("GET", f"/v1/sandboxes/{short}").json()["status"] == "stopped",
             30, what="the TTL")
    for route in ("snapshots", "fork", "pause"):
        r = d.request("POST", f"/v1/sandboxes/{short}/{route}")
        assert r.status == 409 and r.error_code() == "sandbox_not_running", (route, r)
    for s in (src, new["id"], short):
        d.request("DELETE", f"/v1/sandboxes/{s}")


def test_snapshot_disk_per_team_is_capped(daemon_factory, template):
    """--max-snapshot-disk-per-team 1 (MiB): the first snapshot is taken
    (the team held nothing), the next is refused while it is kept, and so are
    a fork and a pause (their captures hold disk too: a sandbox forked again
    and again kept a frozen disk layer per fork, counted nowhere).  Deleting
    the snapshot frees nothing while the sandbox sits on its layer (snapshot
    then delete, again and again, filled the host past the limit); once the
    sandbox is gone too, a new one's captures are taken (the control: the
    refusal is the cap)."""
    d = daemon_factory("snapquota", ["--pool-size", "0", "--max-snapshot-disk-per-team", "1"])
    sid = create_sandbox(d, template, ttl_seconds=600)["id"]
    other = None
    try:
        r = exec_cmd(d, sid, "head -c 3000000 /dev/urandom > /workspace/noise && sync")
        assert r["exit_code"] == 0, r
        r = d.request("POST", f"/v1/sandboxes/{sid}/snapshots")
        assert r.status == 201 and r.json()["size_bytes"] >= 1 << 20, r
        first = r.json()["id"]
        r = d.request("POST", f"/v1/sandboxes/{sid}/snapshots")
        assert r.status == 429 and r.error_code() == "too_many_snapshots", r
        assert "--max-snapshot-disk-per-team" in r.json()["error"]["message"], r
        for what in ("fork", "pause"):
            r = d.request("POST", f"/v1/sandboxes/{sid}/{what}", {})
            assert r.status == 429 and r.error_code() == "too_many_snapshots", (what, r)
        assert d.request("GET", f"/v1/sandboxes/{sid}").json()["status"] == "running"
        assert len(d.request("GET", "/v1/sandboxes").json()["sandboxes"]) == 1
        assert d.request("DELETE", f"/v1/snapshots/{first}").status == 204
        r = d.request("POST", f"/v1/sandboxes/{sid}/snapshots")
        assert r.status == 429 and r.error_code() == "too_many_snapshots", r
        assert d.request("DELETE", f"/v1/sandboxes/{sid}").status == 204
        other = create_sandbox(d, template, ttl_seconds=600)["id"]
        r = d.request("POST", f"/v1/sandboxes/{other}/fork", {})
        assert r.status == 201, r
        assert d.request("DELETE", f"/v1/sandboxes/{r.json()['sandboxes'][0]['id']}").status == 204
    finally:
        d.request("DELETE", f"/v1/sandboxes/{sid}")
        if other:
            d.request("DELETE", f"/v1/sandboxes/{other}")


def test_fork_past_the_sandbox_limit_is_refused_first(daemon_factory, template):
    """--max-sandboxes-per-team 2 with one sandbox: a fork of 2 is refused
    before anything is captured or started (the previous daemon captured,
    started a fork, ended it and then said the team had 2 sandboxes); a fork
    of 1 is taken (the control)."""
    d = daemon_factory("forklimit", ["--pool-size", "0", "--max-sandboxes-per-team", "2"])
    sid = create_sandbox(d, template, ttl_seconds=600)["id"]
    try:
        r = d.request("POST", f"/v1/sandboxes/{sid}/fork", {"count": 2})
        assert r.status == 429 and r.error_code() == "too_many_sandboxes", r
        assert "has 1 sandboxes: 2 forks" in r.json()["error"]["message"], r
        assert not any((d.data_dir / "snapshots").iterdir())
        r = d.request("POST", f"/v1/sandboxes/{sid}/fork", {"count": 1})
        assert r.status == 201, r
        assert d.request("DELETE", f"/v1/sandboxes/{r.json()['sandboxes'][0]['id']}").status == 204
    finally:
        d.request("DELETE", f"/v1/sandboxes/{sid}")


def test_resume_racing_a_delete(daemon_factory, template):
    """A paused sandbox deleted while it is being resumed: the resume answers
    200 (it came first) or 404, never 500, and no capture is left on disk
    (the previous daemon answered 500 and kept the pause's capture until its
    next start)."""
    d = daemon_factory("resumerace", ["--pool-size", "0"])
    snaps = d.data_dir / "snapshots"
    outcomes = set()
    for delay in (0.05, 0.0, 0.1):
        sid = create_sandbox(d, template, ttl_seconds=600)["id"]
        assert d.request("POST", f"/v1/sandboxes/{sid}/pause").status == 200
        assert any(snaps.iterdir())  # the control: the pause's capture is there
        got = {}
        t = threading.Thread(target=lambda: got.update(
            r=d.request("POST", f"/v1/sandboxes/{sid}/resume")))
        t.start()
        time.sleep(delay)
        assert d.request("DELETE", f"/v1/sandboxes/{sid}").status in (204, 404)
        t.join()
        r = got["r"]
        assert r.status in (200, 404), r
        if r.status == 404:
            assert r.error_code() == "sandbox_not_found", r
        outcomes.add(r.status)
        d.request("DELETE", f"/v1/sandboxes/{sid}")
        wait_for(lambda: not any(snaps.iterdir()), 10, what="the capture to go")
    print("resume outcomes:", sorted(outcomes))


def test_pause_survives_a_killed_daemon(daemon_factory, template):
    if template != CI:
        pytest.skip("needs the code-interpreter template")
    d = daemon_factory("paused", ["--pool-size", "0"])
    sid = create_sandbox(d, CI, ttl_seconds=900)["id"]
    cid = new_context(d, sid)
    run(d, sid, cid, "import numpy as np\nvalue = 'still here'\narr = np.arange(10)")
    assert len(qemu_pids(d.data_dir, sid)) == 1
    r = d.request("POST", f"/v1/sandboxes/{sid}/pause")
    assert r.status == 200 and r.json()["status"] == "paused", r
    wait_for(lambda: not qemu_pids(d.data_dir, sid), 10, what="QEMU to end")
    d.stop(signal.SIGKILL)
    d.start()
    assert d.request("GET", f"/v1/sandboxes/{sid}").json()["status"] == "paused"
    r = d.request("POST", f"/v1/sandboxes/{sid}/resume")
    assert r.status == 200 and r.json()["id"] == sid, r
    assert run(d, sid, cid, "print(value, arr.sum())") == "still here 45\n"
    assert d.request("DELETE", f"/v1/sandboxes/{sid}").status == 204


def qmp_status(data_dir, sid):
    """QEMU's run state asked through its own monitor socket (free once the
    daemon that held it is gone)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(f"{data_dir}/sandboxes/{sid}/jail/qmp.sock")
        f = s.makefile("rwb")
        f.readline()  # greeting
        for cmd in (b'{"execute":"qmp_capabilities"}\n', b'{"execute":"query-status"}\n'):
            f.write(cmd)
            f.flush()
            while True:
                msg = json.loads(f.readline())
                if "return" in msg or "error" in msg:
                    break
        return msg["return"]["status"]


def all_qemu_pids(data_dir):
    """Every QEMU process of a daemon's data dir."""
    out = []
    for p in pathlib.Path("/proc").iterdir():
        try:
            if p.name.isdigit() and b"qemu-system" in (p / "cmdline").read_bytes() and \
                    f"{data_dir}/sandboxes/".encode() in (p / "cmdline").read_bytes():
                out.append(int(p.name))
        except OSError:
            pass
    return out


@pytest.mark.parametrize("what", ["snapshots", "fork"])
def test_capture_cut_by_a_killed_daemon_leaves_the_sandbox_running(daemon_factory, template,
                                                                    what):
    """A daemon SIGKILLed while a capture (a snapshot, or a fork's, whose
    QEMUs start during it) has the guest stopped: the next daemon adopts the
    sandbox running again (QEMU continued), not a frozen VM that reads
    "running" and answers nothing; what the capture left is settled, so the
    sandbox is captured again; no fork's QEMU is left over."""
    d = daemon_factory("cut-" + what, ["--pool-size", "0"])
    caught = None
    for delay in (0.25, 0.15, 0.4, 0.1, 0.6, 0.2, 0.05, 0.12, 0.18, 0.08, 0.3, 0.03):
        sid = create_sandbox(d, template, ttl_seconds=900)["id"]
        # Memory to copy, so the capture keeps the guest stopped a while.
        r = exec_cmd(d, sid, "dd if=/dev/zero of=/dev/shm/fill bs=1M count=200 2>&1")
        assert r["exit_code"] == 0, r
        def snapshot(sid=sid):
            try:
                d.request("POST", f"/v1/sandboxes/{sid}/{what}", {})
            except OSError:
                pass  # the daemon is killed under it

        t = threading.Thread(target=snapshot, daemon=True)
        t.start()
        time.sleep(delay)
        d.stop(signal.SIGKILL)
        t.join(30)
        # Positive control: the kill must have come while the guest was stopped.
        if qmp_status(d.data_dir, sid) == "paused":
            caught = sid
            break
        d.start()
        # The kill came after the capture: forks the daemon had finished are
        # sandboxes (listed, ended at their TTL); delete them with the source.
        for s in d.request("GET", "/v1/sandboxes").json()["sandboxes"]:
            assert d.request("DELETE", f"/v1/sandboxes/{s['id']}").status == 204
    assert caught, "no kill landed during a capture"
    d.start()
    assert d.request("GET", f"/v1/sandboxes/{caught}").json()["status"] == "running"
    # A frozen guest answers no exec (the old daemon's 502 after 5 s).
    r = exec_cmd(d, caught, "echo alive")
    assert r["exit_code"] == 0 and r["stdout"] == "alive\n", r
    # The source's alone: a fork whose start a kill cut short has no row;
    # the new daemon removes its folder and ends its QEMU; the deleted
    # sandboxes' QEMUs end too (not at once).
    wait_for(lambda: len(all_qemu_pids(d.data_dir)) == 1, 20, what="the other QEMUs to end")
    r = d.request("POST", f"/v1/sandboxes/{caught}/snapshots", {})
    assert r.status == 201, r
    r = d.request("POST", f"/v1/sandboxes/{caught}/fork", {})
    assert r.status == 201, r
    f = r.json()["sandboxes"][0]["id"]
    assert exec_cmd(d, f, "ls /dev/shm/fill")["exit_code"] == 0
    for sid in (f, caught):
        assert d.request("DELETE", f"/v1/sandboxes/{sid}").status == 204


def test_ttl_with_on_timeout_pause_pauses_and_resumes(snap_daemon):
    """on_timeout "pause": at its TTL the sandbox is captured and its QEMU
    ends (status paused, not stopped); a resume brings its context back."""
    d = snap_daemon
    sid = create_sandbox(d, CI, ttl_seconds=40, on_timeout="pause")["id"]
    cid = new_context(d, sid)
    run(d, sid, cid, "kept = 6 * 7")
    # the probe: before its TTL it is running with its QEMU
    assert d.request("GET", f"/v1/sandboxes/{sid}").json()["status"] == "running"
    assert len(qemu_pids(d.data_dir, sid)) == 1
    wait_for(lambda: d.request("GET", f"/v1/sandboxes/{sid}").json()["status"] == "paused",
             120, interval=0.5, what="the TTL to pause the sandbox")
    wait_for(lambda: not qemu_pids(d.data_dir, sid), 10, what="QEMU to end")
    # paused at its TTL, it had nothing left: the resume gives the default
    # TTL (300 s), not one second that would pause it again at once
    r = d.request("POST", f"/v1/sandboxes/{sid}/resume")
    assert r.status == 200 and r.json()["status"] == "running", r
    left = (iso_ms(r.json()["expires_at"]) - time.time() * 1000) / 1000
    assert 250 < left <= 301, left
    assert run(d, sid, cid, "print(kept)") == "42\n"
    time.sleep(3)
    assert d.request("GET", f"/v1/sandboxes/{sid}").json()["status"] == "running"
    assert d.request("DELETE", f"/v1/sandboxes/{sid}").status == 204
    wait_for(lambda: not qemu_pids(d.data_dir, sid), 10, what="QEMU to end")


def fill(path, leave):
    """Allocate path until its filesystem has about leave bytes free (and
    less than leave + 1 MiB)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        size, chunk = 0, 1 << 30
        while chunk >= 1 << 20:
            try:
                os.posix_fallocate(fd, size, chunk)
                size += chunk
            except OSError:
                chunk //= 2
        os.ftruncate(fd, max(size - leave, 0))
    finally:
        os.close(fd)


def test_full_host_disk_fails_the_capture_and_the_sandbox_runs_on(daemon_factory, template,
                                                                  tmp_root):
    if template != CI:
        pytest.skip("needs the code-interpreter template")
    # A small filesystem of its own for the daemon's data (a create needs room
    # for the template's disk cap, 2 GiB): an ext4 image on a loop device.
    mnt, img = tmp_root / "small", tmp_root / "small.img"
    mnt.mkdir()
    subprocess.run(["truncate", "-s", "2600M", str(img)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(img)], check=True)
    if subprocess.run(["mount", "-o", "loop", str(img), str(mnt)]).returncode:
        pytest.skip("cannot mount a loop device")
    try:
        d = Daemon(mnt / "data", ["--pool-size", "0", "--reserve-disk", "0"]).start()
        try:
            sid = create_sandbox(d, CI, ttl_seconds=900)["id"]
            cid = new_context(d, sid)
            run(d, sid, cid, "import numpy as np\nbig = np.ones(8 << 20)")  # 64 MiB changed
            filler = mnt / "filler"
            fill(filler, 4 << 20)  # room for the registry, not for the changed memory
            r = d.request("POST", f"/v1/sandboxes/{sid}/snapshots")
            assert r.status == 507 and r.error_code() == "host_disk_full", r
            assert "keeps running" in r.json()["error"]["message"]
            assert d.request("GET", f"/v1/sandboxes/{sid}").json()["status"] == "running"
            assert run(d, sid, cid, "print(big.sum())") == f"{float(8 << 20)}\n"
            assert d.request("GET", "/v1/snapshots").json()["snapshots"] == []
            # A fork's capture fails the same way and leaves no fork behind.
            r = d.request("POST", f"/v1/sandboxes/{sid}/fork", {"count": 2})
            assert r.status == 507 and r.error_code() == "host_disk_full", r
            assert run(d, sid, cid, "print(big.sum())") == f"{float(8 << 20)}\n"
            assert len(d.request("GET", "/v1/sandboxes").json()["sandboxes"]) == 1
            # With room again, the same captures work (the refusals were the disk's).
            filler.unlink()
            r = d.request("POST", f"/v1/sandboxes/{sid}/snapshots")
            assert r.status == 201, r
            r = d.request("POST", f"/v1/sandboxes/{sid}/fork", {})
            assert r.status == 201, r
            f = r.json()["sandboxes"][0]["id"]
            assert run(d, f, cid, "print(big.sum())") == f"{float(8 << 20)}\n"
            d.request("DELETE", f"/v1/sandboxes/{f}")
            d.request("DELETE", f"/v1/sandboxes/{sid}")
        finally:
            d.stop()
            reap_vms(d.data_dir)
    finally:
        subprocess.run(["umount", "-l", str(mnt)])
