"""The pool of ready sandboxes (docs/api.md, "Create a sandbox"): a create
served by the pool says so ("restored_from": "pool"), and the sandbox it
gets is the caller's: the host's wall clock, kernel and Python random
numbers no other pooled sandbox draws, the create's env in its first exec,
its TTL counted from the create.  /metrics counts hits and misses; a pool
of size 0 still creates.  Each check first shows that its probe can see
the failure it looks for.  Skipped without a baked template."""
import datetime
import re
import time

import pytest

from conftest import Daemon, create_sandbox, exec_cmd, reap_vms, wait_for

POOL = 2


def pool_ready(d, name):
    ts = {t["name"]: t for t in d.request("GET", "/v1/templates").json()["templates"]}
    return ts[name]["pool_ready"]


def metric(d, event):
    text = d.request("GET", "/metrics").body.decode()
    m = re.search(r'^pandastack_events_total\{event="%s"\} (\d+)$' % event, text, re.M)
    assert m, f"no {event} in /metrics"
    return int(m.group(1))


@pytest.fixture(scope="module")
def pool_daemon(tmp_path_factory, template):
    """A pool of POOL ready sandboxes of the test template, none of others."""
    root = tmp_path_factory.mktemp("pool")
    d = Daemon(root / "data", ["--pool-size", "0", "--pool-sizes", f"{template}={POOL}"]).start()
    yield d
    d.stop()
    reap_vms(d.data_dir)


def create_pooled(d, template, **fields):
    """Wait for a ready entry, then create: the answer must come from it."""
    wait_for(lambda: pool_ready(d, template) >= 1, 300, interval=0.5,
             what="a ready entry in the pool")
    s = create_sandbox(d, template, **fields)
    assert s["restored_from"] == "pool", s
    return s


def sh(d, sid, cmd):
    r = exec_cmd(d, sid, cmd)
    assert r["exit_code"] == 0, r
    return r["stdout"]


def guest_clock_offset(d, sid):
    """Guest wall clock minus the host's, s (the host's read around the exec)."""
    before = time.time()
    guest = float(sh(d, sid, "date +%s.%N"))
    after = time.time()
    if guest < before:
        return guest - before
    if guest > after:
        return guest - after
    return 0.0


def test_pool_hands_out_the_callers_sandbox(pool_daemon, template):
    d = pool_daemon
    hits, misses = metric(d, "pool_hit"), metric(d, "pool_miss")
    s = create_pooled(d, template, ttl_seconds=600, env={"POOL_TEST_VAR": "from-the-create"})
    sid = s["id"]
    try:
        # Env: the create's env is in its very first exec.
        out = exec_cmd(d, sid, "echo \"[$POOL_TEST_VAR][$POOL_TEST_UNSET]\"")
        # control: an unset name reads as empty, so the probe sees a missing env
        assert out["stdout"] == "[from-the-create][]\n", out
        # Clock: within 1 s of the host's; control: a guest 30 s behind is seen.
        off = guest_clock_offset(d, sid)
        assert abs(off) <= 1.0, off
        sh(d, sid, "date -s @$(( $(date +%s) - 30 )) >/dev/null")
        assert guest_clock_offset(d, sid) < -20
        assert metric(d, "pool_hit") == hits + 1
        assert metric(d, "pool_miss") == misses
    finally:
        d.request("DELETE", f"/v1/sandboxes/{sid}")


