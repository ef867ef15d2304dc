"""netclient.py - the sandbox's side of the network tests.  It runs inside a
sandbox (uploaded, then run with python3) and prints one JSON object.

  netclient.py dns NAME [SERVER [TYPE [tcp]]]   a query of our own (not the
        system's resolver): {"rcode", "addrs", "id_ok"}
  netclient.py tcp IP PORT [--sni NAME] [--host NAME] [--path P] [--send TEXT]
        [--timeout S] [--delay S]
        a connection (silent for --delay seconds once connected, then):
        TLS with SNI NAME (no certificate check) when --sni,
        then an HTTP/1.1 GET with Host NAME when --host; else --send TEXT
        and read; else only read.  {"status", "body", "data", "error",
        "bytes", "seconds"}
  netclient.py resolve NAME   the system's resolver (getaddrinfo): {"addrs",
        "error"}
  netclient.py hold IP PORT HOST   GET /hold, print {"open": true} when the
        answer starts, then wait for the connection to end and print
        {"closed": HOW}: one line each, flushed.
  netclient.py serve PORT LOG   an HTTP server on 0.0.0.0:PORT answering
        "served PORT" and appending one line per connection (the peer's
        address) to LOG; runs until killed.
  netclient.py batch JSON   JSON a list of argument lists of the commands
        above (not hold): their results as one JSON list, in order (one
        interpreter start for many probes: it is slow in an emulated guest).

Standard library only: both templates have python3.
"""
import json
import random
import socket
import ssl
import struct
import sys
import time


def out(**kw):
    print(json.dumps(kw), flush=True)


def dns(name, server="10.0.2.3", qtype=1, tcp=False):
    qid = random.randrange(65536)
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        if label:
            q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", qtype, 1)
    if tcp:
        s = socket.create_connection((server, 53), 10)
        s.sendall(struct.pack(">H", len(q)) + q)
        n = struct.unpack(">H", s.recv(2, socket.MSG_WAITALL))[0]
        r = s.recv(n, socket.MSG_WAITALL)
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(10)
        s.sendto(q, (server, 53))
        r = s.recv(4096)
    rid, flags, qd, an = struct.unpack(">HHHH", r[:8])
    at = 12
    for _ in range(qd):
        while r[at]:
            at += 1 + r[at]
        at += 5
    addrs = []
    for _ in range(an):
        if r[at] & 0xC0:
            at += 2
        else:
            while r[at]:
                at += 1 + r[at]
            at += 1
        rtype, _, _, rdlen = struct.unpack(">HHIH", r[at:at + 10])
        at += 10
        if rtype == 1:
            addrs.append(socket.inet_ntoa(r[at:at + 4]))
        at += rdlen
    return {"rcode": flags & 15, "addrs": addrs, "id_ok": rid == qid}


def tcp(ip, port, sni=None, host=None, path="/", send=None, timeout=20, delay=0):
    timeout = float(timeout)
    t0 = time.time()
    res = {"status": None, "body": None, "data": None, "error": None, "bytes": 0}
    try:
        s = socket.create_connection((ip, int(port)), timeout)
        time.sleep(float(delay))
        if sni is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            s = ctx.wrap_socket(s, server_hostname=sni)
        if host is not None:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                d = s.recv(1 << 20)
                if not d:
                    break
                res["bytes"] += len(d)
                if len(data) < 4096:
                    data += d[:4096]
            head, _, body = data.partition(b"\r\n\r\n")
            if head.startswith(b"HTTP/"):
                res["status"] = int(head.split(b" ", 2)[1])
            res["body"] = body[:300].decode(errors="replace")
        else:
            if send is not None:
                s.sendall(send.encode())
            d = s.recv(4096)
            res["data"] = d.decode(errors="replace")
        s.close()
    except (OSError, ssl.SSLError) as e:
        res["error"] = f"{type(e).__name__}: {e}"
    res["seconds"] = round(time.time() - t0, 6)
    return res


def hold(ip, port, host):
    s = socket.create_connection((ip, int(port)), 20)
    s.sendall(f"GET /hold HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    got = s.recv(4096)
    out(open=got.startswith(b"HTTP/1.1 200"))
    s.settimeout(120)
    try:
        while True:
            d = s.recv(4096)
            if not d:
                out(closed="eof")
                return
    except OSError as e:
        out(closed=type(e).__name__)


def serve(port, log):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", int(port)))
    ls.listen(16)
    while True:
        c, peer = ls.accept()
        with open(log, "a") as f:
            f.write(peer[0] + "\n")
        try:
            c.settimeout(10)
            c.recv(4096)
            body = f"served {port}\n".encode()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                      % len(body) + body)
        except OSError:
            pass
        c.close()


def run(argv):
    cmd, args = argv[0], [str(a) for a in argv[1:]]
    if cmd == "dns":
        name = args[0]
        server = args[1] if len(args) > 1 else "10.0.2.3"
        qtype = int(args[2]) if len(args) > 2 else 1
        try:
            return dns(name, server, qtype, len(args) > 3 and args[3] == "tcp")
        except OSError as e:
            return {"error": f"{type(e).__name__}: {e}"}
    if cmd == "resolve":
        try:
            infos = socket.getaddrinfo(args[0], 80, socket.AF_INET, socket.SOCK_STREAM)
            return {"addrs": sorted({i[4][0] for i in infos}), "error": None}
        except OSError as e:
            return {"addrs": [], "error": f"{type(e).__name__}: {e}"}
    if cmd == "tcp":
        opts = {}
        rest = args[2:]
        for i in range(0, len(rest), 2):
            opts[rest[i].lstrip("-")] = rest[i + 1]
        return tcp(args[0], args[1], **opts)
    sys.exit(f"unknown command {cmd}")


def main(argv):
    if argv[0] == "hold":
        hold(*argv[1:])
    elif argv[0] == "serve":
        serve(*argv[1:])
    elif argv[0] == "batch":
        print(json.dumps([run(a) for a in json.loads(argv[1])]), flush=True)
    else:
        out(**run(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
