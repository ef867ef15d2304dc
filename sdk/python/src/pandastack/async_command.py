"""Background commands for asyncio programs: :class:`AsyncCommand`, the
handle ``await sandbox.exec(cmd, background=True)`` returns on an
:class:`~pandastack.AsyncSandbox`, with the surface of
:class:`~pandastack.Command` as coroutines.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

from . import _calls
from ._handles import CommandHandle, OutputFollower, wait_step
from .errors import TimeoutError
from .models import CommandInfo, CommandOutput, ExecResult

if TYPE_CHECKING:  # pragma: no cover
    from ._async_http import AsyncTransport

__all__ = ["AsyncCommand"]


class AsyncCommand(CommandHandle):
    """A background command in a sandbox, for asyncio (see
    :class:`~pandastack.Command`)."""

    def __init__(self, transport: "AsyncTransport", sandbox_id: str, info: CommandInfo) -> None:
        super().__init__(sandbox_id, info)
        self._t = transport

    async def output(self, stdout_offset: int = 0, stderr_offset: int = 0,
                     wait_seconds: int = 0, max_bytes: int = 0) -> CommandOutput:
        """What the command wrote so far, as :meth:`Command.output`."""
        out = await self._t.call(_calls.command_output(self._t, self._path, stdout_offset,
                                                       stderr_offset, wait_seconds, max_bytes))
        self.info = out.command
        return out

    async def wait(self, timeout: Optional[float] = None) -> ExecResult:
        """Wait for the end and return all output, as :meth:`Command.wait`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        f = OutputFollower()
        while not f.add(await self.output(f.stdout_offset, f.stderr_offset,
                                          wait_step(deadline))):
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"command {self.id} still runs after {timeout} s",
                                   code="client_timeout")
        return f.result()

    async def kill(self, signal: str = "SIGKILL") -> CommandInfo:
        """Send ``signal``, as :meth:`Command.kill`."""
        self.info = await self._t.call(_calls.kill_command(self._path, signal))
        return self.info

    async def send_stdin(self, data: Optional[str] = None, eof: bool = False) -> int:
        """Write to the command's stdin, as :meth:`Command.send_stdin`."""
        return await self._t.call(_calls.command_stdin(self._path, data, eof))
