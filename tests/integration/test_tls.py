"""HTTPS at the API's edge (docs/security.md, "The API edge"): a real daemon
serving TLS with a self-signed certificate for 127.0.0.1. The CLI, the Python
SDK and the TypeScript SDK each work against it when given that certificate
(PANDASTACK_CA_FILE, or their own option), and each fails at once with an
error naming PANDASTACK_CA_FILE without it; plain http to the TLS port fails;
a daemon refuses plain HTTP on a public address unless --insecure-http.
The API tests need no VM; the sandbox test skips without a baked template."""
import asyncio
import http.client
import json
import os
import pathlib
import shutil
import ssl
import subprocess
import sys
import tempfile

import pytest

from conftest import DAEMON, Daemon, reap_vms

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("PANDASTACK_CLI", ROOT / "build" / "pandastack"))
TS_SDK = ROOT / "sdk" / "typescript" / "dist" / "index.js"
sys.path.insert(0, str(ROOT / "sdk" / "python" / "src"))

import pandastack  # noqa: E402

NO_SUCH = "sbx_0123456789abcdef0123"


def self_signed(d, name):
    """A self-signed certificate for 127.0.0.1 (as its IP subjectAltName) and
    its key: (cert, key) paths."""
    cert, key = str(d / f"{name}.pem"), str(d / f"{name}.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """The daemon's certificate and key, and another self-signed certificate
    for the same address (a CA that did not sign the daemon's)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("tls")
    cert, key = self_signed(d, "daemon")
    return {"cert": cert, "key": key, "other": self_signed(d, "other")[0]}


@pytest.fixture(scope="module")
def tls_daemon(certs):
    """A daemon serving HTTPS, with an empty template cache and no pool."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="pandastackd-tls-"))
    (root / "cache").mkdir()
    d = Daemon(root / "data", ["--pool-size", "0"], cache=str(root / "cache"),
               tls=(certs["cert"], certs["key"])).start()
    yield d
    d.stop()
    reap_vms(d.data_dir)
    shutil.rmtree(root, ignore_errors=True)


def client_env(d, ca=None, url=None):
    """The environment of a client process: the daemon's URL and admin key,
    PANDASTACK_CA_FILE only when ``ca`` is given."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PANDASTACK_CA_FILE", "SSL_CERT_FILE", "SSL_CERT_DIR",
                        "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE")}
    env["PANDASTACK_API_URL"] = url or d.url("")
    env["PANDASTACK_API_KEY"] = d.admin_key
    if ca is not None:
        env["PANDASTACK_CA_FILE"] = ca
    return env


def cli(d, *args, ca=None, url=None):
    return subprocess.run([str(CLI), *args], env=client_env(d, ca, url), capture_output=True,
                          text=True, timeout=60)


TS_SCRIPT = """
import { Sandbox } from %s;
const [url, key, caFile] = process.argv.slice(1);
const opts = { apiUrl: url, apiKey: key, maxRetries: 0 };
if (caFile) opts.caFile = caFile;
const out = {};
try {
  out.sandboxes = (await Sandbox.list(opts)).length;
  out.missing = await Sandbox.connect(%s, opts).then(() => "found", (e) => e.name);
} catch (e) {
  out.error = `${e.name}: ${e.message}`;
}
console.log(JSON.stringify(out));
"""


