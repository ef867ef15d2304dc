"""The :class:`Sandbox`: one microVM behind the PandaStack REST API.

Create one with :meth:`Sandbox.create`, attach to an existing one with
:meth:`Sandbox.connect`, and end it with :meth:`Sandbox.kill` (or use it as a
context manager). Methods map one-to-one to the routes of docs/api.md. A
Sandbox object may be used from several threads at once (each call opens its
own connection).
"""
from __future__ import annotations

import http.client
import socket
import urllib.parse
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence,
                    Tuple, Type)

from ._http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, Transport, _client_error
from ._sse import _call_user, _CallbackError, _event_json, iter_events
from .code_context import STREAM_IDLE_TIMEOUT_S, CodeContext, run_deadline
from .errors import (CommandFailed, ConnectionError, NotFoundError, PandaStackError,
                     error_for_code)
from .filesystem import Filesystem
from .models import CodeContextInfo, ExecResult, SandboxInfo

if TYPE_CHECKING:  # pragma: no cover
    from types import TracebackType

__all__ = ["Sandbox"]

DEFAULT_TEMPLATE = "code-interpreter"
# A create answers within the daemon's 30 s create deadline; wait a bit longer.
_CREATE_TIMEOUT_S = 90.0

OutputCallback = Callable[[str], Any]


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def _exec_body(cmd: str, timeout_seconds: Optional[float], env: Optional[Mapping[str, str]],
               cwd: Optional[str], stdin: Optional[str]) -> Dict[str, Any]:
    if not isinstance(cmd, str):
        raise TypeError("cmd must be a str (it runs as /bin/sh -c CMD)")
    body: Dict[str, Any] = {"cmd": cmd}
    if timeout_seconds is not None:
        body["timeout_seconds"] = timeout_seconds
    if env is not None:
        body["env"] = dict(env)
    if cwd is not None:
        body["cwd"] = cwd
    if stdin is not None:
        body["stdin"] = stdin
    return body


