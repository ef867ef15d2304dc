"""A small Server-Sent Events reader (the WHATWG "event stream" format, as the
daemon's ``exec_stream`` sends it: docs/api.md).

It reads lines from a binary file-like response, with caps: a line over
``MAX_LINE`` bytes or an event over ``MAX_EVENT`` bytes raises SandboxError
(code ``invalid_response``), so a broken or hostile server cannot make the
client buffer without bound. Comment lines (``: keepalive``) are skipped.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import IO, Any, Callable, Dict, Iterator, List

from .errors import PandaStackError

MAX_LINE = 8 << 20    # bytes per line
MAX_EVENT = 16 << 20  # bytes of data per event


@dataclass(frozen=True)
class Event:
    """One event: its ``event`` name (``"message"`` when none was given) and its
    ``data`` lines joined with ``\\n``."""

    event: str
    data: str


def iter_events(stream: IO[bytes]) -> Iterator[Event]:
    """Yield the events of ``stream`` until it ends.

    Args:
        stream: an object with ``readline(limit) -> bytes`` (e.g. an
            ``http.client.HTTPResponse``); the caller owns and closes it.
    Raises:
        PandaStackError: a line or an event is over its cap.
        OSError / socket.timeout: from the stream, unchanged.
    """
    name = ""
    data: List[str] = []
    size = 0
    while True:
        raw = stream.readline(MAX_LINE + 1)
        if not raw:
            return  # end of stream: an unfinished event is dropped (spec)
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            raise PandaStackError("event stream line over the cap", "invalid_response")
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if line == "":
            if data:
                yield Event(name or "message", "\n".join(data))
            name, data, size = "", [], 0
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            name = value
        elif field == "data":
            size += len(value) + 1
            if size > MAX_EVENT:
                raise PandaStackError("event stream event over the cap", "invalid_response")
            data.append(value)
        # "id" and "retry" carry nothing the SDK uses.


class _CallbackError(Exception):
    """Carries an exception raised by a caller's callback through the stream's
    transport error handling."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(repr(error))
        self.error = error


def _call_user(cb: Callable[[Any], Any], arg: Any) -> None:
    """Call a caller's callback; its exception comes out as _CallbackError."""
    try:
        cb(arg)
    except Exception as e:  # KeyboardInterrupt and the like pass through as they are
        raise _CallbackError(e) from e


def _event_json(data: str) -> Dict[str, Any]:
    """Decode an event's JSON data; anything but an object gives {}."""
    try:
        doc = json.loads(data)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}
