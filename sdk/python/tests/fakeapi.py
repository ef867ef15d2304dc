"""A scriptable fake of the PandaStack REST API for the SDK's unit tests.

``FakeApi`` runs a threaded HTTP/1.1 server on a free loopback port (over TLS
when given a certificate and its key, then at https://localhost:PORT). Tests
register handlers per (method, path); a handler gets the parsed ``Request``
and returns a ``Reply`` (status, JSON or raw body, headers) or writes the
answer itself through ``req.handler`` (for streams, early answers, dropped
connections). Every request is recorded in ``api.requests``.

Request bodies are read (Content-Length or chunked) into ``Request.body`` unless
the route was registered with ``stream_body=True``; then the handler reads
``req.rfile`` itself (for the 200 MiB streaming test).  A fixed Reply on such
a route is an early answer (a 413 before the body): like the daemon, the
server then stops sending and reads the body it ignores until the client
closes (a lingering close, at most LINGER_S and LINGER_BYTES: a client that
goes on sending its whole body is still cut off), since closing a socket with
unread bytes sends a reset that can destroy the answer before the client
reads it.
"""
from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple, Union


@dataclass
class Request:
    method: str
    path: str
    query: Dict[str, List[str]]
    headers: Dict[str, str]
    body: bytes = b""
    handler: Any = None

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def chunked(self) -> bool:
        return self.headers.get("transfer-encoding", "").lower() == "chunked"


@dataclass
class Reply:
    status: int = 200
    json: Any = None
    body: Optional[bytes] = None
    headers: Dict[str, str] = field(default_factory=dict)


def error(status: int, code: str, message: str = "") -> Reply:
    """The API's error shape."""
    return Reply(status, {"error": {"code": code, "message": message or code}})


Handler = Callable[[Request], Optional[Reply]]


def read_chunked(rfile, sink: Callable[[bytes], None]) -> int:
    """Decode a chunked body from rfile into sink; returns its size."""
    total = 0
    while True:
        line = rfile.readline(100)
        size = int(line.strip().split(b";")[0], 16)
        if size == 0:
            rfile.readline(100)  # the CRLF after the last chunk (no trailers)
            return total
        left = size
        while left:
            block = rfile.read(min(left, 1 << 20))
            if not block:
                raise EOFError("chunked body cut short")
            sink(block)
            left -= len(block)
        total += size
        rfile.readline(100)


def read_body(req: Request, sink: Callable[[bytes], None]) -> int:
    """Read the request's body (either framing) into sink; returns its size."""
    h = req.handler
    if req.chunked:
        return read_chunked(h.rfile, sink)
    left = int(req.headers.get("content-length", "0") or 0)
    total = left
    while left:
        block = h.rfile.read(min(left, 1 << 20))
        if not block:
            raise EOFError("body cut short")
        sink(block)
        left -= len(block)
    return total


class _QuietServer(ThreadingHTTPServer):
    """Ignores clients that hang up mid-answer (tests do that on purpose).
    Its listen backlog takes many connections at once (the default 5 makes
    the kernel reset some of 20 concurrent connects)."""

    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, EOFError)):
            return
        super().handle_error(request, client_address)


