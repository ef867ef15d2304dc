"""PandaStack Python SDK: sandboxes (QEMU microVMs) behind the PandaStack REST API.

Quick start::

    from pandastack import Sandbox

    with Sandbox.create(template="code-interpreter", ttl_seconds=600) as sandbox:
        print(sandbox.exec("python -c 'print(2 ** 10)'").stdout)   # "1024\\n"
        with sandbox.create_code_context() as ctx:
            print(ctx.run_code("sum(range(101))").text)             # "5050"

For asyncio programs, :class:`AsyncSandbox` has the same surface with
awaitable methods (``async with await AsyncSandbox.create() as sandbox:``).

Configuration: pass ``api_key=`` / ``api_url=`` (and ``ca_file=`` for a daemon
whose https certificate the system does not trust) or set ``PANDASTACK_API_KEY``
/ ``PANDASTACK_API_URL`` / ``PANDASTACK_CA_FILE``. Reference: docs/sdk-python.md.
"""
__version__ = "0.1.0"

from .async_code_context import AsyncCodeContext  # noqa: E402
from .async_command import AsyncCommand  # noqa: E402
from .async_filesystem import AsyncFilesystem  # noqa: E402
from .async_sandbox import AsyncSandbox  # noqa: E402
from .code_context import CodeContext  # noqa: E402
from .command import Command  # noqa: E402
from .errors import (AuthenticationError, CommandFailed, ConnectionError,  # noqa: E402
                     NotFoundError, PandaStackError, RateLimitError, SandboxError, TimeoutError)
from .filesystem import Filesystem  # noqa: E402
from .models import (CodeContextInfo, CommandInfo, CommandOutput, DirListing,  # noqa: E402
                     ExecResult, Execution, ExecutionError, FileEntry, Result, SandboxInfo,
                     SnapshotInfo,
                     WriteInfo)
from ._core import DEFAULT_API_URL  # noqa: E402
from .sandbox import DEFAULT_TEMPLATE, Sandbox  # noqa: E402

__all__ = [
    "__version__",
    "DEFAULT_API_URL",
    "DEFAULT_TEMPLATE",
    "Sandbox",
    "CodeContext",
    "Filesystem",
    "AsyncSandbox",
    "AsyncCodeContext",
    "AsyncFilesystem",
    "Command",
    "AsyncCommand",
    "CommandInfo",
    "CommandOutput",
    "ExecResult",
    "Execution",
    "ExecutionError",
    "Result",
    "SandboxInfo",
    "SnapshotInfo",
    "FileEntry",
    "WriteInfo",
    "DirListing",
    "CodeContextInfo",
    "PandaStackError",
    "AuthenticationError",
    "NotFoundError",
    "TimeoutError",
    "RateLimitError",
    "SandboxError",
    "ConnectionError",
    "CommandFailed",
]
