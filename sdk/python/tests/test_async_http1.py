"""The asyncio client's HTTP/1.1 wire against broken and hostile answers (a
proxy in between may send anything): every cap and framing rule fails the
call with ConnectionError, never a hang, a crash or unbounded memory; the
legal variants (1xx answers, chunked bodies with extensions and trailers,
bodies up to the close, repeated fields) work. Plus keep-alive pooling and
a second event loop (https: test_tls.py)."""
import asyncio
import gc

import pytest
from conftest import KEY, SID
from fakeapi import Reply, raw, sandbox_json

from pandastack import AsyncSandbox, ConnectionError
from pandastack import _calls, _http1

SB = f"/v1/sandboxes/{SID}"
DOC = b'{"id": "%s", "status": "running"}' % SID.encode()


def answer(head, body=DOC):
    return head.replace(b"\n", b"\r\n") + b"\r\n" + body


async def connect(api):
    sb = await AsyncSandbox.connect(SID, api_key=KEY, api_url=api.url, max_retries=0,
                                    request_timeout=10)
    await sb.aclose()
    return sb


@pytest.mark.parametrize("name,data", [
    ("1xx answers are skipped", answer(
        b"HTTP/1.1 100 Continue\n\nHTTP/1.1 103 Early Hints\nLink: </a>\n\n"
        b"HTTP/1.1 200 OK\nContent-Length: %d\n" % len(DOC))),
    ("a body up to the close", answer(b"HTTP/1.1 200 OK\nConnection: close\n")),
    ("an HTTP/1.0 answer", answer(b"HTTP/1.0 200 OK\n")),
    ("no reason phrase", answer(b"HTTP/1.1 200\nContent-Length: %d\n" % len(DOC))),
    ("the same length twice", answer(b"HTTP/1.1 200 OK\nContent-Length: %d\n"
                                     b"Content-Length: %d\n" % (len(DOC), len(DOC)))),
    ("chunked with extensions and trailers", answer(
        b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n",
        b"5;name=value\r\n" + DOC[:5] + b"\r\n" + b"%X\r\n" % (len(DOC) - 5) + DOC[5:]
        + b"\r\n0\r\nX-Checksum: 1\r\n\r\n")),
    ("a header line at the cap", answer(b"HTTP/1.1 200 OK\nContent-Length: %d\nX: %s\n"
                                        % (len(DOC), b"a" * (_http1.HEAD_LINE_MAX - 5)))),
])
async def test_legal_answers_work(api, name, data):
    api.route("GET", SB, raw(data))
    sb = await connect(api)
    assert sb.id == SID and sb.status == "running", name


