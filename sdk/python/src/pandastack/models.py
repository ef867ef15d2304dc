"""Plain data objects returned by the SDK: exec results, code executions and
their rich results, sandbox and file descriptions.

Every ``from_json`` constructor accepts whatever the API sent: fields of the
wrong type are dropped (left at their default) instead of raising, so a newer
or odd daemon never crashes the client. The objects are immutable snapshots;
they hold no connection and are safe to share between threads.

Field names follow docs/api.md (``exit_code``, ``duration_ms``, ...).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional

__all__ = [
    "ExecResult",
    "Result",
    "ExecutionError",
    "Execution",
    "SandboxInfo",
    "FileEntry",
    "WriteInfo",
    "DirListing",
    "CodeContextInfo",
    "CommandInfo",
    "CommandOutput",
]


def _str(d: Mapping[str, Any], key: str, default: str = "") -> str:
    v = d.get(key)
    return v if isinstance(v, str) else default


def _opt_str(d: Mapping[str, Any], key: str) -> Optional[str]:
    v = d.get(key)
    return v if isinstance(v, str) else None


def _int(d: Mapping[str, Any], key: str, default: int = 0) -> int:
    v = d.get(key)
    if isinstance(v, bool):
        return default
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return default


def _opt_int(d: Mapping[str, Any], key: str) -> Optional[int]:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return int(v)


def _bool(d: Mapping[str, Any], key: str) -> bool:
    v = d.get(key)
    return v if isinstance(v, bool) else False


def _str_map(v: Any) -> Dict[str, str]:
    if not isinstance(v, dict):
        return {}
    return {k: s for k, s in v.items() if isinstance(k, str) and isinstance(s, str)}


@dataclass(frozen=True)
class ExecResult:
    """The outcome of ``exec``, ``exec_stream`` or ``run_code`` (one-shot).

    Attributes:
        stdout: the command's standard output (UTF-8; invalid bytes became U+FFFD).
        stderr: its standard error.
        exit_code: the exit status; ``128 + N`` when signal N killed it.
        duration_ms: wall-clock run time measured in the guest, in milliseconds.
        timed_out: True when ``timeout_seconds`` ended the command.
        signal: the signal number that killed it, or None.
        stdout_truncated / stderr_truncated: True when the daemon's output cap cut
            the stream (the text then ends with a truncation marker).
    """

    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0
    duration_ms: int = 0
    timed_out: bool = False
    signal: Optional[int] = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @classmethod
    def from_json(cls, d: Any, stdout: Optional[str] = None,
                  stderr: Optional[str] = None) -> "ExecResult":
        """Build from an API object; ``stdout``/``stderr`` override the object's
        (used by streams, whose final event carries no output)."""
        if not isinstance(d, dict):
            d = {}
        return cls(
            stdout=_str(d, "stdout") if stdout is None else stdout,
            stderr=_str(d, "stderr") if stderr is None else stderr,
            exit_code=_int(d, "exit_code", -1),
            duration_ms=_int(d, "duration_ms"),
            timed_out=_bool(d, "timed_out"),
            signal=_opt_int(d, "signal"),
            stdout_truncated=_bool(d, "stdout_truncated"),
            stderr_truncated=_bool(d, "stderr_truncated"),
        )


# The MIME-type fields of a Result, in the order ``formats()`` lists them.
_RESULT_FIELDS = ("text", "html", "markdown", "svg", "png", "jpeg", "latex",
                  "json", "javascript")


@dataclass(frozen=True)
class Result:
    """One rich output of a code-context cell: the cell's value (the main
    result) or one ``display()``.

    Every MIME type present has its field set; the others are None.

    Attributes:
        text: ``text/plain`` (the repr).
        html: ``text/html`` (e.g. a DataFrame's ``<table>``).
        markdown: ``text/markdown``.
        svg: ``image/svg+xml`` (XML text).
        png: ``image/png``, base64 without a ``data:`` prefix.
        jpeg: ``image/jpeg``, base64 without a prefix.
        latex: ``text/latex``.
        json: ``application/json`` (a decoded JSON value).
        javascript: ``application/javascript``.
        extra: every other MIME type, by MIME name (e.g. plotly's JSON).
        is_main_result: True for the cell's value, False for displays.
    """

    text: Optional[str] = None
    html: Optional[str] = None
    markdown: Optional[str] = None
    svg: Optional[str] = None
    png: Optional[str] = None
    jpeg: Optional[str] = None
    latex: Optional[str] = None
    json: Optional[Any] = None
    javascript: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)
    is_main_result: bool = False

    @property
    def chart(self) -> Optional[str]:
        """The result's primary image: ``png``, else ``jpeg``, else ``svg``
        (base64 for the raster formats, XML text for svg); None if it has none."""
        return self.png or self.jpeg or self.svg

    def formats(self) -> List[str]:
        """The names of the fields present (``"png"``, ``"html"``, ...), then the
        MIME names in ``extra``."""
        names = [n for n in _RESULT_FIELDS if getattr(self, n) is not None]
        return names + list(self.extra)

    def __str__(self) -> str:
        return self.text if self.text is not None else ""

    @classmethod
    def from_json(cls, d: Any) -> "Result":
        """Build from an API result object; never raises."""
        if not isinstance(d, dict):
            d = {}
        extra = d.get("extra")
        return cls(
            text=_opt_str(d, "text"),
            html=_opt_str(d, "html"),
            markdown=_opt_str(d, "markdown"),
            svg=_opt_str(d, "svg"),
            png=_opt_str(d, "png"),
            jpeg=_opt_str(d, "jpeg"),
            latex=_opt_str(d, "latex"),
            json=d.get("json"),
            javascript=_opt_str(d, "javascript"),
            extra=dict(extra) if isinstance(extra, dict) else {},
            is_main_result=_bool(d, "is_main_result"),
        )


@dataclass(frozen=True)
class ExecutionError:
    """The exception a code-context cell raised (or a timeout / kernel death).

    Attributes:
        name: the exception class name, e.g. ``"ZeroDivisionError"``.
        value: the exception's message.
        traceback: the formatted traceback (no ANSI colour codes), lines joined.
    """

    name: str = ""
    value: str = ""
    traceback: str = ""

    def __str__(self) -> str:
        head = f"{self.name}: {self.value}" if self.value else self.name
        return f"{head}\n{self.traceback}" if self.traceback else head

    @classmethod
    def from_json(cls, d: Any) -> Optional["ExecutionError"]:
        """Build from the API's ``error`` field; None when it is null/absent."""
        if not isinstance(d, dict):
            return None
        tb = d.get("traceback")
        if isinstance(tb, list):
            tb = "\n".join(x for x in tb if isinstance(x, str))
        elif not isinstance(tb, str):
            tb = ""
        return cls(name=_str(d, "name"), value=_str(d, "value"), traceback=tb)


@dataclass(frozen=True)
class Execution:
    """The outcome of ``CodeContext.run_code``: one notebook cell.

    Attributes:
        results: the rich outputs in the order the kernel produced them.
        stdout / stderr: everything the cell printed on each stream.
        error: the exception the cell raised, or None.
        exit_code: 0 when the cell succeeded, 1 when it raised.
        execution_count: the kernel's cell counter (None if not reported).
        duration_ms: run time in milliseconds.
    """

    results: List[Result] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    error: Optional[ExecutionError] = None
    exit_code: int = 0
    execution_count: Optional[int] = None
    duration_ms: int = 0

    @property
    def main_result(self) -> Optional[Result]:
        """The result that is the cell's value (``is_main_result``), or None."""
        for r in self.results:
            if r.is_main_result:
                return r
        return None

    @property
    def text(self) -> Optional[str]:
        """The main result's text (the repr of the cell's last expression), or
        None when the cell has no value."""
        r = self.main_result
        return r.text if r is not None else None

    @property
    def png(self) -> Optional[str]:
        """The first PNG image among the results (base64), or None."""
        for r in self.results:
            if r.png is not None:
                return r.png
        return None

    @classmethod
    def from_json(cls, d: Any) -> "Execution":
        """Build from an API Execution object; never raises."""
        if not isinstance(d, dict):
            d = {}
        raw = d.get("results")
        results = [Result.from_json(r) for r in raw] if isinstance(raw, list) else []
        error = ExecutionError.from_json(d.get("error"))
        return cls(
            results=results,
            stdout=_str(d, "stdout"),
            stderr=_str(d, "stderr"),
            error=error,
            exit_code=_int(d, "exit_code", 1 if error is not None else 0),
            execution_count=_opt_int(d, "execution_count"),
            duration_ms=_int(d, "duration_ms"),
        )


@dataclass(frozen=True)
class SandboxInfo:
    """A sandbox as the API describes it (docs/api.md, "Sandbox").

    Times are RFC 3339 UTC strings as sent by the API. ``network`` is its
    network settings (``public_ports``, and the egress policy); ``access_token``
    (opens its private exposed ports) and ``proxy_domain`` (the daemon's
    ``--proxy-domain``) come only with a create or a get of this one sandbox,
    and are None otherwise.
    """

    id: str
    template: str = ""
    status: str = ""
    reason: Optional[str] = None
    created_at: Optional[str] = None
    expires_at: Optional[str] = None
    ended_at: Optional[str] = None
    vcpus: int = 0
    memory_mib: int = 0
    metadata: Dict[str, str] = field(default_factory=dict)
    network: Dict[str, Any] = field(default_factory=dict)
    access_token: Optional[str] = None
    proxy_domain: Optional[str] = None
    on_timeout: str = "stop"

    @classmethod
    def from_json(cls, d: Any) -> "SandboxInfo":
        """Build from an API sandbox object; never raises."""
        if not isinstance(d, dict):
            d = {}
        return cls(
            id=_str(d, "id"),
            template=_str(d, "template"),
            status=_str(d, "status"),
            reason=_opt_str(d, "reason"),
            created_at=_opt_str(d, "created_at"),
            expires_at=_opt_str(d, "expires_at"),
            ended_at=_opt_str(d, "ended_at"),
            vcpus=_int(d, "vcpus"),
            memory_mib=_int(d, "memory_mib"),
            metadata=_str_map(d.get("metadata")),
            network=dict(d["network"]) if isinstance(d.get("network"), dict) else {},
            access_token=_opt_str(d, "access_token"),
            proxy_domain=_opt_str(d, "proxy_domain"),
            on_timeout=_str(d, "on_timeout", "stop"),
        )


@dataclass(frozen=True)
class SnapshotInfo:
    """A snapshot of a sandbox (docs/api.md, "Snapshot"): its memory, CPU and
    device state and its disk at one instant.

    Attributes:
        id: ``snap_`` + 20 hex digits; pass it to ``Sandbox.create(snapshot=...)``.
        sandbox_id: the sandbox it was taken of.
        template: that sandbox's template.
        created_at: RFC 3339 UTC.
        size_bytes: bytes its own files take on the host.
        name: the name given at capture, or None.
        parent: the team's snapshot it was taken on top of, or None.
    """

    id: str
    sandbox_id: str = ""
    template: str = ""
    created_at: Optional[str] = None
    size_bytes: int = 0
    name: Optional[str] = None
    parent: Optional[str] = None

    @classmethod
    def from_json(cls, d: Any) -> "SnapshotInfo":
        """Build from an API snapshot object; never raises."""
        if not isinstance(d, dict):
            d = {}
        return cls(
            id=_str(d, "id"),
            sandbox_id=_str(d, "sandbox_id"),
            template=_str(d, "template"),
            created_at=_opt_str(d, "created_at"),
            size_bytes=_int(d, "size_bytes"),
            name=_opt_str(d, "name"),
            parent=_opt_str(d, "parent"),
        )


@dataclass(frozen=True)
class FileEntry:
    """A file or directory in the sandbox (docs/api.md, "File entry").

    Attributes:
        name: the last path component.
        path: the absolute guest path.
        type: ``"file"``, ``"dir"``, ``"symlink"`` or ``"other"``.
        size: size in bytes.
        mode: permission bits (e.g. ``0o644``).
        mtime_ms: modification time, milliseconds since the Unix epoch.
    """

    name: str = ""
    path: str = ""
    type: str = "other"
    size: int = 0
    mode: int = 0
    mtime_ms: int = 0

    @classmethod
    def from_json(cls, d: Any) -> "FileEntry":
        """Build from an API file entry; never raises."""
        if not isinstance(d, dict):
            d = {}
        path = _str(d, "path")
        return cls(
            name=_str(d, "name", path.rsplit("/", 1)[-1]),
            path=path,
            type=_str(d, "type", "other"),
            size=_int(d, "size"),
            mode=_int(d, "mode"),
            mtime_ms=_int(d, "mtime_ms"),
        )


@dataclass(frozen=True)
class WriteInfo:
    """The outcome of a file write, upload or download.

    Attributes:
        path: the file written: the guest path for write/upload, the local path
            for download.
        size: bytes written.
    """

    path: str
    size: int = 0

    @classmethod
    def from_json(cls, d: Any, path: str) -> "WriteInfo":
        """Build from the API's ``{"path", "size"}``; ``path`` is the default."""
        if not isinstance(d, dict):
            d = {}
        return cls(path=_str(d, "path", path), size=_int(d, "size"))


@dataclass(frozen=True)
class DirListing:
    """A folder listing: its ``path``, its ``entries`` sorted by name (at most
    10000) and ``truncated`` (True when the folder has more). Iterating over a
    DirListing yields its entries."""

    path: str
    entries: List[FileEntry] = field(default_factory=list)
    truncated: bool = False

    def __iter__(self) -> Iterator[FileEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def from_json(cls, d: Any, path: str) -> "DirListing":
        """Build from the API's listing; never raises."""
        if not isinstance(d, dict):
            d = {}
        raw = d.get("entries")
        entries = [FileEntry.from_json(e) for e in raw] if isinstance(raw, list) else []
        return cls(path=_str(d, "path", path), entries=entries, truncated=_bool(d, "truncated"))


@dataclass(frozen=True)
class CodeContextInfo:
    """A code context as the API describes it: ``id`` (``ctx_...``),
    ``language``, and where the API gives them ``cwd``, ``kernel``
    (``"jupyter"``: rich results, or ``"fallback"``: plain text),
    ``language_version``, ``busy`` (a call runs or waits), ``created_at``
    (ISO 8601) and ``notebook`` (the notebook file its cells are kept in)."""

    id: str
    language: str = "python"
    cwd: Optional[str] = None
    kernel: Optional[str] = None
    language_version: Optional[str] = None
    busy: bool = False
    created_at: Optional[str] = None
    notebook: Optional[str] = None

    @classmethod
    def from_json(cls, d: Any) -> "CodeContextInfo":
        """Build from an API context object; never raises."""
        if not isinstance(d, dict):
            d = {}
        return cls(id=_str(d, "id"), language=_str(d, "language", "python"),
                   cwd=_opt_str(d, "cwd"), kernel=_opt_str(d, "kernel"),
                   language_version=_opt_str(d, "language_version"), busy=_bool(d, "busy"),
                   created_at=_opt_str(d, "created_at"), notebook=_opt_str(d, "notebook"))


@dataclass(frozen=True)
class CommandInfo:
    """A background command as the API describes it (docs/api.md, "Command"):
    ``id`` (``cmd_...``), ``pid`` (in the guest), ``cmd`` (its first 4096
    bytes), ``cwd``, ``started_at`` / ``ended_at`` (ISO 8601), ``running``,
    ``exit_code`` (``128 + N`` and ``signal`` N when signal N ended it; None
    while it runs), ``timed_out``, ``stdout_bytes`` / ``stderr_bytes``
    (written so far) and ``stdin_open``."""

    id: str
    pid: Optional[int] = None
    cmd: str = ""
    cwd: Optional[str] = None
    started_at: Optional[str] = None
    running: bool = False
    ended_at: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    timed_out: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdin_open: bool = False

    @classmethod
    def from_json(cls, d: Any) -> "CommandInfo":
        """Build from an API command object; never raises."""
        if not isinstance(d, dict):
            d = {}
        return cls(id=_str(d, "id"), pid=_opt_int(d, "pid"), cmd=_str(d, "cmd"),
                   cwd=_opt_str(d, "cwd"), started_at=_opt_str(d, "started_at"),
                   running=_bool(d, "running"), ended_at=_opt_str(d, "ended_at"),
                   exit_code=_opt_int(d, "exit_code"), signal=_opt_int(d, "signal"),
                   timed_out=_bool(d, "timed_out"), stdout_bytes=_int(d, "stdout_bytes"),
                   stderr_bytes=_int(d, "stderr_bytes"), stdin_open=_bool(d, "stdin_open"))


@dataclass(frozen=True)
class CommandOutput:
    """One read of a background command's output (docs/api.md,
    ``GET .../commands/{cid}/output``): the text of each stream from
    ``stdout_offset`` / ``stderr_offset`` (bytes; later than asked when the
    guest dropped older output: ``*_dropped`` bytes), the offsets to read
    from next, the bytes written so far (``*_total``) and the command."""

    stdout: str = ""
    stderr: str = ""
    stdout_offset: int = 0
    stderr_offset: int = 0
    next_stdout_offset: int = 0
    next_stderr_offset: int = 0
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    stdout_total: int = 0
    stderr_total: int = 0
    command: CommandInfo = field(default_factory=lambda: CommandInfo(id=""))

    @property
    def complete(self) -> bool:
        """True when the command ended and this read reached the end of both
        streams."""
        return (not self.command.running and self.next_stdout_offset >= self.stdout_total
                and self.next_stderr_offset >= self.stderr_total)

    @classmethod
    def from_json(cls, d: Any) -> "CommandOutput":
        """Build from an API output object; never raises."""
        if not isinstance(d, dict):
            d = {}
        return cls(stdout=_str(d, "stdout"), stderr=_str(d, "stderr"),
                   stdout_offset=_int(d, "stdout_offset"),
                   stderr_offset=_int(d, "stderr_offset"),
                   next_stdout_offset=_int(d, "next_stdout_offset"),
                   next_stderr_offset=_int(d, "next_stderr_offset"),
                   stdout_dropped=_int(d, "stdout_dropped"),
                   stderr_dropped=_int(d, "stderr_dropped"),
                   stdout_total=_int(d, "stdout_total"), stderr_total=_int(d, "stderr_total"),
                   command=CommandInfo.from_json(d.get("command")))