def test_pooled_sandboxes_draw_different_random_numbers(pool_daemon, template):
    d = pool_daemon
    urandom = "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'"
    pyrand = "python3 -c 'import random; print(random.getrandbits(128))'"
    seeded = "python3 -c 'import random; random.seed(7); print(random.getrandbits(128))'"
    ids, kernel, python, control = [], [], [], []
    try:
        for _ in range(3):
            s = create_pooled(d, template, ttl_seconds=600)
            ids.append(s["id"])
            kernel.append(sh(d, s["id"], urandom))
            python.append(sh(d, s["id"], pyrand))
            control.append(sh(d, s["id"], seeded))
            if template == "code-interpreter":
                # a code context: a warm kernel whose state came from the
                # template's snapshot
                r = d.request("POST", f"/v1/sandboxes/{s['id']}/contexts", {})
                assert r.status == 201, r
                r = d.request("POST", f"/v1/sandboxes/{s['id']}/contexts/{r.json()['id']}/run_code",
                              {"code": "import random\nrandom.getrandbits(128)"})
                assert r.status == 200, r
                mains = [x for x in r.json()["results"] if x["is_main_result"]]
                python.append(mains[0]["text"])
        # control: the same seed draws the same number in every sandbox, so
        # the probe sees a shared generator state
        assert len(set(control)) == 1 and len(control[0]) > 30
        assert all(len(k) == 64 for k in kernel)
        assert len(set(kernel)) == len(kernel), kernel
        assert len(set(python)) == len(python), python
    finally:
        for sid in ids:
            d.request("DELETE", f"/v1/sandboxes/{sid}")


def test_ttl_counts_from_the_create(pool_daemon, template):
    d = pool_daemon
    ttl = 15
    wait_for(lambda: pool_ready(d, template) >= POOL, 300, interval=0.5, what="a full pool")
    # the entries have waited longer than the TTL: a TTL counted from their
    # start would end the sandbox at once
    time.sleep(ttl + 2)
    t0 = time.time()
    s = create_pooled(d, template, ttl_seconds=ttl)
    sid = s["id"]
    expires = datetime.datetime.fromisoformat(s["expires_at"].replace("Z", "+00:00"))
    assert abs(expires.timestamp() - (t0 + ttl)) < 3, s
    try:
        time.sleep(max(0.0, t0 + ttl - 4 - time.time()))
        r = d.request("GET", f"/v1/sandboxes/{sid}")
        assert r.status == 200 and r.json()["status"] == "running", r
        assert sh(d, sid, "echo alive") == "alive\n"

        def ended():
            r = d.request("GET", f"/v1/sandboxes/{sid}")
            return r.status == 404 or r.json()["status"] != "running"

        wait_for(ended, 60, interval=0.5, what="the sandbox to end at its TTL")
        assert time.time() >= t0 + ttl - 1
    finally:
        d.request("DELETE", f"/v1/sandboxes/{sid}")


def test_misses_fall_back_and_are_counted(pool_daemon, template):
    d = pool_daemon
    wait_for(lambda: pool_ready(d, template) >= POOL, 300, interval=0.5, what="a full pool")
    hits, misses = metric(d, "pool_hit"), metric(d, "pool_miss")
    ids, sources = [], []
    try:
        # more creates than entries, back to back: the pool cannot refill
        # in between under TCG, so at least one falls back to the template
        for _ in range(POOL + 1):
            s = create_sandbox(d, template, ttl_seconds=600)
            ids.append(s["id"])
            sources.append(s["restored_from"])
        assert set(sources) <= {"pool", "template"}
        assert "template" in sources and "pool" in sources, sources
        assert metric(d, "pool_hit") - hits == sources.count("pool")
        assert metric(d, "pool_miss") - misses == sources.count("template")
        for sid in ids:
            assert sh(d, sid, "echo ok") == "ok\n"
    finally:
        for sid in ids:
            d.request("DELETE", f"/v1/sandboxes/{sid}")


def test_pool_of_size_zero_still_creates(daemon_factory, template):
    d = daemon_factory("nopool", ["--pool-size", "0"])
    assert pool_ready(d, template) == 0
    s = create_sandbox(d, template, ttl_seconds=120)
    try:
        assert s["restored_from"] == "template"
        assert sh(d, s["id"], "echo ok") == "ok\n"
        assert metric(d, "pool_hit") == 0 and metric(d, "pool_miss") == 0
    finally:
        d.request("DELETE", f"/v1/sandboxes/{s['id']}")