class Sandbox:
    """A running sandbox. Do not construct it directly: use :meth:`create`,
    :meth:`connect`.

    Attributes:
        id: the sandbox id (``sbx_...``).
        filesystem: its files (:class:`~pandastack.filesystem.Filesystem`).
        info: the last :class:`~pandastack.SandboxInfo` the API returned
            (refresh it with :meth:`get_info`).
    """

    def __init__(self, info: SandboxInfo, transport: Transport) -> None:
        self.info = info
        self.id = info.id
        self._t = transport
        self._path = f"/v1/sandboxes/{_quote(info.id)}"
        self.filesystem = Filesystem(transport, _quote(info.id))

    def __repr__(self) -> str:
        return (f"Sandbox(id={self.id!r}, template={self.info.template!r}, "
                f"status={self.info.status!r})")

    @property
    def template(self) -> str:
        """The template the sandbox was restored from."""
        return self.info.template

    @property
    def status(self) -> str:
        """The status when last seen: running, paused, stopped or error."""
        return self.info.status

    # ---- lifecycle ----------------------------------------------------------
    @classmethod
    def create(cls, template: str = DEFAULT_TEMPLATE, ttl_seconds: Optional[int] = None, *,
               env: Optional[Mapping[str, str]] = None,
               metadata: Optional[Mapping[str, str]] = None,
               api_key: Optional[str] = None, api_url: Optional[str] = None,
               request_timeout: Optional[float] = DEFAULT_TIMEOUT,
               max_retries: int = DEFAULT_MAX_RETRIES) -> "Sandbox":
        """Create a sandbox from a template (a snapshot restore, not a boot).

        Args:
            template: template name, e.g. ``"code-interpreter"`` (default) or
                ``"base"``.
            ttl_seconds: lifetime in seconds, after which the sandbox is stopped;
                None uses the daemon's default (300 s unless configured).
            env: default environment variables of every command.
            metadata: string labels, usable as filters in :meth:`list`.
            api_key: API key; default ``PANDASTACK_API_KEY``.
            api_url: API base URL; default ``PANDASTACK_API_URL``, then
                ``https://api.pandastack.ai``.
            request_timeout: client-side deadline of each socket operation in
                seconds (None: no deadline); long calls extend it as needed.
            max_retries: extra attempts where a retry is safe.
        Returns:
            the running Sandbox.
        Raises:
            AuthenticationError (no or bad key), NotFoundError
            (``template_not_found``), RateLimitError (``too_many_sandboxes``),
            SandboxError (``vm_start_failed``, ``template_stale``, ...),
            TimeoutError.
        """
        t = Transport(api_key, api_url, request_timeout, max_retries)
        body: Dict[str, Any] = {"template": template}
        if ttl_seconds is not None:
            body["ttl_seconds"] = ttl_seconds
        if env is not None:
            body["env"] = dict(env)
        if metadata is not None:
            body["metadata"] = dict(metadata)
        deadline = None if request_timeout is None else max(request_timeout, _CREATE_TIMEOUT_S)
        doc = t.request_json("POST", "/v1/sandboxes", json_body=body, timeout=deadline,
                             ok=(200, 201))
        info = SandboxInfo.from_json(doc)
        if not info.id:
            raise PandaStackError("create answered without a sandbox id", "invalid_response")
        return cls(info, t)

    @classmethod
    def connect(cls, sandbox_id: str, *, api_key: Optional[str] = None,
                api_url: Optional[str] = None,
                request_timeout: Optional[float] = DEFAULT_TIMEOUT,
                max_retries: int = DEFAULT_MAX_RETRIES) -> "Sandbox":
        """Attach to an existing sandbox of the key's team by id.

        Returns the Sandbox; raises NotFoundError when no such sandbox exists
        for this key. Connection arguments as for :meth:`create`."""
        if not isinstance(sandbox_id, str) or not sandbox_id:
            raise ValueError("sandbox_id must be a non-empty string (sbx_...)")
        t = Transport(api_key, api_url, request_timeout, max_retries)
        doc = t.request_json("GET", f"/v1/sandboxes/{_quote(sandbox_id)}")
        return cls(SandboxInfo.from_json(doc), t)

    @classmethod
    def list(cls, *, status: Optional[str] = None,
             metadata: Optional[Mapping[str, str]] = None,
             api_key: Optional[str] = None, api_url: Optional[str] = None,
             request_timeout: Optional[float] = DEFAULT_TIMEOUT,
             max_retries: int = DEFAULT_MAX_RETRIES) -> List[SandboxInfo]:
        """The key's team's sandboxes, oldest first.

        Args:
            status: only this status (``running``, ``paused``, ``stopped``,
                ``error``).
            metadata: only sandboxes whose metadata has every one of these pairs.
        Returns:
            a list of SandboxInfo (use :meth:`connect` to act on one).
        """
        t = Transport(api_key, api_url, request_timeout, max_retries)
        query: List[Tuple[str, str]] = []
        if status is not None:
            query.append(("status", status))
        for k, v in (metadata or {}).items():
            query.append((f"metadata.{k}", v))
        doc = t.request_json("GET", "/v1/sandboxes", query=query)
        items = doc.get("sandboxes") if isinstance(doc, dict) else None
        return [SandboxInfo.from_json(s) for s in items] if isinstance(items, list) else []

    def get_info(self) -> SandboxInfo:
        """Fetch the sandbox's current description (also stored in ``info``).
        Raises NotFoundError once the sandbox was deleted."""
        self.info = SandboxInfo.from_json(self._t.request_json("GET", self._path))
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
        doc = self._t.request_json("POST", self._path + "/ttl",
                                   json_body={"ttl_seconds": ttl_seconds})
        self.info = SandboxInfo.from_json(doc)
        return self.info

    def kill(self) -> None:
        """Stop the sandbox and delete it. Killing a sandbox that is already
        gone is not an error."""
        try:
            self._t.request_json("DELETE", self._path, ok=(200, 204), gone_on_retry_ok=True)
        except NotFoundError:
            pass

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
    def exec(self, cmd: str, timeout_seconds: Optional[float] = None, check: bool = False,
             env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
             stdin: Optional[str] = None) -> ExecResult:
        """Run ``/bin/sh -c cmd`` in the sandbox and wait for it to end.

        Args:
            cmd: the shell command.
            timeout_seconds: limit in seconds (fractions allowed, 0: none); at the
                limit the guest kills the command's process tree and the result
                has ``timed_out``. None: the daemon's default (60 s).
            check: raise CommandFailed when the exit code is not 0.
            env: extra environment variables (win over the sandbox's).
            cwd: working directory (absolute); default ``/workspace``.
            stdin: text sent as the command's standard input, then EOF.
        Returns:
            ExecResult(stdout, stderr, exit_code, duration_ms, ...). A non-zero
            exit is not an error unless ``check``.
        Raises:
            CommandFailed (check=True), NotFoundError, SandboxError
            (``sandbox_not_running``, ...), TimeoutError, AuthenticationError.
        """
        body = _exec_body(cmd, timeout_seconds, env, cwd, stdin)
        doc = self._t.request_json("POST", self._path + "/exec", json_body=body,
                                   timeout=run_deadline(self._t, timeout_seconds), ok=(200,))
        result = ExecResult.from_json(doc)
        if check and result.exit_code != 0:
            raise CommandFailed(result)
        return result

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
        body = _exec_body(cmd, timeout_seconds, env, cwd, stdin)
        idle = None if self._t.timeout is None else max(self._t.timeout, STREAM_IDLE_TIMEOUT_S)
        out: List[str] = []
        err: List[str] = []
        what = f"POST {self._path}/exec_stream"
        with self._t.open("POST", self._path + "/exec_stream", json_body=body, timeout=idle,
                          headers={"Accept": "text/event-stream"}) as resp:
            try:
                for ev in iter_events(resp):
                    if ev.event in ("stdout", "stderr"):
                        chunk = _event_json(ev.data).get("data")
                        if not isinstance(chunk, str):
                            continue
                        (out if ev.event == "stdout" else err).append(chunk)
                        cb = on_stdout if ev.event == "stdout" else on_stderr
                        if cb is not None:
                            _call_user(cb, chunk)
                    elif ev.event == "exit":
                        result = ExecResult.from_json(_event_json(ev.data),
                                                      stdout="".join(out), stderr="".join(err))
                        if check and result.exit_code != 0:
                            raise CommandFailed(result)
                        return result
                    elif ev.event == "error":
                        e = _event_json(ev.data).get("error")
                        e = e if isinstance(e, dict) else {}
                        code, msg = e.get("code"), e.get("message")
                        raise error_for_code(
                            code if isinstance(code, str) else "stream_error",
                            msg if isinstance(msg, str) else "the exec stream failed")
                    elif ev.event == "started":
                        pid = _event_json(ev.data).get("pid")
                        if on_start is not None and isinstance(pid, int) \
                                and not isinstance(pid, bool):
                            _call_user(on_start, pid)
                    # Unknown events carry nothing the result needs.
            except _CallbackError as e:
                raise e.error  # the caller's own exception, unchanged
            except PandaStackError:
                raise  # our TimeoutError is also an OSError: keep it as it is
            except socket.timeout as e:
                raise _client_error(e, what) from None
            except (OSError, http.client.HTTPException) as e:
                raise ConnectionError(f"{what}: stream cut short: {e}", "connection_failed",
                                      resp.status) from None
        raise ConnectionError(f"{what}: the stream ended before the command's exit",
                              "connection_failed", 200)

    def run_code(self, code: str, language: str = "python",
                 timeout_seconds: Optional[float] = None) -> ExecResult:
        """Run ``code`` once in a fresh process: ``language="python"`` runs it
        with the sandbox's python3, ``"shell"`` with /bin/sh. Nothing persists
        between calls (use :meth:`create_code_context` for that).

        Returns ExecResult(stdout, stderr, exit_code, duration_ms). Raises as
        :meth:`exec` (a non-zero exit is not an error)."""
        body: Dict[str, Any] = {"code": code, "language": language}
        if timeout_seconds is not None:
            body["timeout_seconds"] = timeout_seconds
        doc = self._t.request_json("POST", self._path + "/run_code", json_body=body,
                                   timeout=run_deadline(self._t, timeout_seconds), ok=(200,))
        return ExecResult.from_json(doc)

    # ---- code contexts ------------------------------------------------------------
    def create_code_context(self, language: str = "python", cwd: Optional[str] = None,
                            env: Optional[Mapping[str, str]] = None) -> CodeContext:
        """Start a persistent kernel in the sandbox and return its CodeContext
        (usable as ``with sandbox.create_code_context() as ctx:``).

        Args:
            language: the kernel's language (``"python"``).
            cwd: the kernel's working directory (absolute).
            env: environment variables of the kernel.
        Raises NotFoundError, SandboxError, TimeoutError."""
        body: Dict[str, Any] = {"language": language}
        if cwd is not None:
            body["cwd"] = cwd
        if env is not None:
            body["env"] = dict(env)
        deadline = None if self._t.timeout is None else max(self._t.timeout, _CREATE_TIMEOUT_S)
        doc = self._t.request_json("POST", self._path + "/contexts", json_body=body,
                                   timeout=deadline, ok=(200, 201))
        info = CodeContextInfo.from_json(doc)
        if not info.id:
            raise PandaStackError("context create answered without an id", "invalid_response")
        return CodeContext(self._t, self.id, info.id, info.language, info)

    def list_code_contexts(self) -> List[CodeContext]:
        """The sandbox's open code contexts."""
        doc = self._t.request_json("GET", self._path + "/contexts")
        items: Sequence[Any] = ()
        if isinstance(doc, dict) and isinstance(doc.get("contexts"), list):
            items = doc["contexts"]
        elif isinstance(doc, list):
            items = doc
        infos = [CodeContextInfo.from_json(c) for c in items]
        return [CodeContext(self._t, self.id, i.id, i.language, i) for i in infos if i.id]
