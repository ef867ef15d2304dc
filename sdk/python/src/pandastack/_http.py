"""The blocking HTTP transport of the SDK (``http.client``, standard library
only): it runs the API calls described in ``_calls`` with the policy of
``_core`` (retries, deadlines, error answers).

Every call opens its own connection, so one :class:`Transport` may be used from
many threads at once. Request bodies from files are sent in chunks and
downloads are read in chunks, so memory stays flat whatever the size.
"""
from __future__ import annotations

import http.client
import select
import time
from contextlib import contextmanager
from typing import Any, Callable, Dict, Generator, Iterator, Mapping, Optional, TypeVar

from ._calls import Call, RAISE
from ._core import (CHUNK_SIZE, DEFAULT_API_URL, ERROR_BODY_CAP, JSON_BODY_CAP, Attempts, Body,
                    Endpoint, SourceReadError, StreamBody, check_block, check_download,
                    check_source_end, client_error, cut_short, decode_json_answer, encode_json,
                    error_from_answer, is_timeout, tune_socket)
from ._sse import iter_events
from ._streams import CallbackError, Decoder, call_user
from .errors import NotFoundError, PandaStackError

__all__ = ["Transport", "DEFAULT_API_URL", "CHUNK_SIZE", "StreamBody"]

T = TypeVar("T")
_NETWORK_ERRORS = (OSError, http.client.HTTPException)


