"""``sandbox.filesystem`` of an :class:`~pandastack.AsyncSandbox`: the files of
a sandbox, for asyncio (docs/api.md, "Files"). The same operations as
:class:`~pandastack.Filesystem`, awaitable.

Uploads and downloads are streamed in chunks: a file of any size moves with
flat client memory. Local file I/O (reading an upload's file, writing a
download) runs in a worker thread, so a slow disk does not stall the event
loop.
"""
from __future__ import annotations

import asyncio
from typing import (IO, TYPE_CHECKING, AsyncIterable, AsyncIterator, List, Literal, Union,
                    overload)

from . import _calls
from ._core import Body, StreamBody, write_body
from ._download import LocalDownload, LocalPath
from .models import DirListing, FileEntry, WriteInfo

if TYPE_CHECKING:  # pragma: no cover
    from ._async_http import AsyncTransport

__all__ = ["AsyncFilesystem"]

AsyncWriteData = Union[str, bytes, bytearray, memoryview, IO[bytes], AsyncIterable[bytes]]


def _open_binary(path: LocalPath) -> IO[bytes]:
    return open(path, "rb")


class AsyncFilesystem:
    """Read and write files in one sandbox, for asyncio. Get it as
    ``sandbox.filesystem``. Guest paths are absolute."""

    def __init__(self, transport: "AsyncTransport", sandbox_id: str) -> None:
        """Internal: use sandbox.filesystem."""
        self._t = transport
        self._base = _calls.files_path(sandbox_id)

    async def write(self, path: str, data: AsyncWriteData) -> WriteInfo:
        """Create or replace the file ``path``, as :meth:`Filesystem.write`;
        ``data`` may also be an async iterable of bytes (sent with chunked
        encoding as it is produced). Returns WriteInfo(guest path, size)."""
        body: Body = StreamBody(data, None) if hasattr(data, "__aiter__") else write_body(data)
        return await self._t.call(_calls.write_file(self._base, path, body))

    async def upload(self, local_path: LocalPath, remote_path: str) -> WriteInfo:
        """Upload the local file ``local_path`` to ``remote_path``, streamed
        in chunks. Returns WriteInfo(guest path, size); raises OSError when the
        local file cannot be read, and the errors of :meth:`write`."""
        f = await asyncio.to_thread(_open_binary, local_path)
        try:
            return await self.write(remote_path, f)
        finally:
            await asyncio.to_thread(f.close)

    @overload
    async def read(self, path: str, format: Literal["text"] = "text") -> str: ...
    @overload
    async def read(self, path: str, format: Literal["bytes"]) -> bytes: ...
    @overload
    async def read(self, path: str, format: Literal["stream"]) -> AsyncIterator[bytes]: ...

    async def read(self, path: str,
                   format: str = "text") -> Union[str, bytes, AsyncIterator[bytes]]:
        """Read the guest file ``path``, as :meth:`Filesystem.read`:
        ``"text"`` (str), ``"bytes"``, or ``"stream"``: an async iterator of
        byte chunks that downloads as it is consumed (``await it.aclose()``
        to stop early)."""
        if format == "stream":
            return self._t.chunks(_calls.read_file(self._base, path), path)
        if format not in ("text", "bytes"):
            raise ValueError("format must be 'text', 'bytes' or 'stream'")
        chunks = self._t.chunks(_calls.read_file(self._base, path), path)
        parts: List[bytes] = []
        try:
            async for block in chunks:
                parts.append(block)
        finally:
            await chunks.aclose()
        data = b"".join(parts)
        return data if format == "bytes" else data.decode("utf-8", errors="replace")

    async def download(self, remote_path: str, local_path: LocalPath) -> WriteInfo:
        """Download the guest file ``remote_path`` to ``local_path``, as
        :meth:`Filesystem.download` (streamed to a temporary file, renamed
        when complete; an existing directory receives the file under its guest
        name). Returns WriteInfo(local path, size)."""
        target = await asyncio.to_thread(LocalDownload, remote_path, local_path)
        await asyncio.to_thread(target.open)
        try:
            chunks = self._t.chunks(_calls.read_file(self._base, remote_path), remote_path)
            try:
                async for block in chunks:
                    await asyncio.to_thread(target.write, block)
            finally:
                await chunks.aclose()
            return await asyncio.to_thread(target.commit)
        except BaseException:
            target.abort()
            raise

    async def stat(self, path: str) -> FileEntry:
        """The FileEntry of ``path``; NotFoundError when it does not exist."""
        return await self._t.call(_calls.stat_file(self._base, path))

    async def exists(self, path: str) -> bool:
        """True when ``path`` exists (a stat that is not 404)."""
        return await self._t.call(_calls.file_exists(self._base, path))

    async def list(self, path: str) -> DirListing:
        """List the folder ``path``, as :meth:`Filesystem.list`."""
        return await self._t.call(_calls.list_dir(self._base, path))

    async def mkdir(self, path: str, parents: bool = True) -> FileEntry:
        """Create the folder ``path``, as :meth:`Filesystem.mkdir`."""
        return await self._t.call(_calls.make_dir(self._base, path, parents))

    async def remove(self, path: str, recursive: bool = False) -> None:
        """Remove the file or folder ``path``, as :meth:`Filesystem.remove`."""
        await self._t.call(_calls.remove_file(self._base, path, recursive))
