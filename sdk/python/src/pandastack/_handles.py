"""What a blocking and an asyncio handle share that does no I/O: the state of
a sandbox handle (:class:`SandboxHandle`, the base of Sandbox and AsyncSandbox)
and of a code context handle (:class:`ContextHandle`, the base of CodeContext
and AsyncCodeContext), and their read-only views. The subclasses add the
transport and the calls.
"""
from __future__ import annotations

from typing import Optional

from . import _calls
from .models import CodeContextInfo, SandboxInfo


class SandboxHandle:
    """A sandbox as the client knows it.

    Attributes:
        id: the sandbox id (``sbx_...``).
        info: the last :class:`~pandastack.SandboxInfo` the API returned.
    """

    def __init__(self, info: SandboxInfo) -> None:
        self.info = info
        self.id = info.id
        self._path = _calls.sandbox_path(info.id)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(id={self.id!r}, template={self.info.template!r}, "
                f"status={self.info.status!r})")

    @property
    def template(self) -> str:
        """The template the sandbox was restored from."""
        return self.info.template

    @property
    def status(self) -> str:
        """The status when last seen: running, paused, stopped or error."""
        return self.info.status


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
