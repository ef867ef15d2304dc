"""What the event streams of the API mean (docs/api.md): ``exec_stream``
(started, stdout, stderr, exit, error) and a context's ``run_code_stream``
(stdout, stderr, result, done, error), decoded into callback calls and the
final result. The blocking and the asyncio transports feed the same decoders
(``Transport.stream`` / ``AsyncTransport.stream``).

A decoder's :meth:`feed` returns the callback to call, as a pair
``(name, argument)``; the transport calls the caller's function of that name
through :func:`call_user` / :func:`acall_user`, which wrap the caller's own
exception in :class:`CallbackError` so that it is never mistaken for a network
failure and comes out unchanged.
"""
from __future__ import annotations

import inspect
import json
from typing import Any, Callable, Dict, Generic, List, Optional, Tuple, TypeVar

from ._sse import Event
from ._calls import checked
from .errors import ConnectionError, PandaStackError, error_for_code
from .models import ExecResult, Execution, Result

# (callback name, argument) or None.
Emit = Optional[Tuple[str, Any]]
T = TypeVar("T")


class CallbackError(Exception):
    """Carries an exception raised by a caller's callback through the stream's
    transport error handling."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(repr(error))
        self.error = error


def call_user(cb: Callable[[Any], Any], arg: Any) -> None:
    """Call a caller's callback; its exception comes out as CallbackError."""
    try:
        cb(arg)
    except Exception as e:  # KeyboardInterrupt and the like pass through as they are
        raise CallbackError(e) from e


async def acall_user(cb: Callable[[Any], Any], arg: Any) -> None:
    """Call a caller's callback, a plain function or a coroutine function
    (awaited); its exception comes out as CallbackError."""
    try:
        r = cb(arg)
        if inspect.isawaitable(r):
            await r
    except Exception as e:
        raise CallbackError(e) from e


def event_json(data: str) -> Dict[str, Any]:
    """Decode an event's JSON data; anything but an object gives {}."""
    try:
        doc = json.loads(data)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _stream_error(doc: Dict[str, Any], what: str) -> PandaStackError:
    e = doc.get("error")
    e = e if isinstance(e, dict) else {}
    code, msg = e.get("code"), e.get("message")
    return error_for_code(code if isinstance(code, str) else "stream_error",
                         msg if isinstance(msg, str) else f"the {what} stream failed")


class Decoder(Generic[T]):
    """What the decoders share: the output seen so far, ``done`` once the
    last event arrived, then :meth:`result`."""

    what = "event"

    def __init__(self) -> None:
        self.out: List[str] = []
        self.err: List[str] = []
        self.done = False
        self._value: Optional[T] = None

    def feed(self, ev: Event) -> Emit:
        """Take one event and return the callback to call, if any."""
        raise NotImplementedError

    def result(self) -> T:
        """The final result (once ``done``)."""
        assert self._value is not None
        return self._value

    def _finish(self, value: T) -> None:
        self.done = True
        self._value = value

    def _text(self, ev: Event, chunk: Any) -> Emit:
        if not isinstance(chunk, str):
            return None
        (self.out if ev.event == "stdout" else self.err).append(chunk)
        return (ev.event, chunk)

    def ended_early(self, what: str, status: Optional[int]) -> ConnectionError:
        """The error for a stream that ended before its last event."""
        return ConnectionError(f"{what}: the stream ended before the {self.what} did",
                               "connection_failed", status)


class ExecStream(Decoder[ExecResult]):
    """An exec_stream: emits ``("stdout", str)``, ``("stderr", str)`` and
    ``("start", pid)``; its value is the ExecResult with the whole output.

    Args:
        check: an exit code other than 0 raises CommandFailed.
    """

    what = "command"

    def __init__(self, check: bool) -> None:
        super().__init__()
        self.check = check

    def feed(self, ev: Event) -> Emit:
        """Take one event; raises CommandFailed (check) or the typed error of
        an ``error`` event."""
        doc = event_json(ev.data)
        if ev.event in ("stdout", "stderr"):
            return self._text(ev, doc.get("data"))
        if ev.event == "exit":
            result = ExecResult.from_json(doc, stdout="".join(self.out),
                                          stderr="".join(self.err))
            self._finish(checked(result, self.check))
        elif ev.event == "error":
            raise _stream_error(doc, "exec")
        elif ev.event == "started":
            pid = doc.get("pid")
            if isinstance(pid, int) and not isinstance(pid, bool):
                return ("start", pid)
        return None  # unknown events carry nothing the result needs


class CellStream(Decoder[Execution]):
    """A context's run_code_stream: emits ``("stdout", str)``, ``("stderr",
    str)`` and ``("result", Result)``; its value is the Execution."""

    what = "cell"

    def __init__(self) -> None:
        super().__init__()
        self.results: List[Any] = []

    def feed(self, ev: Event) -> Emit:
        """Take one event; raises the typed error of an ``error`` event."""
        doc = event_json(ev.data)
        if ev.event in ("stdout", "stderr"):
            return self._text(ev, doc.get("text"))
        if ev.event == "result":
            self.results.append(doc)
            return ("result", Result.from_json(doc))
        if ev.event == "done":
            self._finish(Execution.from_json(dict(doc, results=self.results,
                                                  stdout="".join(self.out),
                                                  stderr="".join(self.err))))
        elif ev.event == "error":
            raise _stream_error(doc, "run_code")
        return None