class FakeApi:
    """The fake server. Use as a context manager or call start()/stop()."""

    def __init__(self, port: int = 0, tls: Optional[Tuple[str, str]] = None) -> None:
        self.routes: Dict[Tuple[str, str], Tuple[Union[Handler, List[Any]], bool]] = {}
        self.requests: List[Request] = []
        self.lock = threading.Lock()
        api = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                api._dispatch(self)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self.server = _QuietServer(("127.0.0.1", port), H)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            self.url = f"https://localhost:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    def start(self) -> "FakeApi":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "FakeApi":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def route(self, method: str, path: str, handler: Union[Handler, Reply, List[Any]],
              stream_body: bool = False) -> None:
        """Register an answer: a handler function, a fixed Reply, or a list of
        them used in turn (the last one repeats)."""
        self.routes[(method, path)] = (handler, stream_body)

    def calls(self, method: str, path: str) -> List[Request]:
        with self.lock:
            return [r for r in self.requests if r.method == method and r.path == path]

    def _dispatch(self, h: BaseHTTPRequestHandler) -> None:
        parts = urllib.parse.urlsplit(h.path)
        req = Request(h.command, parts.path, urllib.parse.parse_qs(parts.query, keep_blank_values=True),
                      {k.lower(): v for k, v in h.headers.items()}, b"", h)
        entry = self.routes.get((req.method, req.path))
        with self.lock:
            self.requests.append(req)
        if entry is None:
            self.send(h, error(404, "not_found", "no such route"))
            return
        target, stream_body = entry
        if not stream_body:
            buf = bytearray()
            read_body(req, buf.extend)
            req.body = bytes(buf)
        if isinstance(target, list):
            with self.lock:
                item = target.pop(0) if len(target) > 1 else target[0]
        else:
            item = target
        reply = item(req) if callable(item) else item
        if reply is not None:
            self.send(h, reply)
            if stream_body and not callable(item):
                linger(h)

    @staticmethod
    def send(h: BaseHTTPRequestHandler, reply: Reply) -> None:
        body = reply.body
        headers = dict(reply.headers)
        if body is None:
            if reply.json is None:
                body = b""
            else:
                body = json.dumps(reply.json).encode()
                headers.setdefault("Content-Type", "application/json")
        h.send_response(reply.status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        try:
            if body:
                h.wfile.write(body)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True  # the client stopped reading: expected in some tests


LINGER_S = 10.0
LINGER_BYTES = 16 << 20


def linger(h: BaseHTTPRequestHandler) -> None:
    """After an early answer: end our side, then read and drop what the
    client still sends until it closes (or LINGER_S pass, or LINGER_BYTES
    came)."""
    import socket
    h.close_connection = True
    try:
        h.connection.shutdown(socket.SHUT_WR)
        h.connection.settimeout(LINGER_S)
        end, got = time.monotonic() + LINGER_S, 0
        while time.monotonic() < end and got < LINGER_BYTES:
            n = len(h.connection.recv(1 << 16))
            if not n:
                break
            got += n
    except OSError:
        pass


def sse(events, chunked: int = 0):
    """A handler answering 200 text/event-stream with the given items, then
    closing the connection. An item is raw bytes (written and flushed), a
    number (seconds to sleep) or a threading.Event (waited for, at most 10 s).
    With ``chunked`` the bytes go with chunked transfer encoding, cut into
    pieces of that many bytes (with a chunk extension, then a trailer)."""
    def handler(req):
        h = req.handler
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding" if chunked else "Connection",
                      "chunked" if chunked else "close")
        h.end_headers()
        for ev in events:
            if isinstance(ev, (int, float)):
                time.sleep(ev)
                continue
            if isinstance(ev, threading.Event):
                ev.wait(10)
                continue
            if not chunked:
                h.wfile.write(ev)
            for i in range(0, len(ev) if chunked else 0, chunked or 1):
                h.wfile.write(b"%x;ext=1\r\n%s\r\n" % (len(ev[i:i + chunked]), ev[i:i + chunked]))
            h.wfile.flush()
        if chunked:
            h.wfile.write(b"0\r\nX-Trailer: 1\r\n\r\n")
            h.wfile.flush()
        h.close_connection = True
    return handler


def raw(data: bytes) -> Handler:
    """A handler answering with these bytes as they are (a hostile or broken
    answer), then closing the connection."""
    def handler(req: Request) -> None:
        req.handler.wfile.write(data)
        req.handler.wfile.flush()
        req.handler.close_connection = True
    return handler


def drop_connection(req: Request) -> None:
    """A handler that closes the connection without answering."""
    req.handler.close_connection = True
    try:
        import socket
        req.handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    return None


def sandbox_json(sid: str = "sbx_0123456789abcdef0123", template: str = "base",
                 status: str = "running", **extra: Any) -> Dict[str, Any]:
    d = {"id": sid, "template": template, "status": status, "reason": None,
         "created_at": "2026-11-30T02:18:52.123Z", "expires_at": "2026-11-30T03:18:52.123Z",
         "ended_at": None, "vcpus": 1, "memory_mib": 512, "metadata": {}}
    d.update(extra)
    return d
