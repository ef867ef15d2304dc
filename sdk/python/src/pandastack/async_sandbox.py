"""The :class:`AsyncSandbox`: :class:`~pandastack.Sandbox` for asyncio
programs, standard library only.

The same surface as Sandbox with awaitable methods (``await
AsyncSandbox.create(...)``, ``await sandbox.exec(...)``, ``async with``), the
same requests, results, errors, retries and deadlines: both clients run the
same call descriptions (``_calls``) and policy (``_core``), over different
transports. Requests go over HTTP/1.1 keep-alive connections that the sandbox
object pools, so many calls may be in flight at once from one event loop.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Literal, Mapping, Optional, Type, \
    TypeVar, Union, overload

from . import _calls
from ._async_http import AsyncTransport
from ._core import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ._handles import SandboxHandle
from ._streams import ExecStream
from .async_code_context import AsyncCodeContext
from .async_command import AsyncCommand
from .async_filesystem import AsyncFilesystem
from .errors import NotFoundError, PandaStackError
from .models import CommandInfo, ExecResult, SandboxInfo, SnapshotInfo
from .sandbox import DEFAULT_TEMPLATE

if TYPE_CHECKING:  # pragma: no cover
    from types import TracebackType

__all__ = ["AsyncSandbox"]

T = TypeVar("T")
OutputCallback = Callable[[str], Any]


async def _once(t: AsyncTransport, call: "_calls.Call[T]") -> T:
    """Run one call on a transport that ends with it (its connections closed)."""
    try:
        return await t.call(call)
    finally:
        t.close()


class AsyncSandbox(SandboxHandle):
    """A running sandbox, for asyncio. Do not construct it directly: use
    ``await AsyncSandbox.create(...)`` or ``await AsyncSandbox.connect(...)``.

    Attributes:
        id: the sandbox id (``sbx_...``).
        filesystem: its files (:class:`~pandastack.AsyncFilesystem`).
        info: the last :class:`~pandastack.SandboxInfo` the API returned.
        template, status: the template and the status when last seen
            (properties).
    """

    def __init__(self, info: SandboxInfo, transport: AsyncTransport) -> None:
        super().__init__(info, transport)
        self._t = transport
        self.filesystem = AsyncFilesystem(transport, info.id)

    # ---- lifecycle ----------------------------------------------------------
    @classmethod
    async def create(cls, template: str = DEFAULT_TEMPLATE, ttl_seconds: Optional[int] = None,
                     *, env: Optional[Mapping[str, str]] = None,
                     metadata: Optional[Mapping[str, str]] = None,
                     network: Optional[Mapping[str, Any]] = None,
                     snapshot: Optional[str] = None, on_timeout: Optional[str] = None,
                     api_key: Optional[str] = None, api_url: Optional[str] = None,
                     request_timeout: Optional[float] = DEFAULT_TIMEOUT,
                     max_retries: int = DEFAULT_MAX_RETRIES,
                     ca_file: Optional[str] = None) -> "AsyncSandbox":
        """Create a sandbox from a template or a snapshot, as
        :meth:`Sandbox.create` (the same arguments, result and errors)."""
        t = AsyncTransport(api_key, api_url, request_timeout, max_retries, ca_file)
        try:
            tpl = None if snapshot else template
            info = await t.call(_calls.create_sandbox(t, tpl, ttl_seconds, env, metadata, network,
                                                      snapshot, on_timeout))
        except BaseException:
            t.close()
            raise
        return cls(info, t)

    @classmethod
    async def connect(cls, sandbox_id: str, *, api_key: Optional[str] = None,
                      api_url: Optional[str] = None,
                      request_timeout: Optional[float] = DEFAULT_TIMEOUT,
                      max_retries: int = DEFAULT_MAX_RETRIES,
                      ca_file: Optional[str] = None) -> "AsyncSandbox":
        """Attach to an existing sandbox by id, as :meth:`Sandbox.connect`."""
        call = _calls.connect_sandbox(sandbox_id)
        t = AsyncTransport(api_key, api_url, request_timeout, max_retries, ca_file)
        try:
            info = await t.call(call)
        except BaseException:
            t.close()
            raise
        return cls(info, t)

    @classmethod
    async def list(cls, *, status: Optional[str] = None,
                   metadata: Optional[Mapping[str, str]] = None,
                   api_key: Optional[str] = None, api_url: Optional[str] = None,
                   request_timeout: Optional[float] = DEFAULT_TIMEOUT,
                   max_retries: int = DEFAULT_MAX_RETRIES,
                   ca_file: Optional[str] = None) -> List[SandboxInfo]:
        """The key's team's sandboxes, oldest first, as :meth:`Sandbox.list`."""
        t = AsyncTransport(api_key, api_url, request_timeout, max_retries, ca_file)
        return await _once(t, _calls.list_sandboxes(status, metadata))

    async def get_info(self) -> SandboxInfo:
        """Fetch the sandbox's current description (also stored in ``info``)."""
        self.info = await self._t.call(_calls.get_sandbox(self._path))
        return self.info

    async def is_running(self) -> bool:
        """True when the API reports the sandbox as running (False once it is
        gone)."""
        try:
            return (await self.get_info()).status == "running"
        except NotFoundError:
            return False

    async def set_ttl(self, ttl_seconds: int) -> SandboxInfo:
        """Make the sandbox expire ``ttl_seconds`` seconds from now, as
        :meth:`Sandbox.set_ttl`."""
        self.info = await self._t.call(_calls.set_ttl(self._path, ttl_seconds))
        return self.info

    async def update_network(self, network: Mapping[str, Any]) -> Dict[str, Any]:
        """Change the sandbox's network settings at once, as
        :meth:`Sandbox.update_network`."""
        answer: Dict[str, Any] = await self._t.call(_calls.update_network(self._path, network))
        return answer

    # ---- snapshots, forks, pause and resume ------------------------------------
    async def snapshot(self, name: Optional[str] = None) -> SnapshotInfo:
        """Capture the sandbox; it keeps running, as :meth:`Sandbox.snapshot`."""
        return await self._t.call(_calls.take_snapshot(self._t, self._path, name))

    async def fork(self, count: int = 1,
                   ttl_seconds: Optional[int] = None) -> "List[AsyncSandbox]":
        """``count`` new sandboxes from one capture, as :meth:`Sandbox.fork`
        (they share this object's connection pool)."""
        infos = await self._t.call(_calls.fork_sandbox(self._t, self._path, count,
                                                       ttl_seconds))
        return [AsyncSandbox(i, self._t) for i in infos]

    async def pause(self) -> SandboxInfo:
        """Capture the sandbox and end its VM, as :meth:`Sandbox.pause`."""
        self.info = await self._t.call(_calls.pause_sandbox(self._t, self._path))
        return self.info

    async def resume(self, ttl_seconds: Optional[int] = None) -> SandboxInfo:
        """Restore the paused sandbox under its id, as :meth:`Sandbox.resume`."""
        self.info = await self._t.call(_calls.resume_sandbox(self._t, self._path, ttl_seconds))
        return self.info

    @classmethod
    async def list_snapshots(cls, sandbox_id: Optional[str] = None, *,
                             api_key: Optional[str] = None, api_url: Optional[str] = None,
                             request_timeout: Optional[float] = DEFAULT_TIMEOUT,
                             max_retries: int = DEFAULT_MAX_RETRIES,
                             ca_file: Optional[str] = None) -> List[SnapshotInfo]:
        """The key's team's snapshots, as :meth:`Sandbox.list_snapshots`."""
        t = AsyncTransport(api_key, api_url, request_timeout, max_retries, ca_file)
        return await _once(t, _calls.list_snapshots(sandbox_id))

    @classmethod
    async def delete_snapshot(cls, snapshot_id: str, *, api_key: Optional[str] = None,
                              api_url: Optional[str] = None,
                              request_timeout: Optional[float] = DEFAULT_TIMEOUT,
                              max_retries: int = DEFAULT_MAX_RETRIES,
                              ca_file: Optional[str] = None) -> None:
        """Delete a snapshot, as :meth:`Sandbox.delete_snapshot`."""
        call = _calls.delete_snapshot(snapshot_id)
        t = AsyncTransport(api_key, api_url, request_timeout, max_retries, ca_file)
        await _once(t, call)

    async def kill(self) -> None:
        """Stop the sandbox and delete it (one already gone is not an error),
        then close the client's idle connections."""
        try:
            await self._t.call(_calls.kill_sandbox(self._path))
        finally:
            self._t.close()

    async def aclose(self) -> None:
        """Close the client's idle connections without touching the sandbox
        (it keeps running; a later call opens new connections)."""
        self._t.close()

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException], tb: "Optional[TracebackType]") -> None:
        if exc is None:
            await self.kill()
            return
        try:  # do not hide the error that ended the block
            await self.kill()
        except PandaStackError:
            pass

    # ---- commands -------------------------------------------------------------
    @overload
    async def exec(self, cmd: str, timeout_seconds: Optional[float] = None,
                   check: bool = False, env: Optional[Mapping[str, str]] = None,
                   cwd: Optional[str] = None, stdin: Optional[str] = None,
                   background: Literal[False] = False) -> ExecResult: ...

    @overload
    async def exec(self, cmd: str, timeout_seconds: Optional[float] = None,
                   check: bool = False, env: Optional[Mapping[str, str]] = None,
                   cwd: Optional[str] = None, stdin: Optional[str] = None, *,
                   background: Literal[True]) -> AsyncCommand: ...

    async def exec(self, cmd: str, timeout_seconds: Optional[float] = None,
                   check: bool = False, env: Optional[Mapping[str, str]] = None,
                   cwd: Optional[str] = None, stdin: Optional[str] = None,
                   background: bool = False) -> Union[ExecResult, AsyncCommand]:
        """Run ``/bin/sh -c cmd`` and wait for it, as :meth:`Sandbox.exec`;
        with ``background=True`` start it and return an :class:`AsyncCommand`
        at once."""
        if background:
            if stdin is not None or check:
                raise ValueError("background=True takes neither stdin (use send_stdin) nor check")
            info = await self._t.call(_calls.start_command(self._path, cmd, timeout_seconds, env,
                                                           cwd))
            return AsyncCommand(self._t, self.id, info)
        result: ExecResult = await self._t.call(_calls.exec_command(
            self._t, self._path, cmd, timeout_seconds, check, env, cwd, stdin))
        return result

    async def list_commands(self) -> List[AsyncCommand]:
        """The sandbox's background commands, as :meth:`Sandbox.list_commands`."""
        return [AsyncCommand(self._t, self.id, i) for i in
                await self._t.call(_calls.list_commands(self._path))]

    async def get_command(self, command_id: str) -> AsyncCommand:
        """A handle for a background command, as :meth:`Sandbox.get_command`."""
        c = AsyncCommand(self._t, self.id, CommandInfo(id=command_id))
        await c.output(max_bytes=1)
        return c

    async def exec_stream(self, cmd: str, on_stdout: Optional[OutputCallback] = None,
                          on_stderr: Optional[OutputCallback] = None,
                          timeout_seconds: Optional[float] = None, check: bool = False,
                          env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
                          stdin: Optional[str] = None,
                          on_start: Optional[Callable[[int], Any]] = None) -> ExecResult:
        """Run ``cmd`` with its output passed to the callbacks as it arrives,
        as :meth:`Sandbox.exec_stream`. The callbacks may be plain or
        coroutine functions (awaited, in order, before the next output is
        read); an exception from one ends the stream (the daemon kills the
        command) and propagates."""
        call = _calls.exec_stream(self._t, self._path, cmd, timeout_seconds, env, cwd, stdin)
        return await self._t.stream(call, ExecStream(check), {
            "stdout": on_stdout, "stderr": on_stderr, "start": on_start})

    async def run_code(self, code: str, language: str = "python",
                       timeout_seconds: Optional[float] = None) -> ExecResult:
        """Run ``code`` once in a fresh process, as :meth:`Sandbox.run_code`."""
        return await self._t.call(_calls.run_code_once(self._t, self._path, code, language,
                                                       timeout_seconds))

    # ---- code contexts ------------------------------------------------------------
    async def create_code_context(self, language: str = "python", cwd: Optional[str] = None,
                                  env: Optional[Mapping[str, str]] = None,
                                  notebook: Optional[str] = None) -> AsyncCodeContext:
        """Start a persistent kernel and return its AsyncCodeContext (usable as
        ``async with await sandbox.create_code_context() as ctx:``), as
        :meth:`Sandbox.create_code_context`."""
        info = await self._t.call(_calls.create_context(self._t, self._path, language, cwd,
                                                        env, notebook))
        return AsyncCodeContext(self._t, self.id, info.id, info.language, info)

    async def list_code_contexts(self) -> List[AsyncCodeContext]:
        """The sandbox's open code contexts."""
        infos = await self._t.call(_calls.list_contexts(self._path))
        return [AsyncCodeContext(self._t, self.id, i.id, i.language, i) for i in infos]
