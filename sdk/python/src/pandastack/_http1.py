"""HTTP/1.1 on asyncio streams (RFC 9112), the wire of the asyncio client:
one request/answer exchange on a connection, the answer's body (Content-Length,
chunked, or up to the close), and a pool of idle keep-alive connections.

The daemon is trusted but a proxy in between may not be, so everything read is
capped: a status or header line over HEAD_LINE_MAX bytes, a head over
HEAD_MAX bytes or HEAD_FIELDS_MAX fields, a chunk-size line over CHUNK_LINE_MAX
bytes, a malformed length or chunk size, and more than INTERIM_MAX 1xx
answers raise :class:`WireError`. A broken answer is never reused: only a
connection whose answer was read to its end, with keep-alive, goes back to
the pool.

Deadlines: every wait for the network (connect, each drain of a send, each
read) is bounded by the exchange's ``timeout`` in seconds (None: none) and
raises ``asyncio.TimeoutError`` (the built-in TimeoutError since Python 3.11).
Use from one event loop; a pool notices a new loop and drops the old loop's
connections.
"""
from __future__ import annotations

import asyncio
import re
import socket
import ssl
from typing import Any, Awaitable, Dict, List, Optional, Set, TypeVar

from ._core import CHUNK_SIZE, Body, SourceReadError, StreamBody, check_block, \
    check_source_end, tune_socket

HEAD_LINE_MAX = 16 << 10      # bytes of a status or header line
HEAD_MAX = 64 << 10           # bytes of a whole head (or of the trailers)
HEAD_FIELDS_MAX = 128         # header fields in a head (or trailers)
CHUNK_LINE_MAX = 4 << 10      # bytes of a chunk-size line, extensions included
INTERIM_MAX = 8               # 1xx answers skipped before the final one
STREAM_LIMIT = 256 << 10      # bytes asyncio buffers per connection (x2) before pausing
POOL_IDLE_S = 30.0            # an idle connection older than this is closed, not reused
POOL_MAX_IDLE = 16            # idle connections kept per pool

T = TypeVar("T")

_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([^\r\n]*))?\r?\n\Z")
_FIELD_NAME = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}\Z")
_DIGITS = re.compile(r"[0-9]{1,19}\Z")
_CONTROL = re.compile("[\x00-\x1f\x7f]")


class WireError(OSError):
    """The answer broke HTTP/1.1 (a malformed or over-cap head, length or
    chunk) or the connection ended before the answer was complete."""


class EmptyAnswer(WireError):
    """The connection closed (or was reset) before any byte of an answer."""


class StaleConnection(WireError):
    """A reused keep-alive connection closed before any byte of the answer:
    the server had dropped it while it was idle, so the request most likely
    never reached it."""


async def timed(aw: Awaitable[T], timeout: Optional[float]) -> T:
    """Await ``aw`` for at most ``timeout`` seconds (None: no limit); raises
    asyncio.TimeoutError when it passes (``aw`` is cancelled)."""
    if timeout is None:
        return await aw
    if hasattr(asyncio, "timeout"):  # Python 3.11+
        async with asyncio.timeout(timeout):
            return await aw
    return await asyncio.wait_for(aw, timeout)


