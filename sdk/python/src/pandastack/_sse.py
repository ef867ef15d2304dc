"""A small Server-Sent Events reader (the WHATWG "event stream" format, as the
daemon's ``exec_stream`` and ``run_code_stream`` send it: docs/api.md).

One parser (:class:`EventParser`, fed line by line) and two readers around
it: :func:`iter_events` over a blocking file-like body, :func:`aiter_events`
over an asyncio body. Both read lines with caps: a line over ``MAX_LINE``
bytes or an event over ``MAX_EVENT`` bytes raises PandaStackError (code
``invalid_response``), so a broken or hostile server cannot make the client
buffer without bound. Comment lines (``: keepalive``) are skipped.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any, AsyncGenerator, Iterator, List, Optional

from .errors import PandaStackError

MAX_LINE = 8 << 20    # bytes per line
MAX_EVENT = 16 << 20  # bytes of data per event


@dataclass(frozen=True)
class Event:
    """One event: its ``event`` name (``"message"`` when none was given) and its
    ``data`` lines joined with ``\\n``."""

    event: str
    data: str


class EventParser:
    """The event stream's state between lines."""

    def __init__(self) -> None:
        self._name = ""
        self._data: List[str] = []
        self._size = 0

    def line(self, raw: bytes) -> Optional[Event]:
        """Take one line as read with ``readline(MAX_LINE + 1)`` (its line
        ending included, if any) and return the event it completes, if any.

        Raises PandaStackError ``invalid_response`` when the line or the
        event is over its cap."""
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            raise PandaStackError("event stream line over the cap", "invalid_response")
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if line == "":
            ev = Event(self._name or "message", "\n".join(self._data)) if self._data else None
            self._name, self._data, self._size = "", [], 0
            return ev
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._name = value
        elif field == "data":
            self._size += len(value) + 1
            if self._size > MAX_EVENT:
                raise PandaStackError("event stream event over the cap", "invalid_response")
            self._data.append(value)
        # "id" and "retry" carry nothing the SDK uses.
        return None


def iter_events(stream: IO[bytes]) -> Iterator[Event]:
    """Yield the events of ``stream`` until it ends (an unfinished event at
    the end is dropped, as the spec says).

    Args:
        stream: an object with ``readline(limit) -> bytes`` (e.g. an
            ``http.client.HTTPResponse``); the caller owns and closes it.
    Raises:
        PandaStackError: a line or an event is over its cap.
        OSError / socket.timeout: from the stream, unchanged.
    """
    parser = EventParser()
    while True:
        raw = stream.readline(MAX_LINE + 1)
        if not raw:
            return
        ev = parser.line(raw)
        if ev is not None:
            yield ev


async def aiter_events(stream: Any) -> AsyncGenerator[Event, None]:
    """The same as :func:`iter_events` over an object with an awaitable
    ``readline(limit) -> bytes`` (``_http1.ResponseBody``)."""
    parser = EventParser()
    while True:
        raw = await stream.readline(MAX_LINE + 1)
        if not raw:
            return
        ev = parser.line(raw)
        if ev is not None:
            yield ev
