"""``sandbox.filesystem``: files in the sandbox (docs/api.md, "Files").

Uploads and downloads are streamed in chunks of ``CHUNK_SIZE`` bytes: a file of
any size moves with flat client memory. A download goes to a temporary file next
to the destination and is renamed into place only when every byte arrived, so a
failed download never leaves a partial file under the destination name.

One :class:`Filesystem` may be used from several threads at once.
"""
from __future__ import annotations

import http.client
import io
import os
import posixpath
import secrets
import socket
from typing import IO, TYPE_CHECKING, Generator, Iterator, Literal, Optional, Union, overload

from ._http import CHUNK_SIZE, StreamBody, _client_error
from .errors import ConnectionError, NotFoundError
from .models import DirListing, FileEntry, WriteInfo

if TYPE_CHECKING:  # pragma: no cover
    from ._http import Transport

__all__ = ["Filesystem"]

WriteData = Union[str, bytes, bytearray, memoryview, IO[bytes]]
LocalPath = Union[str, "os.PathLike[str]"]


def _stream_length(f: IO[bytes]) -> Optional[int]:
    """Bytes left in a seekable file object, or None (then chunked encoding)."""
    try:
        if not f.seekable():
            return None
        pos = f.tell()
        end = f.seek(0, io.SEEK_END)
        f.seek(pos)
        return max(0, end - pos)
    except (AttributeError, OSError, ValueError):
        return None