class Connection:
    """One TCP (or TLS) connection to the API. ``exchanges`` counts the
    answers read on it (more than 0: it is a reused keep-alive connection);
    ``broken`` is True from the start of an exchange until its request was
    completely sent."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.exchanges = 0
        self.broken = False
        self.idle_since = 0.0

    @classmethod
    async def open(cls, host: str, port: int, ssl_ctx: Optional[ssl.SSLContext],
                   timeout: Optional[float]) -> "Connection":
        """Connect (and do the TLS handshake when ``ssl_ctx``), within
        ``timeout`` seconds. Raises OSError (ssl.SSLError included) or
        asyncio.TimeoutError."""
        reader, writer = await timed(asyncio.open_connection(
            host, port, ssl=ssl_ctx, server_hostname=host if ssl_ctx is not None else None,
            limit=STREAM_LIMIT), timeout)
        tune_socket(writer.get_extra_info("socket"))
        return cls(reader, writer)

    def reusable_at(self, now: float) -> bool:
        """True when the idle connection may carry another request: it was
        not closed by either side and has been idle under POOL_IDLE_S."""
        return (not self.broken and not self.writer.is_closing() and not self.reader.at_eof()
                and self.reader.exception() is None and now - self.idle_since < POOL_IDLE_S)

    def close(self) -> None:
        """Close at once, without waiting (safe in a cancelled task). A
        connection of an event loop that was closed can only be shut down:
        its file descriptor goes when the garbage collector takes it."""
        try:
            self.writer.transport.abort()
        except RuntimeError:
            sock = self.writer.get_extra_info("socket")
            try:
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    async def read_line(self, cap: int, timeout: Optional[float]) -> bytes:
        """One line with its ending; WireError when it is over ``cap`` bytes or
        the connection ends first (EmptyAnswer when nothing came at all)."""
        try:
            line = await timed(self.reader.readuntil(b"\n"), timeout)
        except asyncio.LimitOverrunError:
            raise WireError(f"a line of the answer is over {cap} bytes") from None
        except asyncio.IncompleteReadError as e:
            if not e.partial:
                raise EmptyAnswer("the connection closed before the answer") from None
            raise WireError("the connection closed inside the answer's head") from None
        if len(line) > cap:
            raise WireError(f"a line of the answer is over {cap} bytes")
        return line


# ---- the answer ---------------------------------------------------------------

async def _read_fields(conn: Connection, timeout: Optional[float]) -> Dict[str, str]:
    """Header (or trailer) lines up to the empty line: lower-case names,
    repeated fields joined with ", "."""
    fields: Dict[str, str] = {}
    size = count = 0
    while True:
        line = await conn.read_line(HEAD_LINE_MAX, timeout)
        size += len(line)
        if size > HEAD_MAX:
            raise WireError(f"a header block of the answer is over {HEAD_MAX} bytes")
        if line in (b"\r\n", b"\n"):
            return fields
        count += 1
        if count > HEAD_FIELDS_MAX:
            raise WireError(f"a header block of the answer has over {HEAD_FIELDS_MAX} fields")
        name, sep, value = line.rstrip(b"\r\n").partition(b":")
        value = value.strip(b" \t")
        if not sep or not _FIELD_NAME.match(name) or _BAD_VALUE.search(value):
            raise WireError(f"malformed header line {line[:80]!r}")  # obs-fold included
        key = name.decode("ascii").lower()
        text = value.decode("latin-1")
        fields[key] = f"{fields[key]}, {text}" if key in fields else text


class Response:
    """An answer's status and head; ``body`` reads the rest.

    Attributes:
        status: the status code. reason: the reason phrase.
        headers: lower-case names to values (repeated fields joined with ", ").
        keep_alive: the connection may carry another request once the body
            was read to its end.
        body: the :class:`ResponseBody`.
    """

    def __init__(self, status: int, reason: str, headers: Dict[str, str], keep_alive: bool,
                 body: "ResponseBody") -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.keep_alive = keep_alive
        self.body = body

    def getheader(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """A header's value by name (any case), or ``default``."""
        return self.headers.get(name.lower(), default)


async def read_response(conn: Connection, method: str,
                        timeout: Optional[float], first_timeout: Optional[float]) -> Response:
    """Read the final answer's head (skipping 1xx answers) and set up its body.
    ``first_timeout`` bounds the wait for the first byte, ``timeout`` every
    later read. Raises WireError, OSError, asyncio.TimeoutError."""
    wait = first_timeout
    for _ in range(INTERIM_MAX + 1):
        line = await conn.read_line(HEAD_LINE_MAX, wait)
        wait = timeout
        m = _STATUS_LINE.match(line)
        if m is None:
            raise WireError(f"malformed status line {line[:80]!r}")
        status = int(m.group(2))
        headers = await _read_fields(conn, timeout)
        if status == 101 or status < 100:
            raise WireError(f"unexpected status {status}")
        if status >= 200:
            break
    else:
        raise WireError(f"over {INTERIM_MAX} interim (1xx) answers")
    reason = (m.group(3) or b"").decode("latin-1")
    tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    keep_alive = m.group(1) == b"1" and "close" not in tokens
    te = headers.get("transfer-encoding")
    cl = headers.get("content-length")
    if method == "HEAD" or status in (204, 304):
        mode, length = "length", 0
    elif te is not None:
        if [c.strip().lower() for c in te.split(",")] != ["chunked"]:
            raise WireError(f"unsupported transfer coding {te[:80]!r}")
        mode, length = "chunked", 0
        keep_alive = keep_alive and cl is None  # both framings: do not trust the connection
    elif cl is not None:
        values = {v.strip() for v in cl.split(",")}
        if len(values) != 1 or not _DIGITS.match(next(iter(values))):
            raise WireError(f"malformed Content-Length {cl[:80]!r}")
        mode, length = "length", int(values.pop())
    else:
        mode, length, keep_alive = "close", 0, False
    return Response(status, reason, headers, keep_alive, ResponseBody(conn, mode, length, timeout))


