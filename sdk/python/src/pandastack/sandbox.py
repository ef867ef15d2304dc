"""The :class:`Sandbox`: one microVM behind the PandaStack REST API.

Create one with :meth:`Sandbox.create`, attach to an existing one with
:meth:`Sandbox.connect`, and end it with :meth:`Sandbox.kill` (or use it as a
context manager). Methods map one-to-one to the routes of docs/api.md. A
Sandbox object may be used from several threads at once (each call opens its
own connection).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Literal, Mapping, Optional, Type, \
    Union, overload

from . import _calls
from ._core import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ._handles import SandboxHandle
from ._http import Transport
from ._streams import ExecStream
from .code_context import CodeContext
from .command import Command
from .errors import NotFoundError, PandaStackError
from .filesystem import Filesystem
from .models import CommandInfo, ExecResult, SandboxInfo, SnapshotInfo

if TYPE_CHECKING:  # pragma: no cover
    from types import TracebackType

__all__ = ["Sandbox", "DEFAULT_TEMPLATE"]

DEFAULT_TEMPLATE = "code-interpreter"

OutputCallback = Callable[[str], Any]


class Sandbox(SandboxHandle):
    """A running sandbox. Do not construct it directly: use :meth:`create`,
    :meth:`connect`.

    Attributes:
        id: the sandbox id (``sbx_...``).
        filesystem: its files (:class:`~pandastack.filesystem.Filesystem`).
        info: the last :class:`~pandastack.SandboxInfo` the API returned
            (refresh it with :meth:`get_info`).
        template, status: the template and the status when last seen
            (properties).
    """

    def __init__(self, info: SandboxInfo, transport: Transport) -> None:
        super().__init__(info, transport)
        self._t = transport
        self.filesystem = Filesystem(transport, info.id)

    # ---- lifecycle ----------------------------------------------------------
    @classmethod
    def create(cls, template: str = DEFAULT_TEMPLATE, ttl_seconds: Optional[int] = None, *,
               env: Optional[Mapping[str, str]] = None,
               metadata: Optional[Mapping[str, str]] = None,
               network: Optional[Mapping[str, Any]] = None,
               snapshot: Optional[str] = None, on_timeout: Optional[str] = None,
               api_key: Optional[str] = None, api_url: Optional[str] = None,
               request_timeout: Optional[float] = DEFAULT_TIMEOUT,
               max_retries: int = DEFAULT_MAX_RETRIES,
               ca_file: Optional[str] = None) -> "Sandbox":
        """Create a sandbox from a template (a snapshot restore, not a boot).

        Args:
            template: template name, e.g. ``"code-interpreter"`` (default) or
                ``"base"``; not sent with a snapshot (its template is the
                snapshot's).
            ttl_seconds: lifetime in seconds, after which the sandbox is stopped;
                None uses the daemon's default (300 s unless configured).
            env: default environment variables of every command.
            metadata: string labels, usable as filters in :meth:`list`.
            network: the sandbox's network settings (docs/network.md), passed
                as the API's ``network`` object: ``{"public_ports": True}``
                serves its exposed ports without credentials; ``egress``,
                ``allow_out``, ``deny_out`` set its outbound policy.
            snapshot: a snapshot id (``snap_...``, see :meth:`snapshot`): the
                new sandbox has its processes, code contexts, files and
                environment, with a new id, clock and entropy.
            on_timeout: ``"stop"`` (default) or ``"pause"``: what the TTL does.
            api_key: API key; default ``PANDASTACK_API_KEY``.
            api_url: API base URL; default ``PANDASTACK_API_URL``, then
                ``http://127.0.0.1:8080``.
            request_timeout: client-side deadline of each socket operation in
                seconds (None: no deadline); long calls extend it as needed.
            max_retries: extra attempts where a retry is safe.
            ca_file: for an https URL, the PEM file of the CA certificates
                that the daemon's certificate is checked against, used instead
                of the system's store; default ``PANDASTACK_CA_FILE``, then the
                system's store.
        Returns:
            the running Sandbox.
        Raises:
            AuthenticationError (no or bad key), NotFoundError
            (``template_not_found``), RateLimitError (``too_many_sandboxes``),
            SandboxError (``vm_start_failed``, ``template_stale``, ...),
            TimeoutError.
        """
        t = Transport(api_key, api_url, request_timeout, max_retries, ca_file)
        tpl = None if snapshot else template
        return cls(t.call(_calls.create_sandbox(t, tpl, ttl_seconds, env, metadata, network,
                                                snapshot, on_timeout)), t)

    @classmethod
    def connect(cls, sandbox_id: str, *, api_key: Optional[str] = None,
                api_url: Optional[str] = None,
                request_timeout: Optional[float] = DEFAULT_TIMEOUT,
                max_retries: int = DEFAULT_MAX_RETRIES,
                ca_file: Optional[str] = None) -> "Sandbox":
        """Attach to an existing sandbox of the key's team by id.

        Returns the Sandbox; raises NotFoundError when no such sandbox exists
        for this key. Connection arguments as for :meth:`create`."""
        call = _calls.connect_sandbox(sandbox_id)
        t = Transport(api_key, api_url, request_timeout, max_retries, ca_file)
        return cls(t.call(call), t)

    @classmethod
    def list(cls, *, status: Optional[str] = None,
             metadata: Optional[Mapping[str, str]] = None,
             api_key: Optional[str] = None, api_url: Optional[str] = None,
             request_timeout: Optional[float] = DEFAULT_TIMEOUT,
             max_retries: int = DEFAULT_MAX_RETRIES,
             ca_file: Optional[str] = None) -> List[SandboxInfo]:
        """The key's team's sandboxes, oldest first.

        Args:
            status: only this status (``running``, ``paused``, ``stopped``,
                ``error``, ``lost``).
            metadata: only sandboxes whose metadata has every one of these pairs.
        Returns:
            a list of SandboxInfo (use :meth:`connect` to act on one).
        """
        t = Transport(api_key, api_url, request_timeout, max_retries, ca_file)
        return t.call(_calls.list_sandboxes(status, metadata))

    def get_info(self) -> SandboxInfo:
        """Fetch the sandbox's current description (also stored in ``info``).
        Raises NotFoundError once the sandbox was deleted."""
        self.info = self._t.call(_calls.get_sandbox(self._path))
        return self.info

    def is_running(self) -> bool:
        """True when the API reports the sandbox as running (False once it is
        gone)."""
        try:
            return self.get_info().status == "running"
        except NotFoundError:
            return False

    def set_ttl(self, ttl_seconds: int) -> SandboxInfo:
        """Make the sandbox expire ``ttl_seconds`` seconds from now. Returns
        the updated SandboxInfo. Raises SandboxError (``sandbox_not_running``)
        when it already stopped."""
        self.info = self._t.call(_calls.set_ttl(self._path, ttl_seconds))
        return self.info

    def update_network(self, network: Mapping[str, Any]) -> Dict[str, Any]:
        """Change the sandbox's network settings at once (``PUT
        .../network``, docs/network.md): ``network`` is the API's object,
        e.g. ``{"egress": "deny", "allow_out": ["pypi.org"]}``. Returns the
        settings now in force."""
        answer: Dict[str, Any] = self._t.call(_calls.update_network(self._path, network))
        return answer

    # ---- snapshots, forks, pause and resume ------------------------------------
    def snapshot(self, name: Optional[str] = None) -> SnapshotInfo:
        """Capture the sandbox (memory, processes, code contexts, files); it
        keeps running. Returns the SnapshotInfo; ``Sandbox.create(snapshot=
        info.id)`` makes sandboxes from it. Raises SandboxError
        (``sandbox_not_running``, ``host_disk_full``, ``snapshot_failed``),
        RateLimitError (``too_many_snapshots``)."""
        return self._t.call(_calls.take_snapshot(self._t, self._path, name))

    def fork(self, count: int = 1, ttl_seconds: Optional[int] = None) -> "List[Sandbox]":
        """``count`` (1-16) new sandboxes from one capture of this one, each
        with its variables, files and processes, and its own entropy. All or
        none: raises as :meth:`create` and :meth:`snapshot`."""
        infos = self._t.call(_calls.fork_sandbox(self._t, self._path, count, ttl_seconds))
        return [Sandbox(i, self._t) for i in infos]

    def pause(self) -> SandboxInfo:
        """Capture the sandbox and end its VM (its memory and CPU are
        released, its TTL stops counting); status ``paused``. Returns the
        SandboxInfo."""
        self.info = self._t.call(_calls.pause_sandbox(self._t, self._path))
        return self.info

    def resume(self, ttl_seconds: Optional[int] = None) -> SandboxInfo:
        """Restore a paused sandbox under the same id, with its code contexts,
        and a TTL of ``ttl_seconds`` (default: what it had left when paused;
        one paused at its TTL gets the daemon's default TTL).
        Raises SandboxError (``sandbox_not_paused``)."""
        self.info = self._t.call(_calls.resume_sandbox(self._t, self._path, ttl_seconds))
        return self.info

    @classmethod
    def list_snapshots(cls, sandbox_id: Optional[str] = None, *, api_key: Optional[str] = None,
                       api_url: Optional[str] = None,
                       request_timeout: Optional[float] = DEFAULT_TIMEOUT,
                       max_retries: int = DEFAULT_MAX_RETRIES,
                       ca_file: Optional[str] = None) -> List[SnapshotInfo]:
        """The key's team's snapshots, oldest first (only those of
        ``sandbox_id`` when given)."""
        t = Transport(api_key, api_url, request_timeout, max_retries, ca_file)
        return t.call(_calls.list_snapshots(sandbox_id))

    @classmethod
    def delete_snapshot(cls, snapshot_id: str, *, api_key: Optional[str] = None,
                        api_url: Optional[str] = None,
                        request_timeout: Optional[float] = DEFAULT_TIMEOUT,
                        max_retries: int = DEFAULT_MAX_RETRIES,
                        ca_file: Optional[str] = None) -> None:
        """Delete a snapshot (sandboxes made from it keep working). Raises
        SandboxError (``snapshot_in_use``) when a paused sandbox needs it."""
        call = _calls.delete_snapshot(snapshot_id)
        t = Transport(api_key, api_url, request_timeout, max_retries, ca_file)
        t.call(call)

    def kill(self) -> None:
        """Stop the sandbox and delete it. Killing a sandbox that is already
        gone is not an error."""
        self._t.call(_calls.kill_sandbox(self._path))

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException], tb: "Optional[TracebackType]") -> None:
        if exc is None:
            self.kill()
            return
        try:  # do not hide the error that ended the block
            self.kill()
        except PandaStackError:
            pass

    # ---- commands -------------------------------------------------------------
    @overload
    def exec(self, cmd: str, timeout_seconds: Optional[float] = None, check: bool = False,
             env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
             stdin: Optional[str] = None, background: Literal[False] = False) -> ExecResult: ...

    @overload
    def exec(self, cmd: str, timeout_seconds: Optional[float] = None, check: bool = False,
             env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
             stdin: Optional[str] = None, *, background: Literal[True]) -> Command: ...

    def exec(self, cmd: str, timeout_seconds: Optional[float] = None, check: bool = False,
             env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
             stdin: Optional[str] = None,
             background: bool = False) -> Union[ExecResult, Command]:
        """Run ``/bin/sh -c cmd`` in the sandbox and wait for it to end (or,
        with ``background=True``, start it and return a :class:`Command` at
        once).

        Args:
            cmd: the shell command.
            timeout_seconds: limit in seconds (fractions allowed, 0: none); at the
                limit the guest kills the command's process tree and the result
                has ``timed_out``. None: the daemon's default (60 s).
            check: raise CommandFailed when the exit code is not 0.
            env: extra environment variables (win over the sandbox's).
            cwd: working directory (absolute); default ``/workspace``.
            stdin: text sent as the command's standard input, then EOF.
            background: start the command and return a :class:`Command` handle
                (``.output()``, ``.wait()``, ``.kill()``, ``.send_stdin()``) at
                once; no timeout applies unless ``timeout_seconds`` is given.
                Not with ``stdin`` or ``check``.
        Returns:
            ExecResult(stdout, stderr, exit_code, duration_ms, ...). A non-zero
            exit is not an error unless ``check``. With ``background``: Command.
        Raises:
            CommandFailed (check=True), NotFoundError, SandboxError
            (``sandbox_not_running``, ...), TimeoutError, AuthenticationError.
        """
        if background:
            if stdin is not None or check:
                raise ValueError("background=True takes neither stdin (use send_stdin) nor check")
            info = self._t.call(_calls.start_command(self._path, cmd, timeout_seconds, env, cwd))
            return Command(self._t, self.id, info)
        return self._t.call(_calls.exec_command(self._t, self._path, cmd, timeout_seconds, check,
                                                env, cwd, stdin))

    def list_commands(self) -> List[Command]:
        """The sandbox's background commands (running, and the ended ones it
        still keeps), oldest first."""
        return [Command(self._t, self.id, i) for i in
                self._t.call(_calls.list_commands(self._path))]

    def get_command(self, command_id: str) -> Command:
        """A handle for the background command ``command_id`` (as listed, or
        from another client). Raises NotFoundError when the sandbox does not
        keep it."""
        c = Command(self._t, self.id, CommandInfo(id=command_id))
        c.output(max_bytes=1)
        return c

    def exec_stream(self, cmd: str, on_stdout: Optional[OutputCallback] = None,
                    on_stderr: Optional[OutputCallback] = None,
                    timeout_seconds: Optional[float] = None, check: bool = False,
                    env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
                    stdin: Optional[str] = None,
                    on_start: Optional[Callable[[int], Any]] = None) -> ExecResult:
        """Run ``cmd`` like :meth:`exec`, calling ``on_stdout`` / ``on_stderr``
        with each chunk of output (str) as it arrives (Server-Sent Events), and
        ``on_start`` once with the command's guest pid.

        The callbacks run on the calling thread; an exception from one ends the
        stream (the daemon then kills the command) and propagates. Returns the
        ExecResult with the whole output too. Raises as :meth:`exec`; an error
        that happens after the stream started (e.g. the sandbox stopped) raises
        the typed error for its API code.
        """
        call = _calls.exec_stream(self._t, self._path, cmd, timeout_seconds, env, cwd, stdin)
        return self._t.stream(call, ExecStream(check), {"stdout": on_stdout, "stderr": on_stderr,
                                                        "start": on_start})

    def run_code(self, code: str, language: str = "python",
                 timeout_seconds: Optional[float] = None) -> ExecResult:
        """Run ``code`` once in a fresh process: ``language="python"`` runs it
        with the sandbox's python3, ``"shell"`` with /bin/sh. Nothing persists
        between calls (use :meth:`create_code_context` for that).

        Returns ExecResult(stdout, stderr, exit_code, duration_ms). Raises as
        :meth:`exec` (a non-zero exit is not an error)."""
        return self._t.call(_calls.run_code_once(self._t, self._path, code, language,
                                                 timeout_seconds))

    # ---- code contexts ------------------------------------------------------------
    def create_code_context(self, language: str = "python", cwd: Optional[str] = None,
                            env: Optional[Mapping[str, str]] = None,
                            notebook: Optional[str] = None) -> CodeContext:
        """Start a persistent kernel in the sandbox and return its CodeContext
        (usable as ``with sandbox.create_code_context() as ctx:``).

        Args:
            language: the kernel's language (``"python"``).
            cwd: the kernel's working directory (absolute).
            env: environment variables of the kernel.
            notebook: the notebook file its cells are kept in (absolute; ``""``:
                none; None: ``/workspace/notebook.ipynb``, or
                ``/workspace/notebook-<id>.ipynb`` when another context has that one).
        Raises NotFoundError, SandboxError, TimeoutError."""
        info = self._t.call(_calls.create_context(self._t, self._path, language, cwd, env,
                                                  notebook))
        return CodeContext(self._t, self.id, info.id, info.language, info)

    def list_code_contexts(self) -> List[CodeContext]:
        """The sandbox's open code contexts."""
        infos = self._t.call(_calls.list_contexts(self._path))
        return [CodeContext(self._t, self.id, i.id, i.language, i) for i in infos]