def ts_client(d, ca=None, ca_option=None, url=None):
    """Runs a node script that lists sandboxes and connects to a missing one
    through the TypeScript SDK; returns its JSON report."""
    script = TS_SCRIPT % (json.dumps(str(TS_SDK)), json.dumps(NO_SUCH))
    r = subprocess.run(["node", "--input-type=module", "-e", script, url or d.url(""),
                        d.admin_key, ca_option or ""],
                       env=client_env(d, ca, url), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_daemon_serves_https_with_its_certificate(tls_daemon):
    h = tls_daemon.request("GET", "/healthz")  # trusts the certificate
    assert h.status == 200, h
    with pytest.raises(ssl.SSLCertVerificationError):  # the system's store does not
        c = http.client.HTTPSConnection("127.0.0.1", tls_daemon.port, timeout=10,
                                        context=ssl.create_default_context())
        c.request("GET", "/healthz")


def test_the_cli_over_https(tls_daemon, certs):
    r = cli(tls_daemon, "sandbox", "list")
    assert r.returncode == 1, r
    assert "certificate" in r.stderr and "PANDASTACK_CA_FILE" in r.stderr, r.stderr
    assert r.stderr.count("\n") <= 2, r.stderr
    r = cli(tls_daemon, "sandbox", "list", ca=certs["other"])
    assert r.returncode == 1 and "PANDASTACK_CA_FILE" in r.stderr, r
    for args, ca in ((["--json", "sandbox", "list"], certs["cert"]),
                     (["--ca-file", certs["cert"], "--json", "sandbox", "list"], None),
                     (["--json", "sandbox", "list", "--ca-file", certs["cert"]], None),
                     (["--ca-file", certs["cert"], "--json", "sandbox", "list"], certs["other"])):
        r = cli(tls_daemon, *args, ca=ca)
        assert r.returncode == 0, (args, r)
        assert json.loads(r.stdout) == {"sandboxes": []}
    r = cli(tls_daemon, "sandbox", "get", NO_SUCH, ca=certs["cert"])
    assert r.returncode == 1 and "sandbox_not_found" in r.stderr, r
    missing = str(pathlib.Path(certs["cert"]).parent / "missing.pem")
    r = cli(tls_daemon, "sandbox", "list", ca=missing)
    assert r.returncode == 1 and missing in r.stderr, r


def test_the_python_sdk_over_https(tls_daemon, certs, monkeypatch):
    for name in ("PANDASTACK_CA_FILE", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    kw = {"api_url": tls_daemon.url(""), "api_key": tls_daemon.admin_key, "max_retries": 0}
    for call in (lambda **k: pandastack.Sandbox.list(**kw, **k),
                 lambda **k: asyncio.run(pandastack.AsyncSandbox.list(**kw, **k))):
        with pytest.raises(pandastack.ConnectionError) as ei:
            call()
        assert "not trusted" in str(ei.value) and "PANDASTACK_CA_FILE" in str(ei.value)
        assert call(ca_file=certs["cert"]) == []
        monkeypatch.setenv("PANDASTACK_CA_FILE", certs["cert"])
        assert call() == []
        monkeypatch.setenv("PANDASTACK_CA_FILE", certs["other"])
        with pytest.raises(pandastack.ConnectionError):
            call()
        monkeypatch.delenv("PANDASTACK_CA_FILE")
    with pytest.raises(pandastack.NotFoundError):
        pandastack.Sandbox.connect(NO_SUCH, **kw, ca_file=certs["cert"])


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_typescript_sdk_over_https(tls_daemon, certs):
    if not TS_SDK.exists():
        pytest.skip("the TypeScript SDK is not built (make sdk-ts-build)")
    out = ts_client(tls_daemon)
    assert out["error"].startswith("ConnectionError: ") and "PANDASTACK_CA_FILE" in out["error"]
    assert "not trusted" in out["error"], out
    assert ts_client(tls_daemon, ca=certs["cert"]) == {"sandboxes": 0, "missing": "NotFoundError"}
    assert ts_client(tls_daemon, ca=certs["other"], ca_option=certs["cert"]) == {
        "sandboxes": 0, "missing": "NotFoundError"}
    assert "not trusted" in ts_client(tls_daemon, ca=certs["other"])["error"]


def test_plain_http_to_the_tls_port_fails(tls_daemon, certs):
    c = http.client.HTTPConnection("127.0.0.1", tls_daemon.port, timeout=10)
    with pytest.raises((OSError, http.client.HTTPException)):
        c.request("GET", "/healthz")
        c.getresponse()
    c.close()
    plain = f"http://127.0.0.1:{tls_daemon.port}"
    r = cli(tls_daemon, "sandbox", "list", ca=certs["cert"], url=plain)
    assert r.returncode == 1 and "pandastack: error:" in r.stderr, r
    with pytest.raises(pandastack.ConnectionError):
        pandastack.Sandbox.list(api_url=plain, api_key=tls_daemon.admin_key, max_retries=0,
                                request_timeout=10)


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace needs root")
def test_a_public_address_needs_tls_or_insecure_http(tmp_root, certs):
    """In a network namespace of its own (nothing outside can connect), a
    daemon asked to listen on 0.0.0.0 refuses plain HTTP, and starts with
    --insecure-http or with a certificate."""
    (tmp_root / "cache").mkdir()
    r = subprocess.run(["unshare", "-n", str(DAEMON), "--listen", "0.0.0.0:0",
                        "--data-dir", str(tmp_root / "refused"), "--pool-size", "0",
                        "--cache", str(tmp_root / "cache")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "plain HTTP" in r.stderr and "--insecure-http" in r.stderr, r.stderr
    for name, args, tls in (("insecure", ["--insecure-http"], None),
                            ("tls", [], (certs["cert"], certs["key"]))):
        d = Daemon(tmp_root / name, ["--pool-size", "0"] + args, cache=str(tmp_root / "cache"),
                   tls=tls, listen="0.0.0.0:0", wrap=["unshare", "-n"])
        try:
            d.start()
            assert d.port > 0
            assert "host=0.0.0.0" in d.log()
        finally:
            assert d.stop() == 0, d.log()
            reap_vms(d.data_dir)


def test_a_sandbox_through_every_client_over_https(daemon_factory, template, certs, tmp_root):
    """A real sandbox over https: made by the Python SDK, a command run by the
    CLI, a file written by the TypeScript SDK over its upload path (Expect:
    100-continue) and read back by the Python SDK."""
    d = daemon_factory("vm", ["--pool-size", "0"], tls=(certs["cert"], certs["key"]))
    sb = pandastack.Sandbox.create(template, ttl_seconds=600, api_url=d.url(""),
                                   api_key=d.admin_key, ca_file=certs["cert"])
    try:
        assert sb.exec("echo python over tls").stdout == "python over tls\n"
        r = cli(d, "sandbox", "exec", sb.id, "--", "echo cli over tls", ca=certs["cert"])
        assert (r.returncode, r.stdout) == (0, "cli over tls\n"), r
        if shutil.which("node") and TS_SDK.exists():
            script = f"""
            import {{ Sandbox }} from {json.dumps(str(TS_SDK))};
            const sb = await Sandbox.connect({json.dumps(sb.id)});
            const data = new Uint8Array(2 * 1024 * 1024).map((_, i) => (i * 7) & 0xff);
            await sb.filesystem.write("/workspace/ts.bin", data);
            console.log((await sb.exec("echo node over tls")).stdout.trim());
            """
            r = subprocess.run(["node", "--input-type=module", "-e", script],
                               env=client_env(d, certs["cert"]), capture_output=True, text=True,
                               timeout=300)
            assert (r.returncode, r.stdout) == (0, "node over tls\n"), r
            got = sb.filesystem.read("/workspace/ts.bin", format="bytes")
            assert got == bytes((i * 7) & 0xff for i in range(2 * 1024 * 1024))
    finally:
        sb.kill()


def test_https_keeps_connections_and_checks_heads(daemon_factory, certs, tmp_root):
    """Over HTTPS the daemon sees a head only once the TLS layer has it:
    connections are kept alive between requests, a head over 64 KiB still
    gets the API's JSON error, and a connection that sends no head is closed
    at --head-timeout, in all."""
    import socket
    import time
    cache = tmp_root / "tls-head-cache"
    cache.mkdir()
    d = daemon_factory("tls-head", extra_args=["--pool-size", "0", "--head-timeout", "2"],
                       cache=str(cache), tls=(certs["cert"], certs["key"]))
    auth = {"Authorization": f"Bearer {d.admin_key}"}
    c = d.conn(timeout=10)
    for _ in range(3):  # one connection, three answers
        c.request("GET", "/healthz", headers=auth)
        r = c.getresponse()
        assert r.status == 200 and r.getheader("Connection") != "close"
        r.read()
    first = c.sock
    c.request("GET", "/healthz", headers=auth)
    c.getresponse().read()
    assert c.sock is first
    c.close()
    for headers, status, code in [({"X-Big": "a" * 100_000}, 431, "headers_too_large")]:
        c = d.conn(timeout=10)
        c.putrequest("GET", "/healthz")
        c.putheader("Authorization", f"Bearer {d.admin_key}")
        for k, v in headers.items():
            c.putheader(k, v)
        c.endheaders()
        r = c.getresponse()
        assert r.status == status and json.loads(r.read())["error"]["code"] == code
        c.close()
    # a TLS connection that never sends a head: closed at 2 s
    ctx = ssl.create_default_context(cafile=certs["cert"])
    raw = socket.create_connection(("127.0.0.1", d.port), timeout=10)
    s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    t0 = time.time()
    try:
        got = s.recv(1)
    except (ConnectionResetError, ssl.SSLError):
        got = b""
    assert got == b"" and 1.5 < time.time() - t0 < 6, time.time() - t0
    s.close()
    # positive control: a connection that sends its head in time is served
    c = d.conn(timeout=10)
    c.request("GET", "/healthz", headers=auth)
    assert c.getresponse().status == 200
    c.close()
