"""AsyncFilesystem against the fake API, as test_filesystem.py for
Filesystem: write (text, bytes, seekable and non-seekable file objects, async
iterables), read formats, atomic downloads, stat/list/mkdir/remove."""
import hashlib
import io
import os

import pytest
from conftest import SID
from fakeapi import Reply, error, read_body
from test_filesystem import Pipe, echo_put

from pandastack import (ConnectionError, DirListing, FileEntry, NotFoundError, SandboxError,
                        WriteInfo)

FS = f"/v1/sandboxes/{SID}/fs"


async def test_write_text_bytes_and_empty(api, asandbox):
    api.route("PUT", FS, echo_put)
    fs = asandbox.filesystem
    assert await fs.write("/workspace/a b.txt", "héllo\n") == WriteInfo("/workspace/a b.txt", 7)
    assert (await fs.write("/b", b"\x00\xff")).size == 2
    assert (await fs.write("/e", b"")).size == 0
    reqs = api.calls("PUT", FS)
    assert reqs[0].query == {"path": ["/workspace/a b.txt"]}
    assert reqs[0].body == "héllo\n".encode() and reqs[0].headers["content-length"] == "7"
    assert reqs[1].body == b"\x00\xff" and reqs[2].headers["content-length"] == "0"


async def test_write_seekable_file_sends_content_length_from_its_position(api, asandbox):
    api.route("PUT", FS, echo_put)
    f = io.BytesIO(b"skip-this|the rest")
    f.seek(10)
    info = await asandbox.filesystem.write("/f", f)
    (req,) = api.calls("PUT", FS)
    assert req.headers["content-length"] == "8" and not req.chunked
    assert req.body == b"the rest" and info.size == 8


async def test_write_non_seekable_stream_is_chunked(api, asandbox):
    api.route("PUT", FS, echo_put)
    data = os.urandom(300_000)
    info = await asandbox.filesystem.write("/p", Pipe(data))
    (req,) = api.calls("PUT", FS)
    assert req.chunked and "content-length" not in req.headers
    assert req.body == data and info.size == len(data)


async def test_write_an_async_iterable_is_chunked_as_produced(api, asandbox):
    api.route("PUT", FS, echo_put)
    parts = [os.urandom(100_000) for _ in range(5)]

    async def produce():
        for p in parts:
            yield p
            yield b""  # empty blocks are skipped, not the end

    info = await asandbox.filesystem.write("/g", produce())
    (req,) = api.calls("PUT", FS)
    assert req.chunked and req.body == b"".join(parts) and info.size == 500_000


async def test_write_refuses_text_file_objects_and_other_types(api, asandbox):
    api.route("PUT", FS, echo_put)
    with pytest.raises(TypeError):
        await asandbox.filesystem.write("/t", io.StringIO("text"))
    with pytest.raises(TypeError):
        await asandbox.filesystem.write("/x", 12)  # type: ignore[arg-type]


async def test_upload_streams_the_local_file(api, asandbox, tmp_path):
    seen = {}

    def handler(req):
        h = hashlib.sha256()
        n = read_body(req, h.update)
        seen["sha"], seen["n"] = h.hexdigest(), n
        return Reply(200, {"path": req.query["path"][0], "size": n})

    api.route("PUT", FS, handler, stream_body=True)
    data = os.urandom(3 << 20)
    src = tmp_path / "data.bin"
    src.write_bytes(data)
    info = await asandbox.filesystem.upload(src, "/workspace/data.bin")
    assert seen == {"sha": hashlib.sha256(data).hexdigest(), "n": len(data)}
    assert info == WriteInfo("/workspace/data.bin", len(data))
    assert api.calls("PUT", FS)[0].headers["content-length"] == str(len(data))


async def test_upload_of_a_missing_local_file(api, asandbox, tmp_path):
    with pytest.raises(FileNotFoundError):
        await asandbox.filesystem.upload(tmp_path / "nope", "/x")
    assert api.calls("PUT", FS) == []


async def test_a_failing_source_raises_its_own_error(api, asandbox):
    class Broken(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, b):
            raise PermissionError("the caller's disk")

    api.route("PUT", FS, echo_put)
    with pytest.raises(PermissionError):
        await asandbox.filesystem.write("/x", Broken())


