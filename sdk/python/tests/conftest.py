"""Fixtures of the SDK's unit tests: a fake API server, and a Sandbox and an
AsyncSandbox bound to it.

The package is imported from ../src unless it is already importable (an
installed copy), so `/usr/bin/python3 -m pytest sdk/python/tests` works from a
clean checkout. A test written as `async def` runs in a fresh event loop
(asyncio.run), and the AsyncSandbox fixtures it uses close their connections
before that loop ends.
"""
import asyncio
import inspect
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if os.environ.get("PANDASTACK_SDK_INSTALLED") != "1":
    sys.path.insert(0, str(HERE.parent / "src"))

from fakeapi import FakeApi, Reply, sandbox_json  # noqa: E402

import pandastack  # noqa: E402

SID = "sbx_0123456789abcdef0123"
KEY = "pds_" + "ab" * 24


@pytest.fixture
def api():
    with FakeApi() as a:
        yield a


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    monkeypatch.delenv("PANDASTACK_API_KEY", raising=False)
    monkeypatch.delenv("PANDASTACK_API_URL", raising=False)
    monkeypatch.delenv("PANDASTACK_CA_FILE", raising=False)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run `async def` tests in their own event loop."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    args = {n: pyfuncitem.funcargs[n] for n in pyfuncitem._fixtureinfo.argnames}

    async def main():
        try:
            await pyfuncitem.obj(**args)
        finally:
            for v in args.values():
                if isinstance(v, pandastack.AsyncSandbox):
                    await v.aclose()

    asyncio.run(main())
    return True


@pytest.fixture
def asandbox(api):
    """An AsyncSandbox bound to the fake API, built without a request (its
    transport has no connection yet)."""
    from pandastack._async_http import AsyncTransport
    return pandastack.AsyncSandbox(pandastack.SandboxInfo.from_json(sandbox_json(SID)),
                                   AsyncTransport(KEY, api.url, 10))


@pytest.fixture
def sandbox(api):
    """A Sandbox created against the fake API (POST /v1/sandboxes answers 201)."""
    api.route("POST", "/v1/sandboxes", Reply(201, sandbox_json(SID)))
    sb = pandastack.Sandbox.create(template="base", api_key=KEY, api_url=api.url,
                                   request_timeout=10)
    api.requests.clear()
    return sb
