"""Code contexts for asyncio programs: :class:`AsyncCodeContext` is
:class:`~pandastack.CodeContext` with awaitable methods. Get one with
``await sandbox.create_code_context()`` on an :class:`~pandastack.AsyncSandbox`.

Cells of one context run one at a time in the sandbox (a second waits its
turn); cells of different contexts or sandboxes run at the same time, so many
``run_code`` calls may be in flight from one event loop.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Type

from . import _calls
from ._handles import ContextHandle
from ._streams import CellStream
from .errors import PandaStackError
from .models import CodeContextInfo, Execution, Result

if TYPE_CHECKING:  # pragma: no cover
    from types import TracebackType

    from ._async_http import AsyncTransport

__all__ = ["AsyncCodeContext"]


class AsyncCodeContext(ContextHandle):
    """One persistent kernel in a sandbox, for asyncio.

    Attributes:
        id: the context id (``ctx_...``).
        language: the kernel's language (``"python"``).
        sandbox_id: the sandbox it lives in.
        info: the context as the API described it.
    """

    def __init__(self, transport: "AsyncTransport", sandbox_id: str, context_id: str,
                 language: str = "python", info: Optional[CodeContextInfo] = None) -> None:
        """Internal: use ``await sandbox.create_code_context()``."""
        super().__init__(sandbox_id, context_id, language, info)
        self._t = transport

    async def run_code(self, code: str, timeout_seconds: Optional[float] = None, *,
                       on_stdout: Optional[Callable[[str], Any]] = None,
                       on_stderr: Optional[Callable[[str], Any]] = None,
                       on_result: Optional[Callable[[Result], Any]] = None) -> Execution:
        """Run ``code`` as one cell and return its Execution, as
        :meth:`CodeContext.run_code`. The callbacks may be plain or coroutine
        functions (awaited, in order, before the next output is read); an
        exception from one cancels the cell and propagates. Cancelling the
        awaiting task closes the request (the daemon then interrupts the
        cell)."""
        if on_stdout is None and on_stderr is None and on_result is None:
            return await self._t.call(_calls.run_cell(self._t, self._path, code,
                                                      timeout_seconds))
        call = _calls.run_cell_stream(self._t, self._path, code, timeout_seconds)
        return await self._t.stream(call, CellStream(), {
            "stdout": on_stdout, "stderr": on_stderr, "result": on_result})

    async def interrupt(self) -> None:
        """Interrupt the running cell, as :meth:`CodeContext.interrupt`."""
        await self._t.call(_calls.interrupt_context(self._path))

    async def restart(self) -> None:
        """Replace the kernel with a fresh one, as :meth:`CodeContext.restart`."""
        await self._t.call(_calls.restart_context(self._path))

    async def close(self) -> None:
        """Shut the kernel down and delete the context; one already gone is
        not an error."""
        await self._t.call(_calls.close_context(self._path))

    async def __aenter__(self) -> "AsyncCodeContext":
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException], tb: "Optional[TracebackType]") -> None:
        if exc is None:
            await self.close()
            return
        try:  # do not hide the error that ended the block
            await self.close()
        except PandaStackError:
            pass
