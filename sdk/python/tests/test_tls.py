"""https: both clients check the daemon's certificate against the CA file
given to them (``ca_file=``, else ``PANDASTACK_CA_FILE``) instead of the
system's store, or against the system's store (``SSL_CERT_FILE`` /
``SSL_CERT_DIR``) when none is given. An untrusted certificate, a server that
does not speak TLS, or plain http to a TLS port fail at once with
ConnectionError, never a hang and never a retry; a CA file that cannot be read
fails before any request."""
import asyncio
import os
import shutil
import socket
import ssl
import subprocess
import threading

import pytest
from conftest import KEY, SID
from fakeapi import FakeApi, Reply, sandbox_json

from pandastack import AsyncSandbox, ConnectionError, PandaStackError, Sandbox
from pandastack._core import Attempts

SB = f"/v1/sandboxes/{SID}"


def self_signed(d, name):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.pem")],
                   check=True, capture_output=True, timeout=60)
    return str(d / f"{name}.pem"), str(d / f"{name}.key")


class Certs:
    """The fake server's self-signed certificate (``ca``, its own CA) and
    key, and another self-signed certificate (``other``: a CA that did not
    sign the server's)."""

    def __init__(self, d):
        self.ca, self.key = self_signed(d, "server")
        self.other = self_signed(d, "other")[0]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    return Certs(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def tls_api(certs):
    with FakeApi(tls=(certs.ca, certs.key)) as a:
        a.route("GET", SB, Reply(200, sandbox_json(SID)))
        yield a


@pytest.fixture(autouse=True)
def empty_system_store(monkeypatch):
    """The system's store trusts nothing unless a test says otherwise."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.setenv("SSL_CERT_DIR", os.devnull)


def connects(url, **kw):
    """Both clients connect to the sandbox with ``kw`` (four GETs)."""
    assert Sandbox.connect(SID, api_key=KEY, api_url=url, max_retries=0, **kw).id == SID

    async def run():
        sb = await AsyncSandbox.connect(SID, api_key=KEY, api_url=url, max_retries=0, **kw)
        try:
            for _ in range(2):
                assert (await sb.get_info()).status == "running"
            assert sb._t.pool.opened == 1  # kept alive over TLS
        finally:
            await sb.aclose()
    asyncio.run(run())


def refused(url, **kw):
    """Both clients fail with ConnectionError; returns the two messages."""
    messages = []
    with pytest.raises(ConnectionError) as ei:
        Sandbox.connect(SID, api_key=KEY, api_url=url, **kw)
    messages.append(str(ei.value))
    with pytest.raises(ConnectionError) as ei:
        asyncio.run(AsyncSandbox.connect(SID, api_key=KEY, api_url=url, **kw))
    messages.append(str(ei.value))
    return messages


def test_ca_file_argument_trusts_a_self_signed_daemon(tls_api, certs):
    for m in refused(tls_api.url, max_retries=0):  # positive control: not trusted by default
        assert "not trusted" in m and "PANDASTACK_CA_FILE" in m and "ca_file=" in m
    assert tls_api.calls("GET", SB) == []
    connects(tls_api.url, ca_file=certs.ca)
    assert len(tls_api.calls("GET", SB)) == 4


def test_pandastack_ca_file_from_the_environment(tls_api, certs, monkeypatch):
    refused(tls_api.url, max_retries=0)
    monkeypatch.setenv("PANDASTACK_CA_FILE", certs.ca)
    connects(tls_api.url)
    monkeypatch.setenv("PANDASTACK_CA_FILE", "")  # empty: unset
    refused(tls_api.url, max_retries=0)


def test_the_argument_wins_over_the_environment(tls_api, certs, monkeypatch):
    monkeypatch.setenv("PANDASTACK_CA_FILE", certs.other)
    refused(tls_api.url, max_retries=0)
    connects(tls_api.url, ca_file=certs.ca)


def test_the_ca_file_is_used_instead_of_the_system_store(tls_api, certs, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", certs.ca)
    connects(tls_api.url)  # the system's store trusts the server...
    refused(tls_api.url, ca_file=certs.other, max_retries=0)  # ...but the CA file does not


def test_an_untrusted_certificate_is_not_retried(tls_api):
    handshakes = []
    accept = tls_api.server.get_request

    def counting():
        handshakes.append(1)
        return accept()
    tls_api.server.get_request = counting
    refused(tls_api.url, max_retries=2)
    assert handshakes == [1, 1]
    assert not Attempts("GET", True, 2).after_connect_failure(
        ssl.SSLCertVerificationError("x"))
    assert Attempts("GET", True, 2).after_connect_failure(ConnectionRefusedError())


@pytest.mark.parametrize("content", [None, b"not a certificate\n", b""])
def test_a_ca_file_that_cannot_be_read_fails_before_any_request(tls_api, tmp_path, content):
    path = tmp_path / "ca.pem"
    if content is not None:
        path.write_bytes(content)
    for connect in (lambda: Sandbox.connect(SID, api_key=KEY, api_url=tls_api.url,
                                            ca_file=str(path)),
                    lambda: asyncio.run(AsyncSandbox.connect(SID, api_key=KEY,
                                                             api_url=tls_api.url,
                                                             ca_file=str(path)))):
        with pytest.raises(PandaStackError) as ei:
            connect()
        assert ei.value.code == "invalid_config" and str(path) in str(ei.value)
    assert tls_api.calls("GET", SB) == []


def test_the_ca_file_is_not_read_for_http(api):
    api.route("GET", SB, Reply(200, sandbox_json(SID)))
    connects(api.url, ca_file=os.devnull + "/missing.pem")


def test_plain_http_to_a_tls_port_fails_cleanly(tls_api, certs):
    plain = tls_api.url.replace("https://localhost", "http://127.0.0.1")
    for m in refused(plain, max_retries=0, request_timeout=10,
                     ca_file=certs.ca):
        assert "client deadline" not in m
    assert tls_api.calls("GET", SB) == []


def test_https_to_a_plain_server_fails_once_without_retries(certs):
    """A server that answers a TLS hello with plain HTTP (as a daemon without
    --tls-cert does): one connection per client, ConnectionError."""
    srv = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            accepted.append(1)
            with c:
                c.recv(4096)
                c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        url = f"https://127.0.0.1:{srv.getsockname()[1]}"
        for m in refused(url, max_retries=2, request_timeout=10,
                         ca_file=certs.ca):
            assert "SSL" in m
        assert accepted == [1, 1]
    finally:
        srv.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        srv.close()
        t.join(5)
