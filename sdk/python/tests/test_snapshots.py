"""Snapshots, forks, pause and resume against the fake API, through Sandbox
and AsyncSandbox: request shapes, results, errors."""
import pytest
from conftest import KEY, SID
from fakeapi import Reply, error, sandbox_json

from pandastack import AsyncSandbox, NotFoundError, PandaStackError, Sandbox, SnapshotInfo

SB = f"/v1/sandboxes/{SID}"
SNAP = "snap_0123456789abcdef0123"
FORKS = ["sbx_aaaaaaaaaaaaaaaaaaaa", "sbx_bbbbbbbbbbbbbbbbbbbb"]


def snapshot_json(**extra):
    d = {"id": SNAP, "sandbox_id": SID, "template": "code-interpreter",
         "created_at": "2026-11-30T02:20:11.481Z", "size_bytes": 54788096, "name": "warm",
         "parent": None}
    d.update(extra)
    return d


def routes(api):
    api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID)))
    api.route("POST", SB + "/snapshots", Reply(201, snapshot_json()))
    api.route("POST", SB + "/fork", Reply(201, {"sandboxes": [sandbox_json(f) for f in FORKS]}))
    api.route("POST", SB + "/pause", Reply(200, sandbox_json(SID, status="paused")))
    api.route("POST", SB + "/resume", Reply(200, sandbox_json(SID)))
    api.route("GET", "/v1/snapshots", Reply(200, {"snapshots": [snapshot_json()]}))
    api.route("DELETE", f"/v1/snapshots/{SNAP}", Reply(204))


def test_sync_surface(api, sandbox):
    routes(api)
    snap = sandbox.snapshot("warm")
    assert snap == SnapshotInfo(SNAP, SID, "code-interpreter", "2026-11-30T02:20:11.481Z",
                                54788096, "warm", None)
    forks = sandbox.fork(2, ttl_seconds=60)
    assert [f.id for f in forks] == FORKS and all(isinstance(f, Sandbox) for f in forks)
    assert sandbox.pause().status == "paused" and sandbox.status == "paused"
    assert sandbox.resume().status == "running"
    assert sandbox.resume(ttl_seconds=120).status == "running"
    assert Sandbox.list_snapshots(SID, api_key=KEY, api_url=api.url)[0].id == SNAP
    Sandbox.delete_snapshot(SNAP, api_key=KEY, api_url=api.url)
    Sandbox.create(snapshot=SNAP, on_timeout="pause", api_key=KEY, api_url=api.url)
    sent = [(r.method, r.path, r.json() if r.body else None,
             r.query if r.query else None) for r in api.requests]
    assert sent == [
        ("POST", SB + "/snapshots", {"name": "warm"}, None),
        ("POST", SB + "/fork", {"count": 2, "ttl_seconds": 60}, None),
        ("POST", SB + "/pause", None, None),
        ("POST", SB + "/resume", None, None),
        ("POST", SB + "/resume", {"ttl_seconds": 120}, None),
        ("GET", "/v1/snapshots", None, {"sandbox_id": [SID]}),
        ("DELETE", f"/v1/snapshots/{SNAP}", None, None),
        ("POST", "/v1/sandboxes", {"snapshot": SNAP, "on_timeout": "pause"}, None),
    ]


def test_errors_are_typed(api, sandbox):
    api.route("POST", SB + "/fork", error(400, "invalid_field", "count must be 1 to 16"))
    api.route("DELETE", f"/v1/snapshots/{SNAP}", error(409, "snapshot_in_use"))
    api.route("POST", "/v1/sandboxes", error(404, "snapshot_not_found"))
    with pytest.raises(PandaStackError) as e:
        sandbox.fork(17)
    assert e.value.code == "invalid_field"
    with pytest.raises(PandaStackError) as e:
        Sandbox.delete_snapshot(SNAP, api_key=KEY, api_url=api.url)
    assert e.value.code == "snapshot_in_use"
    with pytest.raises(NotFoundError):
        Sandbox.create(snapshot=SNAP, api_key=KEY, api_url=api.url)
    with pytest.raises(TypeError):
        sandbox.fork("2")
    with pytest.raises(ValueError):
        Sandbox.delete_snapshot("", api_key=KEY, api_url=api.url)


async def test_async_surface_sends_the_same_requests(api):
    routes(api)
    sb = await AsyncSandbox.create(template="base", api_key=KEY, api_url=api.url)
    api.requests.clear()
    assert (await sb.snapshot("warm")).id == SNAP
    forks = await sb.fork(2, ttl_seconds=60)
    assert [f.id for f in forks] == FORKS and all(isinstance(f, AsyncSandbox) for f in forks)
    assert (await sb.pause()).status == "paused"
    assert (await sb.resume()).status == "running"
    assert (await AsyncSandbox.list_snapshots(SID, api_key=KEY, api_url=api.url))[0].id == SNAP
    await AsyncSandbox.delete_snapshot(SNAP, api_key=KEY, api_url=api.url)
    await sb.aclose()
    sent = [(r.method, r.path, r.body) for r in api.requests]
    assert sent == [
        ("POST", SB + "/snapshots", b'{"name": "warm"}'),
        ("POST", SB + "/fork", b'{"count": 2, "ttl_seconds": 60}'),
        ("POST", SB + "/pause", b""),
        ("POST", SB + "/resume", b""),
        ("GET", "/v1/snapshots", b""),
        ("DELETE", f"/v1/snapshots/{SNAP}", b""),
    ]
