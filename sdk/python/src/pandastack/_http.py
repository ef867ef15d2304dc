"""HTTP transport of the SDK: one place that talks to the REST API.

Standard library only (``http.client``). Every call opens its own connection,
so one :class:`Transport` may be used from many threads at once.

Behaviour (docs/sdk-python.md, "Errors, retries and timeouts"):
- every request carries ``Authorization: Bearer <key>``;
- error answers ``{"error": {"code", "message"}}`` become typed errors
  (:func:`pandastack.errors.error_for_status`);
- retries, with a short bounded backoff, only where a retry cannot run an
  operation twice: a connection that could not be opened (nothing was sent), and
  for GET/DELETE also a connection lost before the answer and 502/503 answers;
  a POST or PUT whose request went out is never retried;
- ``timeout`` is the client-side deadline of each socket operation in seconds
  (connect, each send, each wait for bytes); when it passes the call raises
  :class:`pandastack.errors.TimeoutError` (code ``client_timeout``);
- request bodies from files are sent in chunks and downloads are read in chunks,
  so memory stays flat whatever the size.
"""
from __future__ import annotations

import http.client
import json
import os
import random
import select
import socket
import ssl
import time
import urllib.parse
from contextlib import contextmanager
from typing import IO, Any, Dict, Iterator, Mapping, Optional, Sequence, Tuple, Union

from . import __version__
from .errors import (AuthenticationError, ConnectionError, PandaStackError, TimeoutError,
                     error_for_status)

DEFAULT_API_URL = "http://127.0.0.1:8080"  # the daemon's default --listen (docs/api.md)
DEFAULT_TIMEOUT = 60.0        # seconds per socket operation
DEFAULT_MAX_RETRIES = 2       # extra attempts where a retry is safe
CHUNK_SIZE = 256 * 1024       # bytes per send/read of a streamed body
ERROR_BODY_CAP = 64 << 10     # bytes read of an error answer
JSON_BODY_CAP = 256 << 20     # bytes read of a JSON answer
_IDEMPOTENT = frozenset(("GET", "HEAD", "DELETE"))
_RETRY_STATUSES = frozenset((502, 503))

QueryValue = Union[str, int, float, bool]
Query = Optional[Union[Mapping[str, QueryValue], Sequence[Tuple[str, QueryValue]]]]


class StreamBody:
    """A request body read from a binary file object in chunks.

    Args:
        fileobj: an object with ``read(n) -> bytes``; the caller owns it and
            closes it.
        length: its size in bytes when known (sent as Content-Length), else None
            (the body is sent with chunked transfer encoding).
    """

    def __init__(self, fileobj: IO[bytes], length: Optional[int]) -> None:
        self.fileobj = fileobj
        self.length = length


Body = Union[None, bytes, StreamBody]