class Filesystem:
    """Read and write files in one sandbox. Get it as ``sandbox.filesystem``.
    Guest paths are absolute; the daemon checks them (``invalid_path``)."""

    def __init__(self, transport: "Transport", sandbox_id: str) -> None:
        """``sandbox_id`` is the URL-encoded id. Internal: use sandbox.filesystem."""
        self._t = transport
        self._base = f"/v1/sandboxes/{sandbox_id}/fs"

    def write(self, path: str, data: WriteData) -> WriteInfo:
        """Create or replace the file ``path`` with ``data`` (atomically, mode
        0644, missing parent folders created).

        Args:
            path: absolute guest path.
            data: text (written as UTF-8), bytes, or a binary file object, read
                in chunks and streamed (the caller keeps ownership and closes it).
        Returns:
            WriteInfo(path, size): the guest path and the bytes written.
        Raises:
            NotFoundError, SandboxError (e.g. ``is_a_directory``,
            ``body_too_large``, ``no_space``), TimeoutError, ConnectionError,
            TypeError for other data types, OSError when a file object fails.
        """
        if isinstance(data, str):
            body: Union[bytes, StreamBody] = data.encode("utf-8")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            body = bytes(data)
        elif hasattr(data, "read"):
            body = StreamBody(data, _stream_length(data))
        else:
            raise TypeError("data must be str, bytes or a binary file object")
        doc = self._t.request_json("PUT", self._base, query={"path": path}, body=body,
                                   ok=(200, 201))
        return WriteInfo.from_json(doc, path)

    def upload(self, local_path: LocalPath, remote_path: str) -> WriteInfo:
        """Upload the local file ``local_path`` to the guest path
        ``remote_path``, streamed in chunks (memory stays flat whatever the
        size). Returns WriteInfo(remote path, size). Raises OSError when the
        local file cannot be read, and the errors of :meth:`write`."""
        with open(local_path, "rb") as f:
            return self.write(remote_path, f)

    @overload
    def read(self, path: str, format: Literal["text"] = "text") -> str: ...
    @overload
    def read(self, path: str, format: Literal["bytes"]) -> bytes: ...
    @overload
    def read(self, path: str, format: Literal["stream"]) -> Iterator[bytes]: ...

    def read(self, path: str, format: str = "text") -> Union[str, bytes, Iterator[bytes]]:
        """Read the guest file ``path``.

        Args:
            path: absolute guest path.
            format: ``"text"`` (default: a str, UTF-8, invalid bytes become
                U+FFFD), ``"bytes"``, or ``"stream"``: an iterator of byte chunks
                that downloads as it is consumed (close it to stop early).
        Raises:
            NotFoundError (``file_not_found``), SandboxError (``is_a_directory``,
            ``permission_denied``), TimeoutError, ConnectionError (also when
            the answer is cut short), ValueError for an unknown format.
        """
        if format == "stream":
            return self._chunks(path)
        if format not in ("text", "bytes"):
            raise ValueError("format must be 'text', 'bytes' or 'stream'")
        data = b"".join(self._chunks(path))
        return data if format == "bytes" else data.decode("utf-8", errors="replace")

    def _chunks(self, path: str) -> Generator[bytes, None, None]:
        """Yield the file's bytes in chunks of at most CHUNK_SIZE as they arrive;
        the request is sent when iteration starts."""
        what = f"GET {self._base}"
        with self._t.open("GET", self._base, query={"path": path},
                          headers={"Accept": "application/octet-stream"}) as resp:
            expected = resp.getheader("Content-Length")
            got = 0
            while True:
                try:
                    block = resp.read(CHUNK_SIZE)
                except socket.timeout as e:
                    raise _client_error(e, what) from None
                except (OSError, http.client.HTTPException) as e:
                    raise ConnectionError(f"download of {path} cut short after {got} bytes: {e}",
                                          "connection_failed", resp.status) from None
                if not block:
                    break
                got += len(block)
                yield block
            if expected is not None and expected.isdigit() and int(expected) != got:
                raise ConnectionError(f"download of {path} ended after {got} of {expected} bytes",
                                      "incomplete_transfer", resp.status)

    def download(self, remote_path: str, local_path: LocalPath) -> WriteInfo:
        """Download the guest file ``remote_path`` to the local file
        ``local_path``, streamed in chunks.

        When ``local_path`` is an existing directory the file goes into it
        under the guest file's name (as ``cp`` does). The bytes go to a
        temporary file in the destination's folder, renamed over the
        destination once complete (removed on failure). Returns
        WriteInfo(local path, size). Raises as :meth:`read`, and OSError for
        local file errors."""
        dest = os.fspath(local_path)
        if os.path.isdir(dest):
            dest = os.path.join(dest, posixpath.basename(remote_path.rstrip("/")) or "download")
        folder = os.path.dirname(os.path.abspath(dest))
        stem = (os.path.basename(dest) or "download")[:200]  # stay under NAME_MAX
        tmp = os.path.join(folder, f".{stem}.{secrets.token_hex(6)}.part")
        # 0666 before the umask, like any new file (mkstemp would give 0600).
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                     0o666)
        size = 0
        try:
            with os.fdopen(fd, "wb") as out:
                chunks = self._chunks(remote_path)
                try:
                    for block in chunks:
                        out.write(block)
                        size += len(block)
                finally:
                    chunks.close()
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, dest)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return WriteInfo(path=dest, size=size)

    def stat(self, path: str) -> FileEntry:
        """The FileEntry of ``path``. Raises NotFoundError when it does not
        exist."""
        return FileEntry.from_json(self._t.request_json("GET", self._base + "/stat",
                                                        query={"path": path}))

    def exists(self, path: str) -> bool:
        """True when ``path`` exists (a stat that is not 404)."""
        try:
            self.stat(path)
            return True
        except NotFoundError:
            return False

    def list(self, path: str) -> DirListing:
        """List the folder ``path``: DirListing(path, entries sorted by name, at
        most 10000, truncated). Raises NotFoundError, SandboxError
        (``not_a_directory``)."""
        doc = self._t.request_json("GET", self._base + "/list", query={"path": path})
        return DirListing.from_json(doc, path)

    def mkdir(self, path: str, parents: bool = True) -> FileEntry:
        """Create the folder ``path`` (mode 0755; with ``parents`` also its
        missing parents, and an existing folder is fine). Returns its
        FileEntry. Raises SandboxError (``already_exists`` with
        ``parents=False``, ``not_a_directory``)."""
        return FileEntry.from_json(self._t.request_json(
            "POST", self._base + "/mkdir", json_body={"path": path, "parents": parents}))

    def remove(self, path: str, recursive: bool = False) -> None:
        """Remove the file or folder ``path`` (a non-empty folder only with
        ``recursive=True``). Raises NotFoundError, SandboxError
        (``directory_not_empty``)."""
        query = {"path": path}
        if recursive:
            query["recursive"] = "true"
        self._t.request_json("DELETE", self._base, query=query, ok=(200, 204),
                             gone_on_retry_ok=True)

