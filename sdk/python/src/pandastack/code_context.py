"""Code contexts: persistent kernels in a sandbox (docs/api.md, "Code
contexts"). Get one with ``sandbox.create_code_context()``.

A context keeps its interpreter state (variables, imports) across
:meth:`CodeContext.run_code` calls, like a notebook, and answers each cell with
an :class:`~pandastack.Execution` carrying typed rich results. Requests on one
context run one at a time in the sandbox (a second waits its turn); a
:class:`CodeContext` object itself may be shared between threads.
"""
from __future__ import annotations

import http.client
import math
import socket
import urllib.parse
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Type

from ._http import _client_error
from ._sse import _call_user, _CallbackError, _event_json, iter_events
from .errors import ConnectionError, NotFoundError, PandaStackError, error_for_code
from .models import CodeContextInfo, Execution, Result

# Longest silence of a stream (a cell's or an exec's) before the client gives
# up, seconds (the daemon sends a keepalive comment every 15 s).
STREAM_IDLE_TIMEOUT_S = 45.0

if TYPE_CHECKING:  # pragma: no cover
    from types import TracebackType

    from ._http import Transport

__all__ = ["CodeContext", "run_deadline"]

# Client-side deadline of a run without its own limit, and the margin added to
# a run's limit (the daemon answers 504 at the limit plus its 30 s grace);
# seconds. The same values as the TypeScript SDK.
DEFAULT_RUN_DEADLINE_S = 600.0
RUN_DEADLINE_MARGIN_S = 60.0


def run_deadline(transport: "Transport", timeout_seconds: Optional[float]) -> Optional[float]:
    """The client-side deadline (seconds, per socket operation) of a call that
    runs code or a command for up to ``timeout_seconds``: 600 s when None (the
    daemon's default limit applies first), none when 0 (no limit), else the
    limit plus 60 s. Never below the transport's own timeout."""
    if timeout_seconds is not None and (
            isinstance(timeout_seconds, bool) or not isinstance(timeout_seconds, (int, float))
            or not math.isfinite(timeout_seconds) or timeout_seconds < 0):
        raise ValueError(f"timeout_seconds must be a finite number >= 0 (0: no limit), "
                         f"not {timeout_seconds!r}")
    if timeout_seconds is None:
        t = DEFAULT_RUN_DEADLINE_S
    elif timeout_seconds == 0:
        return None
    else:
        t = float(timeout_seconds) + RUN_DEADLINE_MARGIN_S
    if transport.timeout is None:
        return None
    return max(transport.timeout, t)


class CodeContext:
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
        self._t = transport
        self.sandbox_id = sandbox_id
        self.id = context_id
        self.language = language
        self.info = info or CodeContextInfo(id=context_id, language=language)
        self._path = (f"/v1/sandboxes/{urllib.parse.quote(sandbox_id, safe='')}"
                      f"/contexts/{urllib.parse.quote(context_id, safe='')}")

    def __repr__(self) -> str:
        return f"CodeContext(id={self.id!r}, language={self.language!r}, sandbox_id={self.sandbox_id!r})"

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
        body: Dict[str, Any] = {"code": code}
        if timeout_seconds is not None:
            body["timeout_seconds"] = timeout_seconds
        if on_stdout is not None or on_stderr is not None or on_result is not None:
            return self._run_streamed(body, timeout_seconds, on_stdout, on_stderr, on_result)
        doc = self._t.request_json("POST", self._path + "/run_code", json_body=body,
                                   timeout=run_deadline(self._t, timeout_seconds), ok=(200,))
        return Execution.from_json(doc)

    def _run_streamed(self, body: Dict[str, Any], timeout_seconds: Optional[float],
                      on_stdout: Optional[Callable[[str], Any]],
                      on_stderr: Optional[Callable[[str], Any]],
                      on_result: Optional[Callable[[Result], Any]]) -> Execution:
        """run_code through POST .../run_code_stream (docs/api.md): stdout,
        stderr and result events to the callbacks, then the Execution from
        the done event and everything seen."""
        run_deadline(self._t, timeout_seconds)  # the same argument checks
        idle = None if self._t.timeout is None else max(self._t.timeout, STREAM_IDLE_TIMEOUT_S)
        what = f"POST {self._path}/run_code_stream"
        out: List[str] = []
        err: List[str] = []
        results: List[Any] = []
        with self._t.open("POST", self._path + "/run_code_stream", json_body=body,
                          timeout=idle, headers={"Accept": "text/event-stream"}) as resp:
            try:
                for ev in iter_events(resp):
                    doc = _event_json(ev.data)
                    if ev.event in ("stdout", "stderr"):
                        chunk = doc.get("text")
                        if not isinstance(chunk, str):
                            continue
                        (out if ev.event == "stdout" else err).append(chunk)
                        cb = on_stdout if ev.event == "stdout" else on_stderr
                        if cb is not None:
                            _call_user(cb, chunk)
                    elif ev.event == "result":
                        results.append(doc)
                        if on_result is not None:
                            _call_user(on_result, Result.from_json(doc))
                    elif ev.event == "done":
                        doc = dict(doc, results=results, stdout="".join(out),
                                   stderr="".join(err))
                        return Execution.from_json(doc)
                    elif ev.event == "error":
                        e = doc.get("error")
                        e = e if isinstance(e, dict) else {}
                        code, msg = e.get("code"), e.get("message")
                        raise error_for_code(
                            code if isinstance(code, str) else "stream_error",
                            msg if isinstance(msg, str) else "the run_code stream failed")
                    # Unknown events carry nothing the Execution needs.
            except _CallbackError as e:
                raise e.error  # the caller's own exception, unchanged
            except PandaStackError:
                raise
            except socket.timeout as e:
                raise _client_error(e, what) from None
            except (OSError, http.client.HTTPException) as e:
                raise ConnectionError(f"{what}: stream cut short: {e}", "connection_failed",
                                      resp.status) from None
        raise ConnectionError(f"{what}: the stream ended before the cell did",
                              "connection_failed", None)

    def interrupt(self) -> None:
        """Interrupt the cell running in this context (as Jupyter's interrupt:
        SIGINT to the kernel and its child processes). The cell ends with
        ``KeyboardInterrupt`` in its Execution's ``error``; variables stay.
        Nothing running is not an error.

        Raises:
            NotFoundError (the sandbox or context is gone), SandboxError,
            AuthenticationError.
        """
        self._t.request_json("POST", self._path + "/interrupt", json_body={}, ok=(200, 204))

    def restart(self) -> None:
        """Replace this context's kernel with a fresh one: its variables are
        lost, a running cell ends with an error, waiting cells run on the new
        kernel.

        Raises:
            NotFoundError (the sandbox or context is gone), SandboxError,
            AuthenticationError.
        """
        self._t.request_json("POST", self._path + "/restart", json_body={}, ok=(200, 204))

    def close(self) -> None:
        """Shut the kernel down and delete the context. Closing a context that
        is already gone (or whose sandbox is gone) is not an error."""
        try:
            self._t.request_json("DELETE", self._path, ok=(200, 204), gone_on_retry_ok=True)
        except NotFoundError:
            pass

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
