"""A 200 MiB upload and a 200 MiB download through the SDK (Sandbox and
AsyncSandbox) keep the client's memory flat: the client runs in its own
process and reports its peak RSS (VmHWM) growth; the fake server streams both
ways and checks every byte."""
import hashlib
import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import HERE, KEY, SID
from fakeapi import Reply, read_body

SIZE = 200 << 20          # bytes moved each way
BLOCK = 1 << 20
MAX_GROWTH = 32 << 20     # allowed peak RSS growth of the client, bytes (file: 200 MiB)

CLIENT = textwrap.dedent("""
    import asyncio, json, sys
    sys.path[:0] = json.loads(sys.argv[1])
    from pandastack import AsyncSandbox, Sandbox

    def status(name):
        for line in open("/proc/self/status"):
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
        raise SystemExit("no " + name)

    url, key, src, dst, warm, client = sys.argv[2:8]

    def blocking():
        sb = Sandbox.connect("%s", api_key=key, api_url=url)
        # Warm up every code path with small files first, so lazily loaded
        # modules and buffers are in the baseline.
        sb.filesystem.upload(warm, "/warm")
        sb.filesystem.download("/warm", dst + ".warm")
        base = max(status("VmRSS"), status("VmHWM"))
        up = sb.filesystem.upload(src, "/workspace/big.bin")
        down = sb.filesystem.download("/workspace/big.bin", dst)
        return base, up, down

    async def non_blocking():
        sb = await AsyncSandbox.connect("%s", api_key=key, api_url=url)
        await sb.filesystem.upload(warm, "/warm")
        await sb.filesystem.download("/warm", dst + ".warm")
        base = max(status("VmRSS"), status("VmHWM"))
        up = await sb.filesystem.upload(src, "/workspace/big.bin")
        down = await sb.filesystem.download("/workspace/big.bin", dst)
        await sb.aclose()
        return base, up, down

    base, up, down = blocking() if client == "sync" else asyncio.run(non_blocking())
    print(json.dumps({"growth": status("VmHWM") - base, "base": base,
                      "up": up.size, "down": down.size}))
""" % (SID, SID))


@pytest.mark.parametrize("client", ["sync", "async"])
def test_200_mib_upload_and_download_keep_memory_flat(api, tmp_path, client):
    block = os.urandom(BLOCK)
    src = tmp_path / "src.bin"
    with open(src, "wb") as f:
        for _ in range(SIZE // BLOCK):
            f.write(block)
    want = hashlib.sha256()
    for _ in range(SIZE // BLOCK):
        want.update(block)
    warm = tmp_path / "warm.bin"
    warm.write_bytes(block[:4096])

    received = {}

    def put(req):
        h = hashlib.sha256()
        n = read_body(req, h.update)
        received[req.query["path"][0]] = (n, h.hexdigest())
        return Reply(200, {"path": req.query["path"][0], "size": n})

    def get(req):
        h = req.handler
        path = req.query["path"][0]
        n = 4096 if path == "/warm" else SIZE
        h.send_response(200)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(n))
        h.end_headers()
        left = n
        while left:
            chunk = block[:min(left, BLOCK)]
            h.wfile.write(chunk)
            left -= len(chunk)
        h.wfile.flush()

    api.route("GET", f"/v1/sandboxes/{SID}", Reply(200, {"id": SID, "status": "running"}))
    api.route("PUT", f"/v1/sandboxes/{SID}/fs", put, stream_body=True)
    api.route("GET", f"/v1/sandboxes/{SID}/fs", get)

    paths = [p for p in sys.path if p]  # the test's own view: finds the same package
    out = subprocess.run(
        [sys.executable, "-c", CLIENT, json.dumps(paths), api.url, KEY, str(src),
         str(tmp_path / "dst.bin"), str(warm), client],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)

    assert received["/workspace/big.bin"] == (SIZE, want.hexdigest())
    assert report["up"] == SIZE and report["down"] == SIZE
    got = hashlib.sha256()
    with open(tmp_path / "dst.bin", "rb") as f:
        for chunk in iter(lambda: f.read(BLOCK), b""):
            got.update(chunk)
    assert got.hexdigest() == want.hexdigest()
    print(f"{client} client peak RSS growth for 200 MiB each way: "
          f"{report['growth'] / 2**20:.1f} MiB "
          f"(baseline {report['base'] / 2**20:.1f} MiB)")
    assert report["growth"] < MAX_GROWTH, report
    assert HERE.exists()
