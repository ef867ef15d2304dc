"""Code contexts: persistent kernels in a sandbox (docs/api.md, "Code
contexts"). Get one with ``sandbox.create_code_context()``.

A context keeps its interpreter state (variables, imports) across
:meth:`CodeContext.run_code` calls, like a notebook, and answers each cell with
an :class:`~pandastack.Execution` carrying typed rich results. Requests on one
context run one at a time in the sandbox (a second waits its turn); a
:class:`CodeContext` object itself may be shared between threads.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Type

from . import _calls
from ._core import DEFAULT_RUN_DEADLINE_S, RUN_DEADLINE_MARGIN_S, STREAM_IDLE_TIMEOUT_S, \
    run_deadline
from ._handles import ContextHandle
from ._streams import CellStream
from .errors import PandaStackError
from .models import CodeContextInfo, Execution, Result

if TYPE_CHECKING:  # pragma: no cover
    from types import TracebackType

    from ._http import Transport

__all__ = ["CodeContext", "run_deadline", "STREAM_IDLE_TIMEOUT_S", "DEFAULT_RUN_DEADLINE_S",
           "RUN_DEADLINE_MARGIN_S"]


class CodeContext(ContextHandle):
    """One persistent kernel in a sandbox.

    Attributes:
        id: the context id (``ctx_...``).
        language: the kernel's language (``"python"``).
        sandbox_id: the sandbox it lives in.
        info: the context as the API described it.
    """

    def __init__(self, transport: "Transport", sandbox_id: str, context_id: str,
                 language: str = "python", info: Optional[CodeContextInfo] = None) -> None:
        """Internal: use ``sandbox.create_code_context()``."""
        super().__init__(sandbox_id, context_id, language, info)
        self._t = transport

    def run_code(self, code: str, timeout_seconds: Optional[float] = None, *,
                 on_stdout: Optional[Callable[[str], Any]] = None,
                 on_stderr: Optional[Callable[[str], Any]] = None,
                 on_result: Optional[Callable[[Result], Any]] = None) -> Execution:
        """Run ``code`` as one cell in this context and return its Execution.

        Args:
            code: the cell's source.
            timeout_seconds: limit of the cell in seconds (fractions allowed);
                at the limit the cell is interrupted (the context keeps its
                state) and the Execution's ``error`` says so. None: the
                daemon's default; 0: no limit.
            on_stdout / on_stderr: called with each chunk the cell prints
                (str), as it is printed; on_result: called with each Result
                (a chart, a table, the cell's value) as the kernel produces
                it.  With any of them the cell runs through the streaming
                route (Server-Sent Events); the callbacks run on the calling
                thread, and an exception from one cancels the cell (it is
                interrupted) and propagates.
        Returns:
            the Execution (results, stdout, stderr, error, exit_code, ...). A cell
            that raises is not an SDK error: see ``Execution.error``.
        Raises:
            NotFoundError (the sandbox or context is gone), SandboxError,
            TimeoutError (the API or the client-side deadline), AuthenticationError.
        """
        if on_stdout is None and on_stderr is None and on_result is None:
            return self._t.call(_calls.run_cell(self._t, self._path, code, timeout_seconds))
        call = _calls.run_cell_stream(self._t, self._path, code, timeout_seconds)
        return self._t.stream(call, CellStream(), {"stdout": on_stdout, "stderr": on_stderr,
                                                   "result": on_result})

    def interrupt(self) -> None:
        """Interrupt the cell running in this context (as Jupyter's interrupt:
        SIGINT to the kernel and its child processes). The cell ends with
        ``KeyboardInterrupt`` in its Execution's ``error``; variables stay.
        Nothing running is not an error.

        Raises:
            NotFoundError (the sandbox or context is gone), SandboxError,
            AuthenticationError.
        """
        self._t.call(_calls.interrupt_context(self._path))

    def restart(self) -> None:
        """Replace this context's kernel with a fresh one: its variables are
        lost, a running cell ends with an error, waiting cells run on the new
        kernel.

        Raises:
            NotFoundError (the sandbox or context is gone), SandboxError,
            AuthenticationError.
        """
        self._t.call(_calls.restart_context(self._path))

    def close(self) -> None:
        """Shut the kernel down and delete the context. Closing a context that
        is already gone (or whose sandbox is gone) is not an error."""
        self._t.call(_calls.close_context(self._path))

    def __enter__(self) -> "CodeContext":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException], tb: "Optional[TracebackType]") -> None:
        if exc is None:
            self.close()
            return
        try:  # do not hide the error that ended the block
            self.close()
        except PandaStackError:
            pass
