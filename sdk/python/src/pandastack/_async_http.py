"""The asyncio HTTP transport of the SDK: it runs the API calls described in
``_calls`` with the policy of ``_core`` (the same retries, deadlines and
error answers as the blocking ``_http.Transport``) over HTTP/1.1 keep-alive
connections (``_http1``), standard library only.

One :class:`AsyncTransport` may serve many tasks of one event loop at once:
each request takes an idle pooled connection or opens one. Uploads are sent
in chunks (a file object is read in a worker thread), downloads and event
streams are read as they arrive, so memory stays flat whatever the size.
"""
from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Mapping, Optional, TypeVar

from ._calls import RAISE, Call
from ._core import (CHUNK_SIZE, ERROR_BODY_CAP, JSON_BODY_CAP, Attempts, Endpoint,
                    SourceReadError, StreamBody, check_download, client_error, cut_short,
                    decode_json_answer, encode_json, error_from_answer)
from ._http1 import Pool, Response, StaleConnection, exchange, request_head
from ._sse import aiter_events
from ._streams import CallbackError, Decoder, acall_user
from .errors import NotFoundError, PandaStackError

__all__ = ["AsyncTransport"]

T = TypeVar("T")
_NETWORK_ERRORS = (OSError, asyncio.TimeoutError)


class AsyncTransport(Endpoint):
    """The asyncio transport of one API endpoint: :class:`~._core.Endpoint`
    (its arguments, attributes and errors) plus a connection pool."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pool = Pool(self.host, self.port, self.ssl)

    def close(self) -> None:
        """Close the idle connections (a later call opens new ones)."""
        self.pool.close()

    @asynccontextmanager
    async def open(self, call: Call[Any]) -> AsyncIterator[Response]:
        """Send ``call``'s request and yield the answer once its status is a
        success (``call.ok``); its connection goes back to the pool when the
        ``async with`` block ends, if the body was read to its end.

        Raises PandaStackError subclasses for error answers and transport
        failures; the OSError of an upload source that could not be read."""
        body = encode_json(call.json_body) if call.json_body is not None else call.body
        t = self.deadline(call.timeout)
        head = request_head(call.method, self.url_path(call.path, call.query), self.host_header,
                            self.headers(call.headers, call.json_body is not None), body)
        what = f"{call.method} {call.path}"
        attempts = Attempts(call.method, not isinstance(body, StreamBody), self.max_retries)
        while True:
            conn = None
            resp: Optional[Response] = None
            try:
                try:
                    conn = await self.pool.acquire(t)
                except _NETWORK_ERRORS as e:  # nothing was sent
                    if not attempts.after_connect_failure(e):
                        raise client_error(e, what) from None
                if conn is not None:
                    try:
                        resp = await exchange(conn, call.method, head, body, t)
                    except SourceReadError as e:
                        raise e.cause from None
                    except StaleConnection as e:
                        if not attempts.idempotent:
                            raise client_error(e, what) from None
                        continue  # at once, on another connection: not a retry
                    except _NETWORK_ERRORS as e:
                        if not attempts.after_lost_answer(e):
                            raise client_error(e, what) from None
                if resp is not None:
                    if attempts.accepts(resp.status, call.ok, call.gone_on_retry_ok):
                        yield resp
                        return
                    if not attempts.after_status(resp.status):
                        try:
                            raw = await resp.body.read_capped(ERROR_BODY_CAP)
                        except _NETWORK_ERRORS:
                            raw = b""
                        raise error_from_answer(resp.status, raw)
            finally:
                if conn is not None:
                    self.pool.release(conn, resp)
            await asyncio.sleep(attempts.next())

    async def request_json(self, call: Call[Any]) -> Any:
        """Send ``call``'s request and return its decoded JSON answer (None for
        204, an empty body, or a 404 accepted by ``gone_on_retry_ok``); raises
        as ``Transport.request_json``."""
        what = f"{call.method} {call.path}"
        async with self.open(call) as resp:
            status = resp.status
            if status == 404:
                return None
            try:
                raw = await resp.body.read_capped(JSON_BODY_CAP + 1)
            except _NETWORK_ERRORS as e:
                raise cut_short(what, e, status) from None
        return decode_json_answer(raw, status, what)

    async def call(self, call: Call[T]) -> T:
        """Run ``call`` and return its decoded result (``call.missing`` when
        the API answered NotFoundError and the call allows it)."""
        try:
            doc = await self.request_json(call)
        except NotFoundError:
            if call.missing is RAISE:
                raise
            return call.missing  # type: ignore[no-any-return]
        return call.decode(doc)

    async def stream(self, call: Call[Any], decoder: Decoder[T],
                     callbacks: Mapping[str, Optional[Callable[[Any], Any]]]) -> T:
        """Run an event-stream call as ``Transport.stream`` does; a callback
        may be a coroutine function (it is awaited before the next event is
        read)."""
        what = f"{call.method} {call.path}"
        async with self.open(call) as resp:
            events = aiter_events(resp.body)
            try:
                async for ev in events:
                    emit = decoder.feed(ev)
                    if emit is not None:
                        cb = callbacks.get(emit[0])
                        if cb is not None:
                            await acall_user(cb, emit[1])
                    if decoder.done:
                        return decoder.result()
            except CallbackError as e:
                raise e.error  # the caller's own exception, unchanged
            except PandaStackError:
                raise  # our TimeoutError is also an OSError: keep it as it is
            except _NETWORK_ERRORS as e:
                raise cut_short(what, e, resp.status) from None
            finally:
                await events.aclose()
            raise decoder.ended_early(what, resp.status)

    async def chunks(self, call: Call[Any], label: str) -> AsyncGenerator[bytes, None]:
        """Yield a download's bytes in chunks of at most CHUNK_SIZE as they
        arrive, as ``Transport.chunks`` does; the request is sent when
        iteration starts. Close the iterator (``await it.aclose()``) to stop
        early."""
        what = f"{call.method} {call.path}"
        async with self.open(call) as resp:
            expected = resp.getheader("Content-Length")
            got = 0
            while True:
                try:
                    block = await resp.body.read(CHUNK_SIZE)
                except _NETWORK_ERRORS as e:
                    raise cut_short(f"{what}: download of {label} after {got} bytes", e,
                                    resp.status) from None
                if not block:
                    break
                got += len(block)
                yield block
            check_download(label, expected, got, resp.status)
