"""The Server-Sent Events reader: fields, comments, multi-line data, CRLF,
caps, and a stream that ends mid-event."""
import io

import pytest

from pandastack import PandaStackError
from pandastack import _sse
from pandastack._sse import Event, iter_events


def events(raw):
    return list(iter_events(io.BytesIO(raw)))


def test_fields_comments_and_defaults():
    raw = (b": keepalive\n\n"
           b"event: stdout\ndata: {\"data\": \"a\"}\n\n"
           b"data: no name\n\n"
           b"event: multi\ndata: one\ndata:two\r\ndata: \n\n"
           b"id: 7\nretry: 10\nevent: x\ndata\n\n"
           b"event: ignored-without-data\n\n")
    assert events(raw) == [Event("stdout", '{"data": "a"}'), Event("message", "no name"),
                           Event("multi", "one\ntwo\n"), Event("x", "")]


def test_unfinished_event_at_the_end_is_dropped():
    assert events(b"event: exit\ndata: {}\n") == []
    assert events(b"") == []


def test_invalid_utf8_becomes_replacement():
    assert events(b"data: \xff\n\n") == [Event("message", "\ufffd")]


def test_line_over_the_cap(monkeypatch):
    monkeypatch.setattr(_sse, "MAX_LINE", 100)
    with pytest.raises(PandaStackError) as ei:
        events(b"data: " + b"x" * 200 + b"\n\n")
    assert ei.value.code == "invalid_response"


def test_event_over_the_cap(monkeypatch):
    monkeypatch.setattr(_sse, "MAX_EVENT", 100)
    with pytest.raises(PandaStackError) as ei:
        events(b"data: " + b"x" * 60 + b"\n" + b"data: " + b"y" * 60 + b"\n\n")
    assert ei.value.code == "invalid_response"