class Transport(Endpoint):
    """The blocking transport of one API endpoint: :class:`~._core.Endpoint`
    (its arguments, attributes and errors) plus the request machinery."""

    # ---- connection -----------------------------------------------------
    def _connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=self.ssl, blocksize=CHUNK_SIZE)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout,
                                          blocksize=CHUNK_SIZE)

    def _send(self, conn: http.client.HTTPConnection, method: str, target: str,
              body: Body, headers: Dict[str, str]) -> None:
        """Send one request; a StreamBody goes in chunks and stops early when the
        server already answered (e.g. 413 or 404 before reading the body)."""
        conn.putrequest(method, target, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        if isinstance(body, bytes):
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            return
        if body is None:
            if method in ("POST", "PUT"):
                conn.putheader("Content-Length", "0")
            conn.endheaders()
            return
        chunked = body.length is None
        if chunked:
            conn.putheader("Transfer-Encoding", "chunked")
        else:
            conn.putheader("Content-Length", str(body.length))
        conn.endheaders()
        sent = 0
        while True:
            try:
                raw = body.fileobj.read(CHUNK_SIZE)
            except OSError as e:  # the caller's file, not the network
                raise SourceReadError(e) from e
            if not raw:
                break
            block = check_block(raw, sent, body.length)
            sent += len(block)
            conn.send(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
            if self._answered_early(conn):
                return
        if chunked:
            conn.send(b"0\r\n\r\n")
        check_source_end(sent, body.length)

    @staticmethod
    def _answered_early(conn: http.client.HTTPConnection) -> bool:
        sock = conn.sock
        if sock is None:
            return False
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return bool(readable)

    # ---- the request loop -------------------------------------------------
    @contextmanager
    def open(self, call: Call[Any]) -> Iterator[http.client.HTTPResponse]:
        """Send ``call``'s request and yield the response once its status is
        a success (``call.ok``); the connection is closed when the ``with``
        block ends.

        Raises PandaStackError subclasses for error answers and transport
        failures; the OSError of an upload source that could not be read."""
        body = encode_json(call.json_body) if call.json_body is not None else call.body
        t = self.deadline(call.timeout)
        target = self.url_path(call.path, call.query)
        hdrs = self.headers(call.headers, call.json_body is not None)
        what = f"{call.method} {call.path}"
        attempts = Attempts(call.method, not isinstance(body, StreamBody), self.max_retries)
        while True:
            conn = self._connection(t)
            resp: Optional[http.client.HTTPResponse] = None
            retry = False
            try:
                try:
                    conn.connect()
                except OSError as e:  # socket.timeout included
                    if not attempts.after_connect_failure(e):
                        raise client_error(e, what) from None
                    retry = True
                if not retry:
                    tune_socket(conn.sock)
                    send_error: Optional[BaseException] = None
                    try:
                        self._send(conn, call.method, target, body, hdrs)
                    except SourceReadError as e:
                        raise e.cause from None
                    except _NETWORK_ERRORS as e:
                        send_error = e  # the server may have answered already
                    try:
                        resp = conn.getresponse()
                    except _NETWORK_ERRORS as e:
                        err = send_error or e
                        if not attempts.after_lost_answer(err):
                            raise client_error(err, what) from None
                        retry = True
                    if not retry:
                        if attempts.accepts(resp.status, call.ok, call.gone_on_retry_ok):
                            yield resp
                            return
                        if not attempts.after_status(resp.status):
                            try:  # a capped read: never blocks past t
                                raw = _read_capped(resp, ERROR_BODY_CAP)
                            except _NETWORK_ERRORS:
                                raw = b""
                            raise error_from_answer(resp.status, raw)
                        retry = True
            finally:
                # an answer with "Connection: close" holds the socket, not conn
                if resp is not None:
                    resp.close()
                conn.close()
            time.sleep(attempts.next())

    def request_json(self, call: Call[Any]) -> Any:
        """Send ``call``'s request and return its decoded JSON answer (None for
        204, an empty body, or a 404 accepted by ``gone_on_retry_ok``).

        Raises PandaStackError subclasses; a success whose body is not JSON
        raises PandaStackError (code ``invalid_response``), one over
        JSON_BODY_CAP bytes PandaStackError (code ``response_too_large``), one
        cut short ConnectionError."""
        what = f"{call.method} {call.path}"
        with self.open(call) as resp:
            status = resp.status
            if status == 404:
                return None
            try:
                raw = _read_capped(resp, JSON_BODY_CAP + 1)
            except _NETWORK_ERRORS as e:
                raise cut_short(what, e, status) from None
        return decode_json_answer(raw, status, what)

    def call(self, call: Call[T]) -> T:
        """Run ``call`` and return its decoded result (``call.missing`` when
        the API answered NotFoundError and the call allows it)."""
        try:
            doc = self.request_json(call)
        except NotFoundError:
            if call.missing is RAISE:
                raise
            return call.missing  # type: ignore[no-any-return]
        return call.decode(doc)

    def stream(self, call: Call[Any], decoder: Decoder[T],
               callbacks: Mapping[str, Optional[Callable[[Any], Any]]]) -> T:
        """Run an event-stream call: feed its events to ``decoder``
        (``_streams.ExecStream`` / ``CellStream``), call ``callbacks[name]``
        with what it emits (on the calling thread), and return the decoder's
        value once its last event arrived.

        Raises the decoder's errors, the caller's callback exception
        unchanged, TimeoutError after the idle limit, ConnectionError when the
        stream breaks or ends early."""
        what = f"{call.method} {call.path}"
        with self.open(call) as resp:
            try:
                for ev in iter_events(resp):
                    emit = decoder.feed(ev)
                    if emit is not None:
                        cb = callbacks.get(emit[0])
                        if cb is not None:
                            call_user(cb, emit[1])
                    if decoder.done:
                        return decoder.result()
            except CallbackError as e:
                raise e.error  # the caller's own exception, unchanged
            except PandaStackError:
                raise  # our TimeoutError is also an OSError: keep it as it is
            except _NETWORK_ERRORS as e:
                if is_timeout(e):
                    raise client_error(e, what) from None
                raise cut_short(what, e, resp.status) from None
            raise decoder.ended_early(what, resp.status)

    def chunks(self, call: Call[Any], label: str) -> Generator[bytes, None, None]:
        """Yield a download's bytes in chunks of at most CHUNK_SIZE as they
        arrive; the request is sent when iteration starts. ``label`` names the
        file in errors. Raises ConnectionError (``incomplete_transfer``) when
        fewer bytes than announced arrived."""
        what = f"{call.method} {call.path}"
        with self.open(call) as resp:
            expected = resp.getheader("Content-Length")
            got = 0
            while True:
                try:
                    block = resp.read(CHUNK_SIZE)
                except _NETWORK_ERRORS as e:
                    raise cut_short(f"{what}: download of {label} after {got} bytes", e,
                                    resp.status) from None
                if not block:
                    break
                got += len(block)
                yield block
            check_download(label, expected, got, resp.status)


def _read_capped(resp: http.client.HTTPResponse, cap: int) -> bytes:
    """Read the body up to ``cap`` bytes, in 64 KiB pieces (a single
    ``read(cap)`` would allocate ``cap`` bytes up front on Python 3.9)."""
    parts = []
    got = 0
    while got < cap:
        block = resp.read(min(64 << 10, cap - got))
        if not block:
            break
        parts.append(block)
        got += len(block)
    return b"".join(parts)
