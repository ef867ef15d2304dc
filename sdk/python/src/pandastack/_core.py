"""The transport-independent core of the SDK, shared by the blocking client
(``_http.Transport``) and the asyncio client (``_async_http.AsyncTransport``):
configuration, request building, error answers, the retry policy and the
client-side deadlines. Nothing here does I/O.

Policy (docs/sdk-python.md, "Errors, retries and timeouts"):
- every request carries ``Authorization: Bearer <key>``;
- error answers ``{"error": {"code", "message"}}`` become typed errors
  (:func:`pandastack.errors.error_for_status`);
- retries, with a short bounded backoff, only where a retry cannot run an
  operation twice: a connection that could not be opened (nothing was sent), and
  for GET/DELETE also a connection lost before the answer and 502/503 answers;
  a POST or PUT whose request went out is never retried;
- ``timeout`` is the client-side deadline of each socket operation in seconds
  (connect, each send, each wait for bytes); when it passes the call raises
  :class:`pandastack.errors.TimeoutError` (code ``client_timeout``).
"""
from __future__ import annotations

import asyncio
import builtins
import json
import math
import os
import random
import re
import socket
import ssl
import urllib.parse
from typing import IO, Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from . import __version__
from .errors import AuthenticationError, ConnectionError, PandaStackError, TimeoutError, \
    error_for_status

DEFAULT_API_URL = "http://127.0.0.1:8080"  # the daemon's default --listen (docs/api.md)
DEFAULT_TIMEOUT = 60.0        # seconds per socket operation
DEFAULT_MAX_RETRIES = 2       # extra attempts where a retry is safe
CHUNK_SIZE = 256 * 1024       # bytes per send/read of a streamed body
ERROR_BODY_CAP = 64 << 10     # bytes read of an error answer
JSON_BODY_CAP = 256 << 20     # bytes read of a JSON answer
IDEMPOTENT = frozenset(("GET", "HEAD", "DELETE"))
RETRY_STATUSES = frozenset((502, 503))

# Longest silence of a stream (a cell's or an exec's) before the client gives
# up, seconds (the daemon sends a keepalive comment every 15 s).
STREAM_IDLE_TIMEOUT_S = 45.0
# Client-side deadline of a run without its own limit, and the margin added to
# a run's limit (the daemon answers 504 at the limit plus its 30 s grace);
# seconds. The same values as the TypeScript SDK.
DEFAULT_RUN_DEADLINE_S = 600.0
RUN_DEADLINE_MARGIN_S = 60.0
# A create answers within the daemon's 30 s create deadline; wait a bit longer.
CREATE_TIMEOUT_S = 90.0

QueryValue = Union[str, int, float, bool]
Query = Optional[Union[Mapping[str, QueryValue], Sequence[Tuple[str, QueryValue]]]]
# What a call passes as its timeout: seconds, None (no deadline), or
# "default" (the endpoint's own).
TimeoutArg = Union[Optional[float], str]

# Characters a request target may not carry (RFC 9112 request-line; the same
# set http.client refuses).
_BAD_TARGET_CHARS = re.compile("[\x00-\x20\x7f]")


class StreamBody:
    """A request body read in chunks.

    Args:
        fileobj: a binary file object (``read(n) -> bytes``) or, for the
            asyncio client only, an async iterable of bytes; the caller owns it
            and closes it.
        length: its size in bytes when known (sent as Content-Length), else None
            (the body is sent with chunked transfer encoding).
    """

    def __init__(self, fileobj: Any, length: Optional[int]) -> None:
        self.fileobj = fileobj
        self.length = length


Body = Union[None, bytes, StreamBody]