async def test_read_formats(api, asandbox):
    api.route("GET", FS, Reply(200, body=b"caf\xc3\xa9 \xff",
                               headers={"Content-Type": "application/octet-stream"}))
    fs = asandbox.filesystem
    assert await fs.read("/f") == "café \ufffd"
    assert await fs.read("/f", format="bytes") == b"caf\xc3\xa9 \xff"
    assert b"".join([b async for b in await fs.read("/f", format="stream")]) == \
        b"caf\xc3\xa9 \xff"
    assert api.calls("GET", FS)[0].query == {"path": ["/f"]}
    with pytest.raises(ValueError):
        await fs.read("/f", format="json")  # type: ignore[call-overload]


async def test_read_stream_closed_early_does_not_reuse_the_connection(api, asandbox):
    body = os.urandom(4 << 20)
    api.route("GET", FS, Reply(200, body=body))
    it = await asandbox.filesystem.read("/f", format="stream")
    first = await it.__anext__()
    assert first == body[:len(first)] and len(first) < len(body)
    await it.aclose()
    assert await asandbox.filesystem.read("/f", format="bytes") == body
    assert asandbox._t.pool.opened == 2


async def test_read_missing_file(api, asandbox):
    api.route("GET", FS, error(404, "file_not_found", "ENOENT"))
    with pytest.raises(NotFoundError) as ei:
        await asandbox.filesystem.read("/nope")
    assert ei.value.code == "file_not_found"


async def test_download_is_atomic_and_keeps_nothing_on_failure(api, asandbox, tmp_path):
    dest = tmp_path / "result.csv"
    dest.write_bytes(b"old content")

    def short(req):  # announces 1000 bytes, sends 10, hangs up
        h = req.handler
        h.send_response(200)
        h.send_header("Content-Length", "1000")
        h.end_headers()
        h.wfile.write(b"0123456789")
        h.wfile.flush()
        h.close_connection = True

    api.route("GET", FS, short)
    with pytest.raises(ConnectionError):
        await asandbox.filesystem.download("/workspace/result.csv", dest)
    assert dest.read_bytes() == b"old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.csv"]

    api.route("GET", FS, Reply(200, body=b"month,region\n"))
    info = await asandbox.filesystem.download("/workspace/result.csv", str(dest))
    assert dest.read_bytes() == b"month,region\n"
    assert info == WriteInfo(str(dest), 13)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.csv"]


async def test_download_error_leaves_no_file(api, asandbox, tmp_path):
    api.route("GET", FS, error(409, "is_a_directory"))
    with pytest.raises(SandboxError) as ei:
        await asandbox.filesystem.download("/workspace", tmp_path / "x")
    assert ei.value.code == "is_a_directory"
    assert list(tmp_path.iterdir()) == []


async def test_download_into_a_directory_uses_the_guest_name(api, asandbox, tmp_path):
    api.route("GET", FS, Reply(200, body=b"a,b\n"))
    info = await asandbox.filesystem.download("/workspace/out/result.csv", tmp_path)
    assert (tmp_path / "result.csv").read_bytes() == b"a,b\n"
    assert info == WriteInfo(str(tmp_path / "result.csv"), 4)


async def test_stat_exists_list(api, asandbox):
    entry = {"name": "data.csv", "path": "/workspace/data.csv", "type": "file", "size": 174,
             "mode": 420, "mtime_ms": 1764469132123}
    fs = asandbox.filesystem
    api.route("GET", FS + "/stat", [Reply(200, entry), error(404, "file_not_found")])
    assert await fs.stat("/workspace/data.csv") == FileEntry(**entry)
    assert await fs.exists("/nope") is False
    api.route("GET", FS + "/stat", Reply(200, entry))
    assert await fs.exists("/workspace/data.csv") is True
    api.route("GET", FS + "/list", Reply(200, {"path": "/workspace", "entries": [entry, 7],
                                               "truncated": True}))
    listing = await fs.list("/workspace")
    assert isinstance(listing, DirListing) and listing.truncated and len(listing) == 2
    assert [e.name for e in listing] == ["data.csv", ""]


async def test_mkdir_and_remove(api, asandbox):
    api.route("POST", FS + "/mkdir", Reply(201, {"name": "d", "path": "/w/d", "type": "dir",
                                                 "size": 0, "mode": 493, "mtime_ms": 1}))
    e = await asandbox.filesystem.mkdir("/w/d", parents=False)
    assert e.type == "dir" and e.mode == 0o755
    assert api.calls("POST", FS + "/mkdir")[0].json() == {"path": "/w/d", "parents": False}
    api.route("DELETE", FS, Reply(204))
    await asandbox.filesystem.remove("/w/d", recursive=True)
    await asandbox.filesystem.remove("/w/f")
    qs = [r.query for r in api.calls("DELETE", FS)]
    assert qs == [{"path": ["/w/d"], "recursive": ["true"]}, {"path": ["/w/f"]}]