@pytest.mark.parametrize("name,data", [
    ("header line over the cap", answer(b"HTTP/1.1 200 OK\nX: %s\nContent-Length: 2\n"
                                        % (b"a" * _http1.HEAD_LINE_MAX), b"{}")),
    ("status line over the cap", b"HTTP/1.1 200 " + b"A" * (300 << 10)),
    ("head over the cap", answer(b"HTTP/1.1 200 OK\n" + b"X: %s\n" % (b"b" * 8000) * 10)),
    ("too many fields", answer(b"HTTP/1.1 200 OK\n" + b"X: y\n" * 200)),
    ("not HTTP/1", b"SSH-2.0-OpenSSH_9.2\r\n"),
    ("HTTP/2 status line", answer(b"HTTP/2 200 OK\nContent-Length: 2\n", b"{}")),
    ("four-digit status", answer(b"HTTP/1.1 2000 OK\nContent-Length: 2\n", b"{}")),
    ("folded header", answer(b"HTTP/1.1 200 OK\nX: a\n b\nContent-Length: 2\n", b"{}")),
    ("space before the colon", answer(b"HTTP/1.1 200 OK\nX : a\nContent-Length: 2\n", b"{}")),
    ("NUL in a value", answer(b"HTTP/1.1 200 OK\nX: a\0b\nContent-Length: 2\n", b"{}")),
    ("bad length", answer(b"HTTP/1.1 200 OK\nContent-Length: 2x\n", b"{}")),
    ("negative length", answer(b"HTTP/1.1 200 OK\nContent-Length: -2\n", b"{}")),
    ("two lengths", answer(b"HTTP/1.1 200 OK\nContent-Length: 2\nContent-Length: 3\n", b"{}")),
    ("huge length", answer(b"HTTP/1.1 200 OK\nContent-Length: %s\n" % (b"9" * 30), b"{}")),
    ("unknown transfer coding", answer(b"HTTP/1.1 200 OK\nTransfer-Encoding: gzip, chunked\n",
                                       b"2\r\n{}\r\n0\r\n\r\n")),
    ("bad chunk size", answer(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n",
                              b"zz\r\n{}\r\n0\r\n\r\n")),
    ("chunk size over 64 bits", answer(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n",
                                       b"%s\r\n{}\r\n" % (b"f" * 17))),
    ("chunk longer than its size", answer(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n",
                                          b"1\r\n{}\r\n0\r\n\r\n")),
    ("chunk-size line over the cap", answer(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n",
                                            b"2;" + b"e" * (_http1.CHUNK_LINE_MAX) + b"\r\n")),
    ("trailers over the cap", answer(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n",
                                     b"2\r\n{}\r\n0\r\n" + b"T: %s\r\n" % (b"t" * 8000) * 10)),
    ("chunked body cut short", answer(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n",
                                      b"10\r\n{}")),
    ("body shorter than its length", answer(b"HTTP/1.1 200 OK\nContent-Length: 100\n", b"{}")),
    ("too many 1xx answers", b"HTTP/1.1 100 Continue\r\n\r\n" * 20),
    ("switching protocols", b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n"),
    ("closed before any answer", b""),
    ("closed inside the head", b"HTTP/1.1 200 OK\r\nContent-Le"),
])
async def test_broken_answers_fail_cleanly(api, name, data):
    api.route("GET", SB, raw(data))
    with pytest.raises(ConnectionError) as ei:
        await connect(api)
    assert ei.value.code == "connection_failed", name
    assert len(api.calls("GET", SB)) == 1


async def test_repeated_fields_are_joined(api, asandbox):
    api.route("GET", SB, raw(answer(b"HTTP/1.1 200 OK\nContent-Length: %d\nX-A: 1\nx-a: 2\n"
                                    % len(DOC))))
    t = asandbox._t
    async with t.open(_calls.get_sandbox(SB)) as resp:
        assert resp.getheader("X-A") == "1, 2" and resp.reason == "OK"
        assert await resp.body.read_capped(1 << 20) == DOC


async def test_keep_alive_is_used_only_after_a_complete_answer(api, asandbox):
    api.route("GET", SB, Reply(200, sandbox_json(SID)))
    api.route("POST", SB + "/exec", [Reply(200, {"stdout": "a"}), raw(answer(
        b"HTTP/1.1 200 OK\nContent-Length: %d\nConnection: close\n" % len(b'{"stdout": "b"}'),
        b'{"stdout": "b"}'))])
    for _ in range(3):
        await asandbox.get_info()
    assert (await asandbox.exec("x")).stdout == "a"
    assert (await asandbox.exec("x")).stdout == "b"   # says close: not pooled
    await asandbox.get_info()
    ports = [r.handler.client_address[1] for r in api.requests]
    assert len(set(ports[:5])) == 1 and ports[5] != ports[4]
    assert asandbox._t.pool.opened == 2


async def test_concurrent_calls_open_connections_and_pool_them(api, asandbox):
    api.route("GET", SB, Reply(200, sandbox_json(SID)))
    await asyncio.gather(*(asandbox.get_info() for _ in range(8)))
    opened = asandbox._t.pool.opened
    assert 1 < opened <= 8
    await asyncio.gather(*(asandbox.get_info() for _ in range(opened)))
    assert asandbox._t.pool.opened == opened  # the second round reused them


async def test_idle_connections_expire(api, asandbox, monkeypatch):
    api.route("GET", SB, Reply(200, sandbox_json(SID)))
    await asandbox.get_info()
    monkeypatch.setattr(_http1, "POOL_IDLE_S", 0.0)
    await asandbox.get_info()
    assert asandbox._t.pool.opened == 2


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_one_sandbox_object_in_two_event_loops(api):
    """An idle connection of a finished event loop is not used by the next
    one (its file descriptor is left to the garbage collector: the warning
    this test ignores; aclose() before the loop ends avoids it)."""
    api.route("GET", SB, Reply(200, sandbox_json(SID)))
    sb = asyncio.run(AsyncSandbox.connect(SID, api_key=KEY, api_url=api.url))
    assert asyncio.run(sb.get_info()).id == SID

    async def last():
        await sb.get_info()
        await sb.aclose()
    asyncio.run(last())
    assert sb._t.pool.opened == 3  # one per loop
    assert len({r.handler.client_address for r in api.requests}) == 3
    gc.collect()
