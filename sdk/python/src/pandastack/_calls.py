"""Every REST route the SDK calls, described once as a :class:`Call`: the
request (method, path, query, body, deadline, accepted statuses) and the
decoding of its JSON answer into the SDK's models. The blocking and the
asyncio clients run the same Call objects through their transports
(``Transport.call`` / ``AsyncTransport.call``), so both send the same requests
and return the same objects. Routes: docs/api.md.

Nothing here does I/O; argument errors (ValueError, TypeError) are raised when
a Call is built, before anything is sent.
"""
from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generic, List, Mapping, Optional, Sequence, Tuple, \
    TypeVar

from ._core import Body, Endpoint, Query, TimeoutArg, run_deadline
from .errors import CommandFailed, PandaStackError
from .models import (CodeContextInfo, CommandInfo, CommandOutput, DirListing, ExecResult,
                     Execution, FileEntry, SandboxInfo, SnapshotInfo, WriteInfo)

T = TypeVar("T")

# The value of Call.missing that means "a 404 is an error".
RAISE: Any = object()


def _none(_doc: Any) -> None:
    return None


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API request and the decoding of its answer.

    Attributes:
        method, path: the HTTP method and the API path (``/v1/...``).
        decode: turns the decoded JSON answer (None for an empty one) into the
            call's result; may raise (e.g. CommandFailed).
        query: query parameters. json_body: an object sent as JSON.
        body: raw bytes or a StreamBody (instead of json_body).
        headers: extra request headers.
        timeout: per-operation deadline in seconds, None for none, ``"default"``
            for the endpoint's.
        ok: the statuses that are a success.
        gone_on_retry_ok: (DELETE) a 404 on a retry is a success: the first
            attempt, whose answer was lost, already removed the thing.
        missing: the result when the API answers NotFoundError, or RAISE.
    """

    method: str
    path: str
    decode: Callable[[Any], T]
    query: Query = None
    json_body: Any = None
    body: Body = None
    headers: Optional[Mapping[str, str]] = None
    timeout: TimeoutArg = "default"
    ok: Tuple[int, ...] = (200, 201, 202, 204)
    gone_on_retry_ok: bool = False
    missing: Any = RAISE


def quote(segment: str) -> str:
    """A path segment, percent-encoded (``/`` included)."""
    return urllib.parse.quote(segment, safe="")


def sandbox_path(sandbox_id: str) -> str:
    """The API path of a sandbox."""
    return f"/v1/sandboxes/{quote(sandbox_id)}"


def context_path(sandbox_id: str, context_id: str) -> str:
    """The API path of a code context."""
    return f"{sandbox_path(sandbox_id)}/contexts/{quote(context_id)}"


def files_path(sandbox_id: str) -> str:
    """The API path of a sandbox's files."""
    return f"{sandbox_path(sandbox_id)}/fs"


# ---- sandboxes ---------------------------------------------------------------

def _created_sandbox(doc: Any) -> SandboxInfo:
    info = SandboxInfo.from_json(doc)
    if not info.id:
        raise PandaStackError("create answered without a sandbox id", "invalid_response")
    return info


def create_sandbox(ep: Endpoint, template: Optional[str], ttl_seconds: Optional[int],
                   env: Optional[Mapping[str, str]],
                   metadata: Optional[Mapping[str, str]],
                   network: Optional[Mapping[str, Any]] = None, snapshot: Optional[str] = None,
                   on_timeout: Optional[str] = None) -> Call[SandboxInfo]:
    """POST /v1/sandboxes: restore ``template``, or ``snapshot`` (then
    ``template`` may be None)."""
    body: Dict[str, Any] = {}
    if template is not None:
        body["template"] = template
    if snapshot is not None:
        body["snapshot"] = snapshot
    if not body:
        raise ValueError("give a template or a snapshot")
    if network is not None:
        body["network"] = _network_object(network)
    if on_timeout is not None:
        body["on_timeout"] = on_timeout
    if ttl_seconds is not None:
        body["ttl_seconds"] = ttl_seconds
    if env is not None:
        body["env"] = dict(env)
    if metadata is not None:
        body["metadata"] = dict(metadata)
    return Call("POST", "/v1/sandboxes", _created_sandbox, json_body=body,
                timeout=ep.create_deadline(), ok=(200, 201))


def connect_sandbox(sandbox_id: str) -> Call[SandboxInfo]:
    """GET /v1/sandboxes/{id} by id. Raises ValueError for an empty id."""
    if not isinstance(sandbox_id, str) or not sandbox_id:
        raise ValueError("sandbox_id must be a non-empty string (sbx_...)")
    return get_sandbox(sandbox_path(sandbox_id))


