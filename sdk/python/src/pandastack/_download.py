"""The local side of a download, shared by ``Filesystem.download`` and
``AsyncFilesystem.download``: the bytes go to a temporary file in the
destination's folder, renamed over the destination once complete and removed
on failure, so a failed download never leaves a partial file under the
destination name. Blocking file I/O: the asyncio client runs these methods in
a worker thread.
"""
from __future__ import annotations

import os
import posixpath
import secrets
from typing import IO, Optional, Union

from .models import WriteInfo

LocalPath = Union[str, "os.PathLike[str]"]


class LocalDownload:
    """One download's destination file.

    Args:
        remote_path: the guest path (its last component names the file when
            ``local_path`` is an existing directory, as ``cp`` does).
        local_path: the destination file or directory.
    """

    def __init__(self, remote_path: str, local_path: LocalPath) -> None:
        dest = os.fspath(local_path)
        if os.path.isdir(dest):
            dest = os.path.join(dest, posixpath.basename(remote_path.rstrip("/")) or "download")
        self.dest = dest
        folder = os.path.dirname(os.path.abspath(dest))
        stem = (os.path.basename(dest) or "download")[:200]  # stay under NAME_MAX
        self.tmp = os.path.join(folder, f".{stem}.{secrets.token_hex(6)}.part")
        self.size = 0
        self._file: Optional[IO[bytes]] = None

    def open(self) -> None:
        """Create the temporary file (0666 before the umask, like any new file:
        mkstemp would give 0600). Raises OSError."""
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                     | getattr(os, "O_CLOEXEC", 0), 0o666)
        self._file = os.fdopen(fd, "wb")

    def write(self, block: bytes) -> None:
        """Append a block. Raises OSError."""
        assert self._file is not None
        self._file.write(block)
        self.size += len(block)

    def commit(self) -> WriteInfo:
        """Flush, sync and rename the file into place; returns WriteInfo(local
        path, size). Raises OSError (then call :meth:`abort`)."""
        assert self._file is not None
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
        os.replace(self.tmp, self.dest)
        return WriteInfo(path=self.dest, size=self.size)

    def abort(self) -> None:
        """Close and remove the temporary file; never raises."""
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None
        try:
            os.unlink(self.tmp)
        except OSError:
            pass
