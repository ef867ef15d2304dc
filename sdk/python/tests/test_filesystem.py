"""sandbox.filesystem against the fake API: request shapes of write (text,
bytes, seekable and non-seekable file objects), read formats, atomic
downloads, stat/list/mkdir/remove."""
import hashlib
import io
import os

import pytest
from conftest import SID
from fakeapi import Reply, error, read_body

from pandastack import ConnectionError, DirListing, FileEntry, NotFoundError, SandboxError, WriteInfo

FS = f"/v1/sandboxes/{SID}/fs"


def echo_put(req):
    return Reply(200, {"path": req.query["path"][0], "size": len(req.body)})


def test_write_text_is_utf8(api, sandbox):
    api.route("PUT", FS, echo_put)
    info = sandbox.filesystem.write("/workspace/a b.txt", "héllo\n")
    (req,) = api.calls("PUT", FS)
    assert req.query == {"path": ["/workspace/a b.txt"]}
    assert req.body == "héllo\n".encode()
    assert req.headers["content-length"] == str(len("héllo\n".encode()))
    assert info == WriteInfo(path="/workspace/a b.txt", size=7)


def test_write_bytes_and_empty(api, sandbox):
    api.route("PUT", FS, echo_put)
    assert sandbox.filesystem.write("/b", b"\x00\xff").size == 2
    assert sandbox.filesystem.write("/e", b"").size == 0
    reqs = api.calls("PUT", FS)
    assert reqs[0].body == b"\x00\xff" and reqs[1].body == b""
    assert reqs[1].headers["content-length"] == "0"


def test_write_seekable_file_sends_content_length_from_its_position(api, sandbox):
    api.route("PUT", FS, echo_put)
    f = io.BytesIO(b"skip-this|the rest")
    f.seek(10)
    info = sandbox.filesystem.write("/f", f)
    (req,) = api.calls("PUT", FS)
    assert req.headers["content-length"] == "8" and not req.chunked
    assert req.body == b"the rest" and info.size == 8


class Pipe(io.RawIOBase):
    """A non-seekable binary stream of n bytes, in small reads."""

    def __init__(self, data):
        self.data = data
        self.pos = 0

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), 1000, len(self.data) - self.pos)
        b[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n


def test_write_non_seekable_stream_is_chunked(api, sandbox):
    api.route("PUT", FS, echo_put)
    data = os.urandom(300_000)
    info = sandbox.filesystem.write("/p", Pipe(data))
    (req,) = api.calls("PUT", FS)
    assert req.chunked and "content-length" not in req.headers
    assert req.body == data and info.size == len(data)


def test_write_text_file_object_is_refused(api, sandbox):
    api.route("PUT", FS, echo_put)
    with pytest.raises(TypeError):
        sandbox.filesystem.write("/t", io.StringIO("text"))


def test_write_rejects_other_types(sandbox):
    with pytest.raises(TypeError):
        sandbox.filesystem.write("/x", 12)  # type: ignore[arg-type]


def test_upload_streams_the_local_file(api, sandbox, tmp_path):
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
    info = sandbox.filesystem.upload(src, "/workspace/data.bin")
    assert seen == {"sha": hashlib.sha256(data).hexdigest(), "n": len(data)}
    assert info == WriteInfo("/workspace/data.bin", len(data))
    assert api.calls("PUT", FS)[0].headers["content-length"] == str(len(data))


def test_upload_of_a_missing_local_file(api, sandbox, tmp_path):
    with pytest.raises(FileNotFoundError):
        sandbox.filesystem.upload(tmp_path / "nope", "/x")
    assert api.calls("PUT", FS) == []


def test_read_formats(api, sandbox):
    api.route("GET", FS, Reply(200, body=b"caf\xc3\xa9 \xff",
                               headers={"Content-Type": "application/octet-stream"}))
    assert sandbox.filesystem.read("/f") == "café \ufffd"
    assert sandbox.filesystem.read("/f", format="bytes") == b"caf\xc3\xa9 \xff"
    assert b"".join(sandbox.filesystem.read("/f", format="stream")) == b"caf\xc3\xa9 \xff"
    assert api.calls("GET", FS)[0].query == {"path": ["/f"]}
    with pytest.raises(ValueError):
        sandbox.filesystem.read("/f", format="json")  # type: ignore[call-overload]


def test_read_missing_file(api, sandbox):
    api.route("GET", FS, error(404, "file_not_found", "ENOENT"))
    with pytest.raises(NotFoundError) as ei:
        sandbox.filesystem.read("/nope")
    assert ei.value.code == "file_not_found"


def test_download_is_atomic_and_keeps_nothing_on_failure(api, sandbox, tmp_path):
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
        sandbox.filesystem.download("/workspace/result.csv", dest)
    assert dest.read_bytes() == b"old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.csv"]

    api.route("GET", FS, Reply(200, body=b"month,region\n"))
    info = sandbox.filesystem.download("/workspace/result.csv", str(dest))
    assert dest.read_bytes() == b"month,region\n"
    assert info == WriteInfo(str(dest), 13)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.csv"]
    umask = next(int(line.split()[1], 8) for line in open("/proc/self/status")
                 if line.startswith("Umask:"))
    assert dest.stat().st_mode & 0o777 == 0o666 & ~umask  # like any new file, not 0600


