"""A server for the exposed-port tests, standard library only, run inside a
sandbox (or, for tests of the proxy alone, in a sandbox's network namespace on
the host):  python3 port_server.py PORT [ADDRESS]

  GET  /bytes/N       N bytes of a fixed pattern, with Content-Length
  GET  /chunked/N     the same, chunked
  POST /sha256        {"sha256", "length", "chunked"} of the body it read
  PUT  /sha256        the same
  ANY  /echo          {"method", "target", "headers"} of the request
  GET  /ws            a WebSocket (RFC 6455) echoing every message back
  GET  /cookie        the /echo answer, setting a cookie (Set-Cookie, Clear-Site-Data)
                      and headers of its own (X-Content-Type-Options: none, X-Guest: 1)
"""
import base64
import hashlib
import http.server
import json
import socketserver
import struct
import sys

PATTERN = bytes(range(256)) * 256  # 64 KiB


def pattern_bytes(n):
    """The first n bytes of the repeated pattern, in blocks."""
    while n > 0:
        b = PATTERN[:min(n, len(PATTERN))]
        n -= len(b)
        yield b


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.command, self.path))

    def send_json(self, obj, status=200):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        h = hashlib.sha256()
        n = 0
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        if chunked:
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                left = size
                while left:
                    b = self.rfile.read(min(left, 65536))
                    if not b:
                        raise ConnectionError("short chunk")
                    h.update(b)
                    n += len(b)
                    left -= len(b)
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length", "0"))
            while left:
                b = self.rfile.read(min(left, 65536))
                if not b:
                    raise ConnectionError("short body")
                h.update(b)
                n += len(b)
                left -= len(b)
        return {"sha256": h.hexdigest(), "length": n, "chunked": chunked}

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.startswith("/bytes/"):
            n = int(path[7:])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            for b in pattern_bytes(n):
                self.wfile.write(b)
        elif path.startswith("/chunked/"):
            n = int(path[9:])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for b in pattern_bytes(n):
                self.wfile.write(b"%x\r\n" % len(b) + b + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/ws":
            self.websocket()
        elif path == "/cookie":
            body = json.dumps({"method": self.command, "target": self.path,
                               "headers": [[k, v] for k, v in self.headers.items()]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Set-Cookie", "x=1; Path=/")
            self.send_header("Clear-Site-Data", '"cookies", "storage"')
            self.send_header("X-Content-Type-Options", "none")
            self.send_header("X-Guest", "1")
            self.end_headers()
            self.wfile.write(body)
        else:
            self.echo()

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "1000")
        self.end_headers()

    def do_POST(self):
        if self.path.split("?")[0] == "/sha256":
            self.send_json(self.read_body())
        else:
            self.echo()

    do_PUT = do_POST

    def echo(self):
        body = self.read_body()
        self.send_json({"method": self.command, "target": self.path,
                        "headers": [[k, v] for k, v in self.headers.items()],
                        "body_length": body["length"]})

    do_DELETE = do_PATCH = do_OPTIONS = echo

    def websocket(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        while True:
            frame = read_frame(self.rfile)
            if frame is None:
                break
            opcode, payload = frame
            self.wfile.write(make_frame(opcode, payload))
            self.wfile.flush()
            if opcode == 8:
                break
        self.close_connection = True


def read_frame(f):
    """One frame from f: (opcode, unmasked payload), or None at the end."""
    head = f.read(2)
    if len(head) < 2:
        return None
    opcode = head[0] & 0x0F
    masked = head[1] & 0x80
    n = head[1] & 0x7F
    if n == 126:
        n = struct.unpack(">H", f.read(2))[0]
    elif n == 127:
        n = struct.unpack(">Q", f.read(8))[0]
    mask = f.read(4) if masked else b"\0\0\0\0"
    data = f.read(n)
    return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def make_frame(opcode, payload, mask=None):
    """A final frame; masked with the 4 bytes of mask when given (clients)."""
    n = len(payload)
    bit = 0x80 if mask else 0
    if n < 126:
        head = bytes([0x80 | opcode, bit | n])
    elif n < 65536:
        head = bytes([0x80 | opcode, bit | 126]) + struct.pack(">H", n)
    else:
        head = bytes([0x80 | opcode, bit | 127]) + struct.pack(">Q", n)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        head += mask
    return head + payload


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    port = int(sys.argv[1])
    addr = sys.argv[2] if len(sys.argv) > 2 else "0.0.0.0"
    Server((addr, port), Handler).serve_forever()
