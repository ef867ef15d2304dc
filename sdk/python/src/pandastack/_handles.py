"""What a blocking and an asyncio handle share that does no I/O: the state of
a sandbox handle (:class:`SandboxHandle`, the base of Sandbox and AsyncSandbox),
of a code context handle (:class:`ContextHandle`, the base of CodeContext
and AsyncCodeContext) and of a background command handle (:class:`CommandHandle`,
the base of Command and AsyncCommand, with the reader that follows its output),
and their read-only views. The subclasses add the
transport and the calls.
"""
from __future__ import annotations

import time
from typing import List, Optional

from . import _calls
from ._core import Endpoint
from .models import CodeContextInfo, CommandInfo, CommandOutput, ExecResult, SandboxInfo


class SandboxHandle:
    """A sandbox as the client knows it.

    Attributes:
        id: the sandbox id (``sbx_...``).
        info: the last :class:`~pandastack.SandboxInfo` the API returned.
    """

    _token: Optional[str] = None
    _domain: Optional[str] = None

    def __init__(self, info: SandboxInfo, endpoint: Endpoint) -> None:
        self._ep = endpoint
        self.id: str = info.id
        self._path: str = _calls.sandbox_path(info.id)
        self._info = info
        self.info = info

    @property
    def info(self) -> SandboxInfo:
        """The last SandboxInfo the API returned."""
        return self._info

    @info.setter
    def info(self, value: SandboxInfo) -> None:
        # only a create and a get of this sandbox carry these: keep them
        self._info = value
        self._token = value.access_token or self._token
        self._domain = value.proxy_domain or self._domain

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(id={self.id!r}, template={self.info.template!r}, "
                f"status={self.info.status!r})")

    @property
    def template(self) -> str:
        """The template the sandbox was restored from."""
        return self.info.template

    @property
    def status(self) -> str:
        """The status when last seen: running, paused, stopped, error, or lost
        (in a cluster: its node left)."""
        return self.info.status

    @property
    def access_token(self) -> Optional[str]:
        """The token that opens the sandbox's private ports (send it as the
        ``X-Access-Token`` header), or None when the daemon gave none."""
        return self._token

    def get_host(self, port: int) -> Optional[str]:
        """The host name serving ``port`` of the sandbox,
        ``PORT-sbx-....DOMAIN``, when the daemon runs with ``--proxy-domain``;
        None otherwise (use :meth:`get_url`). Raises ValueError for a port
        outside 1-65535."""
        return _calls.port_host(self.id, self._domain, port)

    def get_url(self, port: int, path: str = "", *, with_token: bool = False) -> str:
        """A URL of ``path`` on the server listening on ``port`` in the
        sandbox: ``http(s)://PORT-sbx-....DOMAIN/path`` with a proxy domain,
        else ``API_URL/v1/sandboxes/ID/ports/PORT/path``. Private ports need
        the ``X-Access-Token`` header (:attr:`access_token`) or, with
        ``with_token=True``, the token in the URL's query (for a browser)."""
        return _calls.port_url(self._ep, self.id, self._domain, self._token, port, path,
                               with_token)


class ContextHandle:
    """A code context as the client knows it.

    Attributes:
        id: the context id (``ctx_...``).
        language: the kernel's language (``"python"``).
        sandbox_id: the sandbox it lives in.
        info: the context as the API described it.
    """

    def __init__(self, sandbox_id: str, context_id: str, language: str,
                 info: Optional[CodeContextInfo]) -> None:
        self.sandbox_id = sandbox_id
        self.id = context_id
        self.language = language
        self.info = info or CodeContextInfo(id=context_id, language=language)
        self._path = _calls.context_path(sandbox_id, context_id)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(id={self.id!r}, language={self.language!r}, "
                f"sandbox_id={self.sandbox_id!r})")


class CommandHandle:
    """A background command as the client knows it.

    Attributes:
        id: the command id (``cmd_...``).
        sandbox_id: the sandbox it runs in.
        info: the last :class:`~pandastack.CommandInfo` the API returned.
    """

    def __init__(self, sandbox_id: str, info: CommandInfo) -> None:
        self.sandbox_id = sandbox_id
        self.id = info.id
        self.info = info
        self._path = _calls.command_path(sandbox_id, info.id)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(id={self.id!r}, cmd={self.info.cmd!r}, "
                f"running={self.info.running!r})")

    @property
    def pid(self) -> Optional[int]:
        """The command's pid in the guest."""
        return self.info.pid


class OutputFollower:
    """Reads a command's output by offset, read after read, into whole
    stdout and stderr texts (pure: the caller does the reads)."""

    def __init__(self) -> None:
        self.stdout: List[str] = []
        self.stderr: List[str] = []
        self.stdout_offset = 0
        self.stderr_offset = 0
        self.last: Optional[CommandOutput] = None

    def add(self, out: CommandOutput) -> bool:
        """Take one read; True once the command ended and all was read."""
        self.stdout.append(out.stdout)
        self.stderr.append(out.stderr)
        self.stdout_offset = max(self.stdout_offset, out.next_stdout_offset)
        self.stderr_offset = max(self.stderr_offset, out.next_stderr_offset)
        self.last = out
        return out.complete

    def result(self) -> ExecResult:
        """What was read, as an ExecResult (``*_truncated``: the guest
        dropped output that was not read in time)."""
        c = self.last.command if self.last else CommandInfo(id="")
        return ExecResult(stdout="".join(self.stdout), stderr="".join(self.stderr),
                          exit_code=c.exit_code if c.exit_code is not None else -1,
                          duration_ms=0, timed_out=c.timed_out, signal=c.signal,
                          stdout_truncated=bool(self.last and self.last.stdout_dropped),
                          stderr_truncated=bool(self.last and self.last.stderr_dropped))


def wait_step(deadline: Optional[float]) -> int:
    """The wait_seconds of the next read of a wait() with this deadline
    (time.monotonic(), None: none): at most the API's limit, at least 1."""
    if deadline is None:
        return 30
    left = deadline - time.monotonic()
    return max(1, min(30, int(left) if left >= 1 else 1))