class _SourceReadError(Exception):
    """Reading the caller's upload source failed (wraps its OSError)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _client_error(exc: BaseException, what: str) -> PandaStackError:
    """The typed error for a transport failure (no HTTP answer)."""
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return TimeoutError(f"{what}: no answer within the client deadline", "client_timeout")
    return ConnectionError(f"{what}: {exc.__class__.__name__}: {exc}", "connection_failed")


def _tune_socket(conn: http.client.HTTPConnection) -> None:
    """Turn off Nagle's algorithm (http.client sends headers and body in two
    writes: with Nagle and delayed ACKs each request would wait ~40 ms) and turn
    on TCP keepalive (idle 30 s, then 3 probes 10 s apart) so that a call
    without a client deadline still notices a peer that vanished."""
    sock = conn.sock
    if sock is None:
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
            opt = getattr(socket, name, None)
            if opt is not None:
                sock.setsockopt(socket.IPPROTO_TCP, opt, value)
    except (OSError, AttributeError):
        pass  # best effort: not every socket (or platform) supports it


class Transport:
    """Connection settings and the request machinery for one API endpoint.

    Args:
        api_key: the API key (``pds_...``); falls back to ``PANDASTACK_API_KEY``.
        api_url: the API base URL; falls back to ``PANDASTACK_API_URL``, then
            ``http://127.0.0.1:8080`` (the daemon's default address). A path
            prefix is kept.
        timeout: client-side deadline of each socket operation, in seconds
            (None: wait for ever).
        max_retries: extra attempts where a retry is safe (0 disables them).
    Raises:
        AuthenticationError: no key was given and the environment has none
            (``missing_api_key``), or it has characters a header cannot carry
            (``invalid_api_key``).
        PandaStackError: ``invalid_config``: the URL is not
            http(s)://host[:port][/prefix], the timeout is not positive, or
            max_retries is not 0-10.
    """

    def __init__(self, api_key: Optional[str] = None, api_url: Optional[str] = None,
                 timeout: Optional[float] = DEFAULT_TIMEOUT,
                 max_retries: int = DEFAULT_MAX_RETRIES) -> None:
        key = api_key if api_key is not None else os.environ.get("PANDASTACK_API_KEY", "")
        key = key.strip()
        if not key:
            raise AuthenticationError(
                "no API key: pass api_key=... or set PANDASTACK_API_KEY", "missing_api_key")
        if not all(" " < c < "\x7f" for c in key):
            raise AuthenticationError("the API key has spaces, control or non-ASCII characters",
                                      "invalid_api_key")
        url = api_url if api_url is not None else os.environ.get("PANDASTACK_API_URL", "")
        url = url.strip() or DEFAULT_API_URL
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError:
            parts, port = None, None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise PandaStackError(f"api_url must be http(s)://host[:port][/prefix], got {url!r}",
                                  "invalid_config")
        if timeout is not None and not timeout > 0:
            raise PandaStackError("request_timeout must be a positive number of seconds or None",
                                  "invalid_config")
        if not 0 <= int(max_retries) <= 10:
            raise PandaStackError("max_retries must be from 0 to 10", "invalid_config")
        self.api_key = key
        self.api_url = url.rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = port
        self._prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.max_retries = int(max_retries)

    def __repr__(self) -> str:  # never shows the key
        return f"Transport(api_url={self.api_url!r})"

    # ---- connection -----------------------------------------------------
    def _connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=ssl.create_default_context(),
                                               blocksize=CHUNK_SIZE)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout,
                                          blocksize=CHUNK_SIZE)

    def url_path(self, path: str, query: Query = None) -> str:
        """The request target for an API path (``/v1/...``) and query pairs."""
        target = self._prefix + path
        if query:
            items = query.items() if isinstance(query, Mapping) else query
            pairs = [(k, ("true" if v else "false") if isinstance(v, bool) else str(v))
                     for k, v in items]
            target += "?" + urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)
        return target

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
                block = body.fileobj.read(CHUNK_SIZE)
            except OSError as e:  # the caller's file, not the network
                raise _SourceReadError(e) from e
            if not block:
                break
            if not isinstance(block, (bytes, bytearray, memoryview)):
                raise TypeError("upload source must be opened in binary mode")
            if body.length is not None and sent + len(block) > body.length:
                raise ValueError("upload source grew while it was being sent")
            sent += len(block)
            if chunked:
                conn.send(b"%x\r\n" % len(block) + bytes(block) + b"\r\n")
            else:
                conn.send(block)
            if self._answered_early(conn):
                return
        if chunked:
            conn.send(b"0\r\n\r\n")
        elif sent != body.length:
            raise ValueError(f"upload source ended after {sent} of {body.length} bytes")

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

    def _headers(self, extra: Optional[Mapping[str, str]], json_body: bool) -> Dict[str, str]:
        h = {
            "Authorization": f"Bearer {self.api_key}",
            "User-Agent": f"pandastack-python/{__version__}",
            "Accept": "application/json",
        }
        if json_body:
            h["Content-Type"] = "application/json"
        if extra:
            h.update(extra)
        return h

    @staticmethod
    def _raise_for(resp: http.client.HTTPResponse) -> None:
        """Read a capped error body and raise the typed error for it."""
        try:
            raw = _read_capped(resp, ERROR_BODY_CAP)
        except (OSError, http.client.HTTPException):
            raw = b""
        code: Optional[str] = None
        message: Optional[str] = None
        try:
            doc = json.loads(raw.decode("utf-8", errors="replace"))
            err = doc.get("error") if isinstance(doc, dict) else None
            if isinstance(err, dict):
                code = err.get("code") if isinstance(err.get("code"), str) else None
                message = err.get("message") if isinstance(err.get("message"), str) else None
        except ValueError:
            text = raw.decode("utf-8", errors="replace").strip()
            message = text[:500] or None
        raise error_for_status(resp.status, code, message)

    # ---- the request loop -------------------------------------------------
    @contextmanager
    def open(self, method: str, path: str, *, query: Query = None, body: Body = None,
             json_body: Any = None, headers: Optional[Mapping[str, str]] = None,
             timeout: Union[Optional[float], str] = "default",
             ok: Sequence[int] = (200,),
             gone_on_retry_ok: bool = False) -> Iterator[http.client.HTTPResponse]:
        """Send a request and yield the response once its status is in ``ok``.

        Args:
            method: HTTP method. path: API path starting with ``/``.
            query: query parameters. body: raw bytes or a :class:`StreamBody`.
            json_body: an object sent as JSON (instead of ``body``).
            headers: extra headers. timeout: per-operation deadline in seconds,
                None for none, ``"default"`` for the transport's.
            ok: the statuses that are a success.
            gone_on_retry_ok: (DELETE) a 404 on a retry is a success: the first
                attempt, whose answer was lost, already removed the thing.
        Yields:
            the ``http.client.HTTPResponse``, whose body the caller reads; the
            connection is closed when the ``with`` block ends.
        Raises:
            PandaStackError subclasses for error answers and transport failures.
        """
        if json_body is not None:
            body = json.dumps(json_body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        t = self.timeout if timeout == "default" else timeout
        assert not isinstance(t, str)
        target = self.url_path(path, query)
        hdrs = self._headers(headers, json_body is not None)
        what = f"{method} {path}"
        replayable = not isinstance(body, StreamBody)
        attempt = 0
        while True:
            conn = self._connection(t)
            retry = False
            try:
                try:
                    conn.connect()
                except OSError as e:  # socket.timeout included
                    # Nothing was sent: any method may be retried.
                    if attempt < self.max_retries:
                        retry = True
                    else:
                        raise _client_error(e, what) from None
                if not retry:
                    _tune_socket(conn)
                    send_error: Optional[BaseException] = None
                    try:
                        self._send(conn, method, target, body, hdrs)
                    except _SourceReadError as e:
                        raise e.cause from None
                    except (OSError, http.client.HTTPException) as e:
                        send_error = e  # the server may have answered already
                    try:
                        resp = conn.getresponse()
                    except (OSError, http.client.HTTPException) as e:
                        err = send_error or e
                        if (method in _IDEMPOTENT and replayable and attempt < self.max_retries
                                and not isinstance(err, socket.timeout)):
                            retry = True
                        else:
                            raise _client_error(err, what) from None
                    if not retry:
                        if resp.status in ok or (resp.status == 404 and attempt > 0
                                                 and gone_on_retry_ok):
                            yield resp
                            return
                        if (method in _IDEMPOTENT and resp.status in _RETRY_STATUSES
                                and replayable and attempt < self.max_retries):
                            retry = True
                        else:
                            self._raise_for(resp)  # reads a capped body, never blocks past t
            finally:
                conn.close()
            time.sleep(backoff_seconds(attempt))
            attempt += 1

    def request_json(self, method: str, path: str, *, query: Query = None,
                     json_body: Any = None, body: Body = None,
                     timeout: Union[Optional[float], str] = "default",
                     ok: Sequence[int] = (200, 201, 202, 204),
                     gone_on_retry_ok: bool = False) -> Any:
        """Send a request and return its decoded JSON answer (None for 204, an
        empty body, or a 404 accepted by ``gone_on_retry_ok``).

        Raises PandaStackError subclasses; a success whose body is not JSON
        raises PandaStackError (code ``invalid_response``), one over
        JSON_BODY_CAP bytes PandaStackError (code ``response_too_large``), one
        cut short ConnectionError."""
        what = f"{method} {path}"
        with self.open(method, path, query=query, json_body=json_body, body=body,
                       timeout=timeout, ok=ok, gone_on_retry_ok=gone_on_retry_ok) as resp:
            status = resp.status
            if status == 404:
                return None
            try:
                raw = _read_capped(resp, JSON_BODY_CAP + 1)
            except socket.timeout as e:
                raise _client_error(e, what) from None
            except (OSError, http.client.HTTPException) as e:
                raise ConnectionError(f"{what}: answer cut short: {e}", "connection_failed",
                                      status) from None
        if status == 204 or not raw.strip():
            return None
        if len(raw) > JSON_BODY_CAP:
            raise PandaStackError(f"{what}: the answer is over {JSON_BODY_CAP} bytes",
                                  "response_too_large", status)
        try:
            return json.loads(raw.decode("utf-8", errors="replace"))
        except ValueError:
            raise PandaStackError(f"{what}: the answer is not JSON", "invalid_response",
                                  status) from None


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


def backoff_seconds(attempt: int) -> float:
    """Sleep before retry number ``attempt`` (0-based), in seconds: 0.1-0.2,
    0.2-0.4, ... doubling, at most 2 s (jittered, as the TypeScript SDK)."""
    base: float = min(0.2 * (2 ** min(attempt, 10)), 2.0)
    return base * (0.5 + random.random() * 0.5)