def get_sandbox(path: str) -> Call[SandboxInfo]:
    """GET the sandbox at ``path``."""
    return Call("GET", path, SandboxInfo.from_json)


def _sandbox_list(doc: Any) -> List[SandboxInfo]:
    items = doc.get("sandboxes") if isinstance(doc, dict) else None
    return [SandboxInfo.from_json(s) for s in items] if isinstance(items, list) else []


def list_sandboxes(status: Optional[str],
                   metadata: Optional[Mapping[str, str]]) -> Call[List[SandboxInfo]]:
    """GET /v1/sandboxes filtered by status and metadata pairs."""
    query: List[Tuple[str, str]] = []
    if status is not None:
        query.append(("status", status))
    for k, v in (metadata or {}).items():
        query.append((f"metadata.{k}", v))
    return Call("GET", "/v1/sandboxes", _sandbox_list, query=query)


def set_ttl(path: str, ttl_seconds: int) -> Call[SandboxInfo]:
    """POST .../ttl."""
    return Call("POST", path + "/ttl", SandboxInfo.from_json,
                json_body={"ttl_seconds": ttl_seconds})


def _network_object(network: Mapping[str, Any]) -> Dict[str, Any]:
    if not isinstance(network, Mapping):
        raise TypeError("network must be a mapping, e.g. {\"public_ports\": True}")
    return dict(network)


def _network_answer(doc: Any) -> Dict[str, Any]:
    return dict(doc) if isinstance(doc, dict) else {}


def update_network(path: str, network: Mapping[str, Any]) -> Call[Dict[str, Any]]:
    """PUT .../network: the sandbox's network settings from now on."""
    return Call("PUT", path + "/network", _network_answer, json_body=_network_object(network))


def port_host(sandbox_id: str, domain: Optional[str], port: int) -> Optional[str]:
    """The host name of ``port`` of the sandbox by the Host form (its id
    with ``sbx-``, a valid DNS label), or None without a proxy domain."""
    _check_port(port)
    if not domain:
        return None
    return f"{port}-{sandbox_id.replace('_', '-', 1)}.{domain}"


def port_url(ep: Endpoint, sandbox_id: str, domain: Optional[str], token: Optional[str],
             port: int, path: str, with_token: bool) -> str:
    """A URL of ``path`` on ``port`` of the sandbox: by host name when the
    daemon has a proxy domain (same scheme and port as the API URL), else by
    path under the API URL; with ``?access_token=`` when with_token."""
    if not isinstance(path, str):
        raise TypeError("path must be a string")
    host = port_host(sandbox_id, domain, port)
    rel = path.lstrip("/")
    if host:
        default = 443 if ep.https else 80
        netloc = host if ep.port == default else f"{host}:{ep.port}"
        url = f"{'https' if ep.https else 'http'}://{netloc}/{rel}"
    else:
        url = f"{ep.api_url}{sandbox_path(sandbox_id)}/ports/{port}/{rel}"
    if with_token:
        if not token:
            raise PandaStackError("this sandbox has no access token (its ports are reached "
                                  "with the team's key)", "no_access_token")
        sep = "&" if "?" in rel else "?"
        url += f"{sep}access_token={urllib.parse.quote(token)}"
    return url


def _check_port(port: int) -> None:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port must be an integer from 1 to 65535, got {port!r}")


def kill_sandbox(path: str) -> Call[None]:
    """DELETE the sandbox; one already gone is not an error."""
    return Call("DELETE", path, _none, ok=(200, 204), gone_on_retry_ok=True, missing=None)


# ---- snapshots, forks, pause and resume ------------------------------------------

def snapshot_path(snapshot_id: str) -> str:
    """The API path of a snapshot. Raises ValueError for an empty id."""
    if not isinstance(snapshot_id, str) or not snapshot_id:
        raise ValueError("snapshot_id must be a non-empty string (snap_...)")
    return f"/v1/snapshots/{quote(snapshot_id)}"


def take_snapshot(ep: Endpoint, path: str, name: Optional[str]) -> Call[SnapshotInfo]:
    """POST .../snapshots: capture the sandbox at ``path``; it keeps running."""
    body: Dict[str, Any] = {} if name is None else {"name": name}
    return Call("POST", path + "/snapshots", SnapshotInfo.from_json, json_body=body,
                timeout=ep.create_deadline(), ok=(200, 201))


