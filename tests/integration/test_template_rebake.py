"""A template baked again beside a running daemon.

`make templates` (the engine's bake) can replace a template in the cache a
running daemon uses.  The daemon holds the old bake's memory, so it must
notice the new bake at its next create and restore from that, and a sandbox
still running on the old bake cannot be paused or snapshotted (its pages
would sit on memory that is gone): that is refused at once with
snapshot_stale, and the sandbox runs on.

The test bakes `base` again in a private copy of the cache (hard links of
the images, a copy of the template), never in the shared one.
"""
import os
import time
import subprocess

from conftest import CACHE, ROOT, create_sandbox, exec_cmd

ENGINE = ROOT / "build" / "pandastack-engine"


def private_cache(root):
    cache = root / "cache"
    (cache / "templates").mkdir(parents=True)
    for part in ("images", "jail"):
        if os.path.isdir(os.path.join(CACHE, part)):
            subprocess.run(["cp", "-al", os.path.join(CACHE, part), str(cache / part)],
                           check=True)
    subprocess.run(["cp", "-a", os.path.join(CACHE, "templates", "base"),
                    str(cache / "templates" / "base")], check=True)
    return cache


def test_a_bake_beside_a_running_daemon(daemon_factory, tmp_root):
    cache = private_cache(tmp_root)
    # no pool: the create after the bake must restore a template, not take a
    # sandbox started before it
    d = daemon_factory(extra_args=["--pool-size", "0"], cache=str(cache))
    ids = []
    try:
        old = create_sandbox(d, "base")["id"]
        ids.append(old)
        assert exec_cmd(d, old, "echo before")["stdout"] == "before\n"
        state = cache / "templates" / "base" / "state"
        ino = state.stat().st_ino
        subprocess.run([str(ENGINE), "--cache", str(cache), "bake", "base", "--force"],
                       check=True, timeout=900, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        assert state.stat().st_ino != ino  # the control: the bake did replace it
        # the next create restores the new bake (on the old one's memory
        # it would fail to start)
        r = d.request("POST", "/v1/sandboxes", {"template": "base"})
        assert r.status == 201, r
        new = r.json()["id"]
        ids.append(new)
        assert exec_cmd(d, new, "echo after")["stdout"] == "after\n"
        assert "event=template.changed_on_disk name=base" in d.log()
        # the sandbox on the old bake cannot be captured, and says why
        for route in ("pause", "snapshots", "fork"):
            r = d.request("POST", f"/v1/sandboxes/{old}/{route}", {})
            assert r.status == 409 and r.error_code() == "snapshot_stale", (route, r)
            assert "baked again" in r.json()["error"]["message"], r
        assert exec_cmd(d, old, "echo still")["stdout"] == "still\n"
        assert d.request("GET", f"/v1/sandboxes/{old}").json()["status"] == "running"
        # and later creates keep working
        r = d.request("POST", "/v1/sandboxes", {"template": "base"})
        assert r.status == 201, r
        ids.append(r.json()["id"])
        assert exec_cmd(d, ids[-1], "echo again")["stdout"] == "again\n"
    finally:
        for sid in ids:
            d.request("DELETE", f"/v1/sandboxes/{sid}")


def test_the_pool_moves_to_the_new_bake(daemon_factory, tmp_root):
    cache = private_cache(tmp_root)
    d = daemon_factory(extra_args=["--pool-size", "1"], cache=str(cache))
    ids = []
    try:
        ids.append(create_sandbox(d, "base")["id"])  # loads base and starts its pool
        subprocess.run([str(ENGINE), "--cache", str(cache), "bake", "base", "--force"],
                       check=True, timeout=900, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        # the first create after the bake drops the old bake's ready sandboxes;
        # the new bake's pool then fills and serves
        src = []
        for _ in range(40):
            r = d.request("POST", "/v1/sandboxes", {"template": "base"})
            assert r.status == 201, r
            ids.append(r.json()["id"])
            src.append(r.json().get("restored_from"))
            if src[-1] == "pool":
                break
            d.request("DELETE", f"/v1/sandboxes/{ids.pop()}")
            time.sleep(1)
        assert src[0] == "template" and src[-1] == "pool", src
        sid = ids[-1]
        # a sandbox from the new pool sits on the new bake: it can be paused
        # and resumed
        assert d.request("POST", f"/v1/sandboxes/{sid}/pause", {}).status == 200
        r = d.request("POST", f"/v1/sandboxes/{sid}/resume", {})
        assert r.status == 200, r
        assert exec_cmd(d, sid, "echo resumed")["stdout"] == "resumed\n"
    finally:
        for sid in ids:
            d.request("DELETE", f"/v1/sandboxes/{sid}")