class ResponseBody:
    """An answer's body, decoded from its framing. ``complete`` turns True
    once its last byte (and a chunked body's trailers) was read.

    Args:
        conn: the connection. mode: ``"length"``, ``"chunked"`` or
            ``"close"`` (up to the end of the connection). length: the
            Content-Length. timeout: the deadline of each read in seconds.
    """

    def __init__(self, conn: Connection, mode: str, length: int,
                 timeout: Optional[float]) -> None:
        self._conn = conn
        self._mode = mode
        self._left = length          # bytes left: of the body, or of the current chunk
        self._timeout = timeout
        self._buf = bytearray()      # read ahead by readline
        self._scanned = 0            # bytes of _buf known to hold no newline
        self.complete = mode == "length" and length == 0

    async def _raw(self, n: int) -> bytes:
        """Up to ``n`` bytes of the body from the connection, b"" at its end."""
        if self.complete:
            return b""
        reader, t = self._conn.reader, self._timeout
        if self._mode == "chunked" and self._left == 0:
            line = await self._conn.read_line(CHUNK_LINE_MAX, t)
            size = line.split(b";", 1)[0].strip(b" \t\r\n")
            if not _HEX.match(size):
                raise WireError(f"malformed chunk size line {line[:80]!r}")
            self._left = int(size, 16)
            if self._left == 0:
                await _read_fields(self._conn, t)  # trailers, capped; dropped
                self.complete = True
                return b""
        if self._mode == "close":
            data = await timed(reader.read(n), t)
            self.complete = not data
            return data
        data = await timed(reader.read(min(n, self._left)), t)
        if not data:
            raise WireError(f"the connection closed with {self._left} bytes of the body left")
        self._left -= len(data)
        if self._left == 0:
            if self._mode == "length":
                self.complete = True
            elif await self._conn.read_line(CHUNK_LINE_MAX, t) not in (b"\r\n", b"\n"):
                raise WireError("a chunk is longer than its size")
        return data

    async def read(self, n: int = CHUNK_SIZE) -> bytes:
        """Up to ``n`` bytes (at least 1 until the end), b"" at the end."""
        if self._buf:
            data = bytes(self._buf[:n])
            del self._buf[:n]
            self._scanned = max(0, self._scanned - len(data))
            return data
        return await self._raw(n)

    async def readline(self, limit: int) -> bytes:
        """A line with its ``\\n``, or ``limit`` bytes when the line is longer,
        or what is left at the end (b"" once nothing is)."""
        while True:
            i = self._buf.find(b"\n", self._scanned, limit)
            if i >= 0:
                return self._take(i + 1)
            if len(self._buf) >= limit:
                return self._take(limit)
            self._scanned = len(self._buf)
            data = await self._raw(CHUNK_SIZE)
            if not data:
                return self._take(len(self._buf))
            self._buf += data

    def _take(self, n: int) -> bytes:
        data = bytes(self._buf[:n])
        del self._buf[:n]
        self._scanned = 0
        return data

    async def read_capped(self, cap: int) -> bytes:
        """The body up to ``cap`` bytes."""
        parts: List[bytes] = []
        got = 0
        while got < cap:
            block = await self.read(min(CHUNK_SIZE, cap - got))
            if not block:
                break
            parts.append(block)
            got += len(block)
        return b"".join(parts)


# ---- the request ----------------------------------------------------------------

