"""Background commands (docs/api.md, "Background commands"): a shell command
started with ``sandbox.exec(cmd, background=True)`` that keeps running in the
sandbox (a dev server, a training job) while the program goes on. The
:class:`Command` handle reads its output so far, waits for its end, writes to
its stdin and kills it. No timeout applies unless one was asked for.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

from . import _calls
from ._handles import CommandHandle, OutputFollower, wait_step
from .errors import TimeoutError
from .models import CommandInfo, CommandOutput, ExecResult

if TYPE_CHECKING:  # pragma: no cover
    from ._http import Transport

__all__ = ["Command"]


class Command(CommandHandle):
    """A background command in a sandbox.

    Attributes:
        id: the command id (``cmd_...``).
        sandbox_id: the sandbox it runs in.
        info: the last CommandInfo the API returned (``running``, ``exit_code``...).
    """

    def __init__(self, transport: "Transport", sandbox_id: str, info: CommandInfo) -> None:
        super().__init__(sandbox_id, info)
        self._t = transport

    def output(self, stdout_offset: int = 0, stderr_offset: int = 0,
               wait_seconds: int = 0, max_bytes: int = 0) -> CommandOutput:
        """What the command wrote so far, from the given byte offsets (the
        guest keeps the newest 1 MiB of each stream). ``wait_seconds`` (at
        most 60): when nothing new was written yet and it runs, wait that
        long for output or its end. Updates ``info``. Raises NotFoundError
        (``command_not_found``) for a command the sandbox no longer keeps."""
        out = self._t.call(_calls.command_output(self._t, self._path, stdout_offset,
                                                 stderr_offset, wait_seconds, max_bytes))
        self.info = out.command
        return out

    def wait(self, timeout: Optional[float] = None) -> ExecResult:
        """Wait for the command to end and return all its output (from the
        start) with its exit code, as an ExecResult. ``timeout``: seconds
        (None: no limit); past it raises TimeoutError (the command keeps
        running)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        f = OutputFollower()
        while not f.add(self.output(f.stdout_offset, f.stderr_offset, wait_step(deadline))):
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"command {self.id} still runs after {timeout} s",
                                   code="client_timeout")
        return f.result()

    def kill(self, signal: str = "SIGKILL") -> CommandInfo:
        """Send ``signal`` (SIGKILL, the default, ends its whole process tree;
        or SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2). Returns its
        CommandInfo once it ended, or after 2 s if it has not."""
        self.info = self._t.call(_calls.kill_command(self._path, signal))
        return self.info

    def send_stdin(self, data: Optional[str] = None, eof: bool = False) -> int:
        """Write ``data`` to the command's stdin (and close it when ``eof``).
        Returns the bytes written."""
        return self._t.call(_calls.command_stdin(self._path, data, eof))