def _fork_list(doc: Any) -> List[SandboxInfo]:
    out = _sandbox_list(doc)
    if not out or any(not s.id for s in out):
        raise PandaStackError("fork answered without sandboxes", "invalid_response")
    return out


def fork_sandbox(ep: Endpoint, path: str, count: int,
                 ttl_seconds: Optional[int]) -> Call[List[SandboxInfo]]:
    """POST .../fork: ``count`` (1-16) new sandboxes from one capture."""
    if isinstance(count, bool) or not isinstance(count, int):
        raise TypeError("count must be an int (1 to 16)")
    body: Dict[str, Any] = {"count": count}
    if ttl_seconds is not None:
        body["ttl_seconds"] = ttl_seconds
    return Call("POST", path + "/fork", _fork_list, json_body=body,
                timeout=ep.create_deadline(), ok=(200, 201))


def pause_sandbox(ep: Endpoint, path: str) -> Call[SandboxInfo]:
    """POST .../pause: capture, then end the VM; status ``paused``."""
    return Call("POST", path + "/pause", SandboxInfo.from_json, timeout=ep.create_deadline())


def resume_sandbox(ep: Endpoint, path: str, ttl_seconds: Optional[int] = None) -> Call[SandboxInfo]:
    """POST .../resume: restore a paused sandbox under its id, with a TTL of
    ``ttl_seconds`` when given (else what it had left; the daemon's default
    when it was paused at its TTL)."""
    body = {"ttl_seconds": ttl_seconds} if ttl_seconds is not None else None
    return Call("POST", path + "/resume", SandboxInfo.from_json, json_body=body,
                timeout=ep.create_deadline())


def _snapshot_list(doc: Any) -> List[SnapshotInfo]:
    items = doc.get("snapshots") if isinstance(doc, dict) else None
    return [SnapshotInfo.from_json(s) for s in items] if isinstance(items, list) else []


def list_snapshots(sandbox_id: Optional[str]) -> Call[List[SnapshotInfo]]:
    """GET /v1/snapshots, only those of ``sandbox_id`` when given."""
    query = [("sandbox_id", sandbox_id)] if sandbox_id is not None else []
    return Call("GET", "/v1/snapshots", _snapshot_list, query=query)


def get_snapshot(snapshot_id: str) -> Call[SnapshotInfo]:
    """GET /v1/snapshots/{id}."""
    return Call("GET", snapshot_path(snapshot_id), SnapshotInfo.from_json)


def delete_snapshot(snapshot_id: str) -> Call[None]:
    """DELETE /v1/snapshots/{id}; one already gone is not an error."""
    return Call("DELETE", snapshot_path(snapshot_id), _none, ok=(200, 204),
                gone_on_retry_ok=True, missing=None)


# ---- commands ------------------------------------------------------------------

def exec_body(cmd: str, timeout_seconds: Optional[float], env: Optional[Mapping[str, str]],
              cwd: Optional[str], stdin: Optional[str]) -> Dict[str, Any]:
    """The body of an exec (docs/api.md). Raises TypeError for a non-str cmd."""
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


def checked(result: ExecResult, check: bool) -> ExecResult:
    """``result``, or CommandFailed when ``check`` and it exited non-zero."""
    if check and result.exit_code != 0:
        raise CommandFailed(result)
    return result


def exec_command(ep: Endpoint, path: str, cmd: str, timeout_seconds: Optional[float],
                 check: bool, env: Optional[Mapping[str, str]], cwd: Optional[str],
                 stdin: Optional[str]) -> Call[ExecResult]:
    """POST .../exec: run a command and wait for it."""
    body = exec_body(cmd, timeout_seconds, env, cwd, stdin)
    return Call("POST", path + "/exec", lambda doc: checked(ExecResult.from_json(doc), check),
                json_body=body, timeout=run_deadline(ep, timeout_seconds), ok=(200,))


def command_path(sandbox_id: str, command_id: str) -> str:
    """The API path of a background command."""
    return f"{sandbox_path(sandbox_id)}/commands/{quote(command_id)}"


def start_command(path: str, cmd: str, timeout_seconds: Optional[float],
                  env: Optional[Mapping[str, str]], cwd: Optional[str]) -> Call[CommandInfo]:
    """POST .../exec with "background": true: start a command and return at
    once. No timeout applies unless ``timeout_seconds`` is given."""
    body = exec_body(cmd, timeout_seconds, env, cwd, None)
    body["background"] = True
    return Call("POST", path + "/exec", CommandInfo.from_json, json_body=body, ok=(201,))