class SourceReadError(Exception):
    """Reading the caller's upload source failed (wraps its OSError, which the
    transports re-raise unchanged: it is the caller's file, not the network)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause


def check_block(block: Any, sent: int, length: Optional[int]) -> bytes:
    """Check one block read from an upload source (``sent`` bytes went before
    it) and return it as bytes. Raises TypeError for a text-mode source,
    ValueError when the source grew past its announced ``length``."""
    if not isinstance(block, (bytes, bytearray, memoryview)):
        raise TypeError("upload source must be opened in binary mode")
    if length is not None and sent + len(block) > length:
        raise ValueError("upload source grew while it was being sent")
    return bytes(block)


def check_source_end(sent: int, length: Optional[int]) -> None:
    """Raise ValueError when a source announced ``length`` bytes but ended
    after ``sent``."""
    if length is not None and sent != length:
        raise ValueError(f"upload source ended after {sent} of {length} bytes")


def stream_length(f: IO[bytes]) -> Optional[int]:
    """Bytes left in a seekable file object, or None (then chunked encoding)."""
    try:
        if not f.seekable():
            return None
        pos = f.tell()
        end = f.seek(0, os.SEEK_END)
        f.seek(pos)
        return max(0, end - pos)
    except (OSError, AttributeError, ValueError):
        return None


def write_body(data: Any) -> Body:
    """The request body of a file write: text as UTF-8, bytes as they are, a
    binary file object as a StreamBody (Content-Length when seekable).
    Raises TypeError for anything else."""
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if hasattr(data, "read"):
        return StreamBody(data, stream_length(data))
    raise TypeError("data must be str, bytes or a binary file object")


def encode_json(obj: Any) -> bytes:
    """A JSON request body (UTF-8, no NaN)."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8")


def ssl_context(ca_file: Optional[str] = None) -> ssl.SSLContext:
    """The TLS settings of every https connection of both clients: hostname
    checks on, and the server's certificate checked against the PEM file of CA
    certificates ``ca_file`` alone (as curl's ``--cacert``: the system's store
    is then not used), or the system's CA store when ``ca_file`` is None
    (``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` override it).

    Raises PandaStackError ``invalid_config`` when ``ca_file`` cannot be read
    or holds no PEM certificate."""
    if ca_file is None:
        return ssl.create_default_context()
    try:
        return ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as e:
        raise PandaStackError(f"ca_file {ca_file!r} is not a readable PEM file of CA "
                              f"certificates: {e}", "invalid_config") from None


def tune_socket(sock: Optional[socket.socket]) -> None:
    """Turn off Nagle's algorithm (headers and body go in separate writes: with
    Nagle and delayed ACKs each request would wait ~40 ms) and turn on TCP
    keepalive (idle 30 s, then 3 probes 10 s apart) so that a call without a
    client deadline still notices a peer that vanished. Best effort."""
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
        pass  # not every socket (or platform) supports it