def request_head(method: str, target: str, host: str, headers: Dict[str, str],
                 body: Body) -> bytes:
    """The request line and header block, with the body's framing
    (Content-Length, or chunked for a StreamBody of unknown length). Raises
    ValueError for a value a header cannot carry."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if isinstance(body, bytes):
        lines.append(f"Content-Length: {len(body)}")
    elif isinstance(body, StreamBody):
        lines.append("Transfer-Encoding: chunked" if body.length is None
                     else f"Content-Length: {body.length}")
    elif method in ("POST", "PUT"):
        lines.append("Content-Length: 0")
    if any(_CONTROL.search(line) for line in lines):
        raise ValueError("a request header or target carries a control character")
    text = "\r\n".join(lines) + "\r\n\r\n"
    return text.encode("ascii")


class _Source:
    """An upload source, read block by block: a binary file object (read in a
    worker thread, so a slow disk does not stall the event loop) or an async
    iterable of bytes. Its OSError comes out as SourceReadError."""

    def __init__(self, src: Any) -> None:
        self._it = src.__aiter__() if hasattr(src, "__aiter__") else None
        self._file = src

    async def read(self) -> Any:
        """The next block (not checked yet), b"" at the end."""
        try:
            if self._it is None:
                block = await asyncio.to_thread(self._file.read, CHUNK_SIZE)
                return block if block is not None else b""
            while True:
                try:
                    block = await self._it.__anext__()
                except StopAsyncIteration:
                    return b""
                if block:
                    return block
        except OSError as e:
            raise SourceReadError(e) from e


async def _drain(conn: Connection, answer: "asyncio.Future[Response]",
                 timeout: Optional[float]) -> bool:
    """Wait until the connection took what was written; True when the
    server answered first (it may have stopped reading: an early 413)."""
    if answer.done():
        return True
    drain: "asyncio.Future[Any]" = asyncio.ensure_future(conn.writer.drain())
    waiting: "Set[asyncio.Future[Any]]" = {drain, answer}
    try:
        done, _ = await asyncio.wait(waiting, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not drain.done():
            drain.cancel()
    if drain in done:
        drain.result()  # a broken connection raises here
        return False
    if answer in done:
        return True
    raise asyncio.TimeoutError()


async def _send_body(conn: Connection, body: Body, answer: "asyncio.Future[Response]",
                     timeout: Optional[float]) -> bool:
    """Send the body in blocks of CHUNK_SIZE; False when the server answered
    before all of it went (the rest is not sent and the connection is not
    reused), True when all of it was written."""
    w = conn.writer
    if isinstance(body, bytes):
        view = memoryview(body)
        for i in range(0, len(body), CHUNK_SIZE):
            if i and await _drain(conn, answer, timeout):
                return False
            w.write(view[i:i + CHUNK_SIZE])
    elif isinstance(body, StreamBody):
        chunked = body.length is None
        src = _Source(body.fileobj)
        sent = 0
        while True:
            raw = await src.read()
            if not raw:
                break
            if sent and await _drain(conn, answer, timeout):
                return False
            block = check_block(raw, sent, body.length)
            sent += len(block)
            w.write(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
        check_source_end(sent, body.length)
        if chunked:
            w.write(b"0\r\n\r\n")
    await _drain(conn, answer, timeout)  # an answer now is not an early one
    return True


async def exchange(conn: Connection, method: str, head: bytes, body: Body,
                   timeout: Optional[float]) -> Response:
    """Send one request (``head`` from :func:`request_head`, then ``body``)
    and read its answer's head, watching for an answer that comes before the
    body was sent (it is returned, and the connection is not reused).

    Raises StaleConnection (a reused connection that closed before any byte of
    the answer), WireError / OSError (the connection broke; an error of the
    send only when no answer came), asyncio.TimeoutError, SourceReadError,
    TypeError / ValueError (a bad upload source). The caller owns ``conn``:
    it gives it back to the pool, which reuses it only after a complete
    answer."""
    conn.broken = True
    reused = conn.exchanges > 0
    conn.writer.write(head)
    # The answer is read beside the send; its first byte has no deadline of its
    # own while the body goes (a long upload), and `timeout` once it went.
    answer = asyncio.ensure_future(read_response(conn, method, timeout, None))
    try:
        send_error: Optional[BaseException] = None
        try:
            conn.broken = not await _send_body(conn, body, answer, timeout)
        except (OSError, asyncio.TimeoutError) as e:
            send_error = e  # the server may have answered already
        try:
            resp = await timed(asyncio.shield(answer), timeout)
        except (OSError, asyncio.TimeoutError) as e:
            if reused and isinstance(e, (EmptyAnswer, ConnectionResetError, BrokenPipeError)):
                raise StaleConnection(f"reused connection closed: {e}") from None
            if send_error is not None and not isinstance(e, asyncio.TimeoutError):
                raise send_error from None
            raise
        conn.exchanges += 1
        return resp
    finally:
        if not answer.done():
            answer.cancel()
        elif not answer.cancelled():
            answer.exception()  # retrieved: never "exception was never retrieved"


# ---- the pool ------------------------------------------------------------------------

class Pool:
    """Idle keep-alive connections to one host, most recently used first.

    Args:
        host, port: where to connect. ssl_ctx: TLS settings for https, or None.
    """

    def __init__(self, host: str, port: int, ssl_ctx: Optional[ssl.SSLContext]) -> None:
        self.host = host
        self.port = port
        self.ssl_ctx = ssl_ctx
        self._idle: List[Connection] = []
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self.opened = 0  # connections opened so far (for tests and diagnostics)

    async def acquire(self, timeout: Optional[float]) -> Connection:
        """An idle connection that is still usable, else a new one (raises
        as :meth:`Connection.open`)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self.close()  # connections of another (probably closed) loop
            self._loop = loop
        now = loop.time()
        while self._idle:
            conn = self._idle.pop()
            if conn.reusable_at(now):
                return conn
            conn.close()
        conn = await Connection.open(self.host, self.port, self.ssl_ctx, timeout)
        self.opened += 1
        return conn

    def release(self, conn: Connection, resp: Optional[Response]) -> None:
        """Give a connection back after an exchange: kept when its answer was
        read to the end with keep-alive and the pool has room, else closed."""
        if (resp is not None and resp.keep_alive and resp.body.complete and not conn.broken
                and len(self._idle) < POOL_MAX_IDLE and self._loop is not None
                and not self._loop.is_closed()):
            conn.idle_since = self._loop.time()
            self._idle.append(conn)
        else:
            conn.close()

    def close(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