def _command_list(doc: Any) -> List[CommandInfo]:
    items = doc.get("commands") if isinstance(doc, dict) else None
    return [CommandInfo.from_json(c) for c in items] if isinstance(items, list) else []


def list_commands(path: str) -> Call[List[CommandInfo]]:
    """GET .../commands: the sandbox's background commands, oldest first."""
    return Call("GET", path + "/commands", _command_list)


# The signals a background command may be sent (docs/api.md).
COMMAND_SIGNALS = ("SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def kill_command(path: str, signal: str) -> Call[CommandInfo]:
    """POST .../commands/{cid}/kill. Raises ValueError for another signal."""
    if signal not in COMMAND_SIGNALS:
        raise ValueError(f"signal must be one of {', '.join(COMMAND_SIGNALS)}, not {signal!r}")
    return Call("POST", path + "/kill", CommandInfo.from_json, json_body={"signal": signal},
                ok=(200,))


# The longest wait the API accepts for one output read, seconds.
OUTPUT_WAIT_MAX_S = 60


def command_output(ep: Endpoint, path: str, stdout_offset: int, stderr_offset: int,
                   wait_seconds: int, max_bytes: int) -> Call[CommandOutput]:
    """GET .../commands/{cid}/output from the given offsets, waiting up to
    ``wait_seconds`` (0 to 60) for something new."""
    for name, v in (("stdout_offset", stdout_offset), ("stderr_offset", stderr_offset),
                    ("wait_seconds", wait_seconds), ("max_bytes", max_bytes)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name} must be an int >= 0, not {v!r}")
    if wait_seconds > OUTPUT_WAIT_MAX_S:
        raise ValueError(f"wait_seconds must be at most {OUTPUT_WAIT_MAX_S}")
    q: Dict[str, Any] = {"stdout_offset": stdout_offset, "stderr_offset": stderr_offset}
    if wait_seconds:
        q["wait_seconds"] = wait_seconds
    if max_bytes:
        q["max_bytes"] = max_bytes
    return Call("GET", path + "/output", CommandOutput.from_json, query=q,
                timeout=run_deadline(ep, float(wait_seconds)) if wait_seconds else "default",
                ok=(200,))


def command_stdin(path: str, data: Optional[str], eof: bool) -> Call[int]:
    """POST .../commands/{cid}/stdin; the result is the number of bytes
    written."""
    if data is not None and not isinstance(data, str):
        raise TypeError("data must be a str")
    body: Dict[str, Any] = {"eof": bool(eof)}
    if data is not None:
        body["data"] = data
    elif not eof:
        raise ValueError("give data, or eof=True")
    return Call("POST", path + "/stdin",
                lambda doc: doc.get("written", 0) if isinstance(doc, dict) else 0,
                json_body=body, ok=(200,))


def _event_stream(path: str, body: Dict[str, Any], ep: Endpoint) -> Call[None]:
    return Call("POST", path, _none, json_body=body, timeout=ep.stream_idle_deadline(),
                headers={"Accept": "text/event-stream"}, ok=(200,))


def exec_stream(ep: Endpoint, path: str, cmd: str, timeout_seconds: Optional[float],
                env: Optional[Mapping[str, str]], cwd: Optional[str],
                stdin: Optional[str]) -> Call[None]:
    """POST .../exec_stream: a command's output as Server-Sent Events (read
    with ``_streams.ExecStream``)."""
    return _event_stream(path + "/exec_stream", exec_body(cmd, timeout_seconds, env, cwd, stdin),
                         ep)


def run_code_once(ep: Endpoint, path: str, code: str, language: str,
                  timeout_seconds: Optional[float]) -> Call[ExecResult]:
    """POST .../run_code: code in a fresh process."""
    body: Dict[str, Any] = {"code": code, "language": language}
    if timeout_seconds is not None:
        body["timeout_seconds"] = timeout_seconds
    return Call("POST", path + "/run_code", ExecResult.from_json, json_body=body,
                timeout=run_deadline(ep, timeout_seconds), ok=(200,))


# ---- code contexts ---------------------------------------------------------------

def _created_context(doc: Any) -> CodeContextInfo:
    info = CodeContextInfo.from_json(doc)
    if not info.id:
        raise PandaStackError("context create answered without an id", "invalid_response")
    return info


def create_context(ep: Endpoint, path: str, language: str, cwd: Optional[str],
                   env: Optional[Mapping[str, str]],
                   notebook: Optional[str] = None) -> Call[CodeContextInfo]:
    """POST .../contexts: start a kernel (``notebook``: its notebook file,
    ``""`` for none, None for the default)."""
    body: Dict[str, Any] = {"language": language}
    if cwd is not None:
        body["cwd"] = cwd
    if env is not None:
        body["env"] = dict(env)
    if notebook is not None:
        body["notebook"] = notebook
    return Call("POST", path + "/contexts", _created_context, json_body=body,
                timeout=ep.create_deadline(), ok=(200, 201))


def _context_list(doc: Any) -> List[CodeContextInfo]:
    items: Sequence[Any] = ()
    if isinstance(doc, dict) and isinstance(doc.get("contexts"), list):
        items = doc["contexts"]
    elif isinstance(doc, list):
        items = doc
    return [i for i in (CodeContextInfo.from_json(c) for c in items) if i.id]


def list_contexts(path: str) -> Call[List[CodeContextInfo]]:
    """GET .../contexts: the open contexts (those with an id)."""
    return Call("GET", path + "/contexts", _context_list)


def _cell_body(ep: Endpoint, code: str, timeout_seconds: Optional[float]) -> Dict[str, Any]:
    run_deadline(ep, timeout_seconds)  # the argument checks
    body: Dict[str, Any] = {"code": code}
    if timeout_seconds is not None:
        body["timeout_seconds"] = timeout_seconds
    return body


def run_cell(ep: Endpoint, path: str, code: str,
             timeout_seconds: Optional[float]) -> Call[Execution]:
    """POST .../contexts/{cid}/run_code: one cell, answered when it ends."""
    return Call("POST", path + "/run_code", Execution.from_json,
                json_body=_cell_body(ep, code, timeout_seconds),
                timeout=run_deadline(ep, timeout_seconds), ok=(200,))


def run_cell_stream(ep: Endpoint, path: str, code: str,
                    timeout_seconds: Optional[float]) -> Call[None]:
    """POST .../contexts/{cid}/run_code_stream: one cell as Server-Sent Events
    (read with ``_streams.CellStream``)."""
    return _event_stream(path + "/run_code_stream", _cell_body(ep, code, timeout_seconds), ep)


def interrupt_context(path: str) -> Call[None]:
    """POST .../interrupt."""
    return Call("POST", path + "/interrupt", _none, json_body={}, ok=(200, 204))


def restart_context(path: str) -> Call[None]:
    """POST .../restart."""
    return Call("POST", path + "/restart", _none, json_body={}, ok=(200, 204))


def close_context(path: str) -> Call[None]:
    """DELETE the context; one already gone is not an error."""
    return Call("DELETE", path, _none, ok=(200, 204), gone_on_retry_ok=True, missing=None)


# ---- files -------------------------------------------------------------------------

def write_file(base: str, path: str, body: Body) -> Call[WriteInfo]:
    """PUT .../fs?path=: create or replace a file."""
    return Call("PUT", base, lambda doc: WriteInfo.from_json(doc, path), query={"path": path},
                body=body, ok=(200, 201))


def read_file(base: str, path: str) -> Call[None]:
    """GET .../fs?path=: the file's bytes (the caller reads the body)."""
    return Call("GET", base, _none, query={"path": path},
                headers={"Accept": "application/octet-stream"}, ok=(200,))


def stat_file(base: str, path: str) -> Call[FileEntry]:
    """GET .../fs/stat."""
    return Call("GET", base + "/stat", FileEntry.from_json, query={"path": path})


def file_exists(base: str, path: str) -> Call[bool]:
    """A stat that answers True, or False for a 404."""
    return Call("GET", base + "/stat", lambda _doc: True, query={"path": path}, missing=False)


def list_dir(base: str, path: str) -> Call[DirListing]:
    """GET .../fs/list."""
    return Call("GET", base + "/list", lambda doc: DirListing.from_json(doc, path),
                query={"path": path})


def make_dir(base: str, path: str, parents: bool) -> Call[FileEntry]:
    """POST .../fs/mkdir."""
    return Call("POST", base + "/mkdir", FileEntry.from_json,
                json_body={"path": path, "parents": parents})


def remove_file(base: str, path: str, recursive: bool) -> Call[None]:
    """DELETE .../fs?path=[&recursive=true]."""
    query = {"path": path}
    if recursive:
        query["recursive"] = "true"
    return Call("DELETE", base, _none, query=query, ok=(200, 204), gone_on_retry_ok=True)