class Endpoint:
    """Connection settings of one API endpoint and the requests built for it.

    Args:
        api_key: the API key (``pds_...``); falls back to ``PANDASTACK_API_KEY``.
        api_url: the API base URL; falls back to ``PANDASTACK_API_URL``, then
            ``http://127.0.0.1:8080`` (the daemon's default address). A path
            prefix is kept.
        timeout: client-side deadline of each socket operation, in seconds
            (None: wait for ever).
        max_retries: extra attempts where a retry is safe (0 disables them).
        ca_file: for an https URL, the PEM file of the CA certificates that the
            server's certificate is checked against, instead of the system's
            store (e.g. a self-signed daemon's certificate); falls back to
            ``PANDASTACK_CA_FILE``, then the system's store. Read once, here.
    Raises:
        AuthenticationError: no key was given and the environment has none
            (``missing_api_key``), or it has characters a header cannot carry
            (``invalid_api_key``).
        PandaStackError: ``invalid_config``: the URL is not
            http(s)://host[:port][/prefix], the timeout is not positive,
            max_retries is not 0-10, or the CA file cannot be read.
    """

    def __init__(self, api_key: Optional[str] = None, api_url: Optional[str] = None,
                 timeout: Optional[float] = DEFAULT_TIMEOUT,
                 max_retries: int = DEFAULT_MAX_RETRIES,
                 ca_file: Optional[str] = None) -> None:
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
        if (parts is None or parts.scheme not in ("http", "https") or not parts.hostname
                or not parts.path.isascii() or _BAD_TARGET_CHARS.search(parts.path)):
            raise PandaStackError(f"api_url must be http(s)://host[:port][/prefix], got {url!r}",
                                  "invalid_config")
        if timeout is not None and not timeout > 0:
            raise PandaStackError("request_timeout must be a positive number of seconds or None",
                                  "invalid_config")
        if not 0 <= int(max_retries) <= 10:
            raise PandaStackError("max_retries must be from 0 to 10", "invalid_config")
        self.api_key = key
        self.api_url = url.rstrip("/")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = port if port is not None else (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.max_retries = int(max_retries)
        ca = ca_file if ca_file is not None else os.environ.get("PANDASTACK_CA_FILE", "")
        self.ca_file: Optional[str] = ca or None
        # One context per endpoint, shared by its connections (None for http).
        self.ssl: Optional[ssl.SSLContext] = ssl_context(self.ca_file) if self.https else None

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(api_url={self.api_url!r})"

    @property
    def host_header(self) -> str:
        """The Host header: the host (an IPv6 address in brackets), and the
        port when it is not the scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.https else 80
        return host if self.port == default else f"{host}:{self.port}"

    def url_path(self, path: str, query: Query = None) -> str:
        """The request target for an API path (``/v1/...``) and query pairs."""
        target = self.prefix + path
        if query:
            items = query.items() if isinstance(query, Mapping) else query
            pairs = [(k, ("true" if v else "false") if isinstance(v, bool) else str(v))
                     for k, v in items]
            target += "?" + urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)
        return target

    def headers(self, extra: Optional[Mapping[str, str]], json_body: bool) -> Dict[str, str]:
        """The headers of a request (authorization, user agent, accept, and the
        JSON content type when it has a JSON body), then ``extra``."""
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

    def deadline(self, timeout: TimeoutArg) -> Optional[float]:
        """A call's per-operation deadline in seconds: its own, or the
        endpoint's for ``"default"``."""
        t = self.timeout if timeout == "default" else timeout
        assert not isinstance(t, str)
        return t

    def stream_idle_deadline(self) -> Optional[float]:
        """The idle limit of an event stream: the endpoint's timeout, at least
        STREAM_IDLE_TIMEOUT_S; None when the endpoint has no deadline."""
        return None if self.timeout is None else max(self.timeout, STREAM_IDLE_TIMEOUT_S)

    def create_deadline(self) -> Optional[float]:
        """The deadline of a create (sandbox or context): at least
        CREATE_TIMEOUT_S."""
        return None if self.timeout is None else max(self.timeout, CREATE_TIMEOUT_S)


def run_deadline(endpoint: Endpoint, timeout_seconds: Optional[float]) -> Optional[float]:
    """The client-side deadline (seconds, per socket operation) of a call that
    runs code or a command for up to ``timeout_seconds``: 600 s when None (the
    daemon's default limit applies first), none when 0 (no limit), else the
    limit plus 60 s. Never below the endpoint's own timeout.

    Raises ValueError when ``timeout_seconds`` is not a finite number >= 0."""
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
    if endpoint.timeout is None:
        return None
    return max(endpoint.timeout, t)


def is_timeout(exc: BaseException) -> bool:
    """True for a deadline that passed in the socket layer or in asyncio."""
    return isinstance(exc, (socket.timeout, asyncio.TimeoutError, builtins.TimeoutError))


def client_error(exc: BaseException, what: str) -> PandaStackError:
    """The typed error for a transport failure (no HTTP answer): TimeoutError
    (``client_timeout``) for a deadline, else ConnectionError
    (``connection_failed``), whose message says how to trust a certificate
    that failed its check."""
    if is_timeout(exc):
        return TimeoutError(f"{what}: no answer within the client deadline", "client_timeout")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return ConnectionError(f"{what}: the server's TLS certificate is not trusted "
                               f"({exc.verify_message or exc}): pass ca_file= or set "
                               f"PANDASTACK_CA_FILE to the PEM file of its CA",
                               "connection_failed")
    return ConnectionError(f"{what}: {exc.__class__.__name__}: {exc}", "connection_failed")


def cut_short(what: str, exc: BaseException, status: Optional[int]) -> PandaStackError:
    """The typed error for an answer that broke after its status arrived:
    TimeoutError for a deadline, else ConnectionError ``connection_failed``."""
    if is_timeout(exc):
        return client_error(exc, what)
    return ConnectionError(f"{what}: answer cut short: {exc}", "connection_failed", status)


def error_from_answer(status: int, raw: bytes) -> PandaStackError:
    """The typed error for an error answer whose (capped) body is ``raw``:
    the API's ``{"error": {"code", "message"}}``, else the body's start as the
    message. Never raises."""
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
    return error_for_status(status, code, message)


def decode_json_answer(raw: bytes, status: int, what: str) -> Any:
    """The decoded JSON of a success answer read with a cap of
    JSON_BODY_CAP + 1 bytes: None for 204 or an empty body. Raises
    PandaStackError ``response_too_large`` over the cap, ``invalid_response``
    when it is not JSON."""
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


def check_download(path: str, expected: Optional[str], got: int, status: int) -> None:
    """Raise ConnectionError ``incomplete_transfer`` when a download announced
    ``expected`` bytes (its Content-Length header) but ``got`` arrived."""
    if expected is not None and expected.isdigit() and int(expected) != got:
        raise ConnectionError(f"download of {path} ended after {got} of {expected} bytes",
                              "incomplete_transfer", status)


def backoff_seconds(attempt: int) -> float:
    """Sleep before retry number ``attempt`` (0-based), in seconds: 0.1-0.2,
    0.2-0.4, ... doubling, at most 2 s (jittered, as the TypeScript SDK)."""
    base: float = min(0.2 * (2 ** min(attempt, 10)), 2.0)
    return base * (0.5 + random.random() * 0.5)


class Attempts:
    """The retry policy of one call: which failure may be retried, and the
    backoff before the next attempt.

    Args:
        method: the HTTP method. replayable: the body can be sent again (not a
            stream). max_retries: extra attempts allowed.
    """

    def __init__(self, method: str, replayable: bool, max_retries: int) -> None:
        self.method = method
        self.replayable = replayable
        self.max_retries = max_retries
        self.attempt = 0

    @property
    def idempotent(self) -> bool:
        """The method may be sent twice (GET, HEAD, DELETE) and so may its body."""
        return self.method in IDEMPOTENT and self.replayable

    def after_connect_failure(self, exc: BaseException) -> bool:
        """The connection could not be opened (nothing was sent): any method
        may be retried while attempts are left, unless the TLS handshake
        failed (an untrusted certificate, a server that does not speak TLS:
        another attempt would fail the same way)."""
        return self.attempt < self.max_retries and not isinstance(exc, ssl.SSLError)

    def after_lost_answer(self, exc: BaseException) -> bool:
        """The request may have gone out and no answer came: only an
        idempotent call, and not after a deadline."""
        return self.idempotent and self.attempt < self.max_retries and not is_timeout(exc)

    def after_status(self, status: int) -> bool:
        """An error answer: an idempotent call after 502 or 503."""
        return self.idempotent and status in RETRY_STATUSES and self.attempt < self.max_retries

    def accepts(self, status: int, ok: Sequence[int], gone_on_retry_ok: bool) -> bool:
        """The answer is a success: its status is in ``ok``, or a 404 on a
        retry of a DELETE whose first answer was lost (``gone_on_retry_ok``)."""
        return status in ok or (status == 404 and self.attempt > 0 and gone_on_retry_ok)

    def next(self) -> float:
        """Count an attempt and return the seconds to sleep before the next."""
        s = backoff_seconds(self.attempt)
        self.attempt += 1
        return s
