"""Typed errors of the PandaStack SDK.

Every error the SDK raises is a :class:`PandaStackError`. Errors that come from
the REST API carry the API's error ``code`` (e.g. ``"sandbox_not_found"``), its
``message`` and the HTTP ``status``; errors found on the client side (a
connection that failed, a client-side deadline) carry a client code and
``status`` ``None``.

Status mapping (docs/sdk-python.md, "Errors"):

======================  =========================================
401                     :class:`AuthenticationError`
404                     :class:`NotFoundError`
408, 504, deadline      :class:`TimeoutError`
429                     :class:`RateLimitError`
other 4xx / 5xx         :class:`SandboxError`
no connection           :class:`ConnectionError` (``code="connection_failed"``)
======================  =========================================

The TypeScript SDK (``@pandastack/sdk``) has the same classes and mapping.

:class:`CommandFailed` is raised by ``exec(..., check=True)`` when the command
exits non-zero; it carries the :class:`~pandastack.ExecResult` as ``.result``.
"""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Optional, Tuple, Type

from ._api_errors import API_ERROR_STATUS

if TYPE_CHECKING:  # pragma: no cover
    from .models import ExecResult

__all__ = [
    "PandaStackError",
    "AuthenticationError",
    "NotFoundError",
    "TimeoutError",
    "RateLimitError",
    "SandboxError",
    "ConnectionError",
    "CommandFailed",
    "error_for_status",
    "error_for_code",
]


class PandaStackError(Exception):
    """Base class of every error raised by the SDK.

    Attributes:
        message: human-readable text (the API's ``error.message`` when the API
            answered).
        code: the API's machine-readable ``error.code`` (e.g. ``"unauthorized"``),
            or a client code such as ``"connection_failed"`` / ``"client_timeout"``.
        status: the HTTP status, or ``None`` when no HTTP answer was received.
    """

    message: str
    code: str
    status: Optional[int]

    def __init__(self, message: str, code: str = "error", status: Optional[int] = None) -> None:
        Exception.__init__(self, message)
        self.message = message
        self.code = code
        self.status = status

    def __str__(self) -> str:
        where = f"HTTP {self.status} " if self.status is not None else ""
        return f"{self.message} ({where}{self.code})"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(message={self.message!r}, code={self.code!r}, "
                f"status={self.status!r})")

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:  # keep pickling (multiprocessing) working
        return (type(self), (self.message, self.code, self.status))


class AuthenticationError(PandaStackError):
    """The API key is missing, malformed or unknown (HTTP 401)."""


class NotFoundError(PandaStackError):
    """The sandbox, context, file, key or template does not exist for this key (HTTP 404)."""


class TimeoutError(PandaStackError, builtins.TimeoutError):  # noqa: A001 (shadows on purpose)
    """A deadline passed: HTTP 408/504 from the API, or the client's own deadline.

    It is also a built-in :class:`TimeoutError`, so ``except TimeoutError`` with
    either class catches it.
    """

    def __init__(self, message: str, code: str = "timeout", status: Optional[int] = None) -> None:
        PandaStackError.__init__(self, message, code, status)

    def __str__(self) -> str:
        return PandaStackError.__str__(self)


class RateLimitError(PandaStackError):
    """A limit was reached, e.g. the team's sandbox count (HTTP 429)."""


class SandboxError(PandaStackError):
    """Any other API failure (other 4xx and 5xx), or no connection to the API."""


class ConnectionError(PandaStackError, builtins.ConnectionError):  # noqa: A001
    """The API could not be reached, or the connection broke before the answer
    was complete (code ``connection_failed``). It is also a built-in
    :class:`ConnectionError`."""

    def __init__(self, message: str, code: str = "connection_failed",
                 status: Optional[int] = None) -> None:
        PandaStackError.__init__(self, message, code, status)

    def __str__(self) -> str:
        return PandaStackError.__str__(self)


class CommandFailed(PandaStackError):
    """``exec(..., check=True)`` ran a command that exited non-zero.

    Attributes:
        result: the command's :class:`~pandastack.ExecResult` (stdout, stderr,
            exit_code, duration_ms).
    """

    result: "ExecResult"

    def __init__(self, result: "ExecResult", message: Optional[str] = None) -> None:
        if message is None:
            message = f"command exited with code {result.exit_code}"
        PandaStackError.__init__(self, message, "command_failed", None)
        self.result = result

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        return (type(self), (self.result, self.message))


def _class_for_status(status: Optional[int]) -> Type[PandaStackError]:
    """The error class of an HTTP error status (the table at the top)."""
    if status == 401:
        return AuthenticationError
    if status == 404:
        return NotFoundError
    if status in (408, 504):
        return TimeoutError
    if status == 429:
        return RateLimitError
    return SandboxError


def error_for_status(status: int, code: Optional[str], message: Optional[str]) -> PandaStackError:
    """Build the typed error for an HTTP error answer.

    Args:
        status: the HTTP status (>= 400).
        code: the API's ``error.code``, or None when the body had none.
        message: the API's ``error.message``, or None.
    Returns:
        a new error instance (the caller raises it); never raises.
    """
    code = code or f"http_{status}"
    message = message or f"HTTP {status}"
    return _class_for_status(status)(message, code, status)


def error_for_code(code: Optional[str], message: Optional[str],
                   status: Optional[int] = None) -> PandaStackError:
    """Build the typed error for an API error code that came without an error
    status (an ``error`` event inside a stream): the class of the status the
    API answers that code with (its table, docs/api.md "Errors"), e.g.
    ``sandbox_not_found`` (404) gives NotFoundError and ``agent_timeout`` (504)
    TimeoutError; a code the API does not define gives SandboxError. ``status``
    is kept on the error as given. Never raises."""
    code = code or "error"
    message = message or code
    return _class_for_status(API_ERROR_STATUS.get(code))(message, code, status)