def test_download_error_leaves_no_file(api, sandbox, tmp_path):
    api.route("GET", FS, error(409, "is_a_directory"))
    with pytest.raises(SandboxError) as ei:
        sandbox.filesystem.download("/workspace", tmp_path / "x")
    assert ei.value.code == "is_a_directory"
    assert list(tmp_path.iterdir()) == []


def test_stat_exists_list(api, sandbox):
    entry = {"name": "data.csv", "path": "/workspace/data.csv", "type": "file", "size": 174,
             "mode": 420, "mtime_ms": 1764469132123}
    api.route("GET", FS + "/stat", [Reply(200, entry), error(404, "file_not_found")])
    assert sandbox.filesystem.stat("/workspace/data.csv") == FileEntry(**entry)
    assert sandbox.filesystem.exists("/nope") is False
    api.route("GET", FS + "/stat", Reply(200, entry))
    assert sandbox.filesystem.exists("/workspace/data.csv") is True
    api.route("GET", FS + "/list", Reply(200, {"path": "/workspace", "entries": [entry, 7],
                                               "truncated": True}))
    listing = sandbox.filesystem.list("/workspace")
    assert isinstance(listing, DirListing) and listing.truncated and len(listing) == 2
    assert [e.name for e in listing] == ["data.csv", ""]
    assert api.calls("GET", FS + "/list")[0].query == {"path": ["/workspace"]}


def test_mkdir_and_remove(api, sandbox):
    api.route("POST", FS + "/mkdir", Reply(201, {"name": "d", "path": "/w/d", "type": "dir",
                                                 "size": 0, "mode": 493, "mtime_ms": 1}))
    e = sandbox.filesystem.mkdir("/w/d", parents=False)
    assert e.type == "dir" and e.mode == 0o755
    assert api.calls("POST", FS + "/mkdir")[0].json() == {"path": "/w/d", "parents": False}
    api.route("DELETE", FS, Reply(204))
    sandbox.filesystem.remove("/w/d", recursive=True)
    sandbox.filesystem.remove("/w/f")
    qs = [r.query for r in api.calls("DELETE", FS)]
    assert qs == [{"path": ["/w/d"], "recursive": ["true"]}, {"path": ["/w/f"]}]


def test_download_into_a_directory_uses_the_guest_name(api, sandbox, tmp_path):
    api.route("GET", FS, Reply(200, body=b"a,b\n"))
    info = sandbox.filesystem.download("/workspace/out/result.csv", tmp_path)
    assert (tmp_path / "result.csv").read_bytes() == b"a,b\n"
    assert info == WriteInfo(str(tmp_path / "result.csv"), 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.csv"]
