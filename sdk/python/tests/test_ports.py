"""Exposed ports and the network settings against the fake API: the network
object at create, update_network's request, get_host/get_url in both forms
(by host name with a proxy domain, by path without), the access token kept
across answers that do not carry it, in Sandbox and AsyncSandbox."""
import pytest
from conftest import KEY, SID
from fakeapi import Reply, sandbox_json

from pandastack import AsyncSandbox, PandaStackError, Sandbox

SB = f"/v1/sandboxes/{SID}"
TOKEN = "pdt_" + "ab" * 24


def created(api, **extra):
    api.route("POST", "/v1/sandboxes",
              Reply(201, sandbox_json(SID, network={"public_ports": False}, access_token=TOKEN,
                                      **extra)))


def test_create_sends_the_network_object(api):
    created(api)
    sb = Sandbox.create("base", network={"public_ports": True, "egress": "deny"}, api_key=KEY,
                        api_url=api.url)
    (req,) = api.calls("POST", "/v1/sandboxes")
    assert req.json() == {"template": "base",
                          "network": {"public_ports": True, "egress": "deny"}}
    assert sb.access_token == TOKEN
    assert sb.info.network == {"public_ports": False}


def test_create_without_network_sends_none(api):
    created(api)
    Sandbox.create("base", api_key=KEY, api_url=api.url)
    assert "network" not in api.calls("POST", "/v1/sandboxes")[0].json()


def test_network_must_be_a_mapping(api):
    with pytest.raises(TypeError):
        Sandbox.create("base", network=["public_ports"], api_key=KEY, api_url=api.url)
    assert api.calls("POST", "/v1/sandboxes") == []


def test_update_network(api):
    created(api)
    sb = Sandbox.create("base", api_key=KEY, api_url=api.url)
    api.route("PUT", SB + "/network",
              Reply(200, {"egress": "deny", "allow_out": ["pypi.org"], "deny_out": []}))
    got = sb.update_network({"egress": "deny", "allow_out": ["pypi.org"]})
    (req,) = api.calls("PUT", SB + "/network")
    assert req.json() == {"egress": "deny", "allow_out": ["pypi.org"]}
    assert got["allow_out"] == ["pypi.org"]


def test_urls_by_path_without_a_proxy_domain(api):
    created(api, proxy_domain=None)
    sb = Sandbox.create("base", api_key=KEY, api_url=api.url + "/")
    assert sb.get_host(8000) is None
    assert sb.get_url(8000) == f"{api.url}{SB}/ports/8000/"
    assert sb.get_url(8000, "/a/b?c=1") == f"{api.url}{SB}/ports/8000/a/b?c=1"
    assert sb.get_url(8000, "x", with_token=True) == f"{api.url}{SB}/ports/8000/x?access_token={TOKEN}"
    assert sb.get_url(1, "x?y=1", with_token=True).endswith(f"/ports/1/x?y=1&access_token={TOKEN}")
    for bad in (0, 65536, -1, "80", 8.0, True):
        with pytest.raises(ValueError):
            sb.get_url(bad)
        with pytest.raises(ValueError):
            sb.get_host(bad)


def test_urls_by_host_with_a_proxy_domain(api):
    created(api, proxy_domain="sbx.example.com")
    sb = Sandbox.create("base", api_key=KEY, api_url=api.url)
    host = "8000-" + SID.replace("_", "-") + ".sbx.example.com"
    assert sb.get_host(8000) == host
    port = api.url.rsplit(":", 1)[1]
    assert sb.get_url(8000, "/index.html") == f"http://{host}:{port}/index.html"


def test_default_port_left_out(api):
    from pandastack import SandboxInfo
    from pandastack._http import Transport
    info = SandboxInfo.from_json(sandbox_json(SID, proxy_domain="d.test", access_token=TOKEN))
    sb = Sandbox(info, Transport(KEY, "https://api.d.test", 10))
    assert sb.get_url(3000) == "https://3000-" + SID.replace("_", "-") + ".d.test/"
    sb = Sandbox(info, Transport(KEY, "http://api.d.test:80/prefix", 10))
    assert sb.get_url(3000, "a") == "http://3000-" + SID.replace("_", "-") + ".d.test/a"


def test_token_and_domain_survive_answers_without_them(api):
    created(api, proxy_domain="d.test")
    sb = Sandbox.create("base", api_key=KEY, api_url=api.url)
    api.route("POST", SB + "/ttl", Reply(200, sandbox_json(SID)))  # no token, no domain
    sb.set_ttl(60)
    assert sb.access_token == TOKEN
    assert sb.get_host(80) is not None


def test_with_token_needs_a_token(api):
    api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID)))
    sb = Sandbox.create("base", api_key=KEY, api_url=api.url)
    assert sb.access_token is None
    with pytest.raises(PandaStackError) as e:
        sb.get_url(80, with_token=True)
    assert e.value.code == "no_access_token"


async def test_async_surface(api):
    created(api, proxy_domain="d.test")
    sb = await AsyncSandbox.create("base", network={"public_ports": True}, api_key=KEY,
                                   api_url=api.url)
    try:
        assert api.calls("POST", "/v1/sandboxes")[0].json()["network"] == {"public_ports": True}
        assert sb.access_token == TOKEN
        assert sb.get_host(5000) == "5000-" + SID.replace("_", "-") + ".d.test"
        assert sb.get_url(5000).startswith("http://5000-")
        api.route("PUT", SB + "/network", Reply(200, {"public_ports": True}))
        assert await sb.update_network({"public_ports": True}) == {"public_ports": True}
        assert api.calls("PUT", SB + "/network")[0].json() == {"public_ports": True}
    finally:
        await sb.aclose()
