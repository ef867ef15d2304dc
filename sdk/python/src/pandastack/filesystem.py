"""``sandbox.filesystem``: files in the sandbox (docs/api.md, "Files").

Uploads and downloads are streamed in chunks of ``CHUNK_SIZE`` bytes: a file of
any size moves with flat client memory. A download goes to a temporary file next
to the destination and is renamed into place only when every byte arrived, so a
failed download never leaves a partial file under the destination name.

One :class:`Filesystem` may be used from several threads at once.
"""
from __future__ import annotations

from typing import IO, TYPE_CHECKING, Generator, Iterator, Literal, Union, overload

from . import _calls
from ._core import write_body
from ._download import LocalDownload, LocalPath
from .models import DirListing, FileEntry, WriteInfo

if TYPE_CHECKING:  # pragma: no cover
    from ._http import Transport

__all__ = ["Filesystem"]

WriteData = Union[str, bytes, bytearray, memoryview, IO[bytes]]


class Filesystem:
    """Read and write files in one sandbox. Get it as ``sandbox.filesystem``.
    Guest paths are absolute; the daemon checks them (``invalid_path``)."""

    def __init__(self, transport: "Transport", sandbox_id: str) -> None:
        """Internal: use sandbox.filesystem."""
        self._t = transport
        self._base = _calls.files_path(sandbox_id)

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
        return self._t.call(_calls.write_file(self._base, path, write_body(data)))

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
        """The file's bytes in chunks as they arrive; the request is sent when
        iteration starts."""
        return self._t.chunks(_calls.read_file(self._base, path), path)

    def download(self, remote_path: str, local_path: LocalPath) -> WriteInfo:
        """Download the guest file ``remote_path`` to the local file
        ``local_path``, streamed in chunks.

        When ``local_path`` is an existing directory the file goes into it
        under the guest file's name (as ``cp`` does). The bytes go to a
        temporary file in the destination's folder, renamed over the
        destination once complete (removed on failure). Returns
        WriteInfo(local path, size). Raises as :meth:`read`, and OSError for
        local file errors."""
        target = LocalDownload(remote_path, local_path)
        target.open()
        try:
            chunks = self._chunks(remote_path)
            try:
                for block in chunks:
                    target.write(block)
            finally:
                chunks.close()
            return target.commit()
        except BaseException:
            target.abort()
            raise

    def stat(self, path: str) -> FileEntry:
        """The FileEntry of ``path``. Raises NotFoundError when it does not
        exist."""
        return self._t.call(_calls.stat_file(self._base, path))

    def exists(self, path: str) -> bool:
        """True when ``path`` exists (a stat that is not 404)."""
        return self._t.call(_calls.file_exists(self._base, path))

    def list(self, path: str) -> DirListing:
        """List the folder ``path``: DirListing(path, entries sorted by name, at
        most 10000, truncated). Raises NotFoundError, SandboxError
        (``not_a_directory``)."""
        return self._t.call(_calls.list_dir(self._base, path))

    def mkdir(self, path: str, parents: bool = True) -> FileEntry:
        """Create the folder ``path`` (mode 0755; with ``parents`` also its
        missing parents, and an existing folder is fine). Returns its
        FileEntry. Raises SandboxError (``already_exists`` with
        ``parents=False``, ``not_a_directory``)."""
        return self._t.call(_calls.make_dir(self._base, path, parents))

    def remove(self, path: str, recursive: bool = False) -> None:
        """Remove the file or folder ``path`` (a non-empty folder only with
        ``recursive=True``). Raises NotFoundError, SandboxError
        (``directory_not_empty``)."""
        self._t.call(_calls.remove_file(self._base, path, recursive))
