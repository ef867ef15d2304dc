"""The package as users get it: the documented surface exists, every public
name has a docstring and is in docs/sdk-python.md, and `pip install` of the
folder works offline (setuptools from Debian) and ships py.typed."""
import inspect
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import pandastack

SDK = pathlib.Path(__file__).resolve().parents[1]
DOC = SDK.parent.parent / "docs" / "sdk-python.md"

PUBLIC_CLASSES = [pandastack.Sandbox, pandastack.CodeContext, pandastack.Filesystem,
                  pandastack.AsyncSandbox, pandastack.AsyncCodeContext, pandastack.AsyncFilesystem,
                  pandastack.Execution, pandastack.Result, pandastack.ExecutionError,
                  pandastack.ExecResult, pandastack.SandboxInfo, pandastack.FileEntry,
                  pandastack.WriteInfo, pandastack.DirListing, pandastack.CodeContextInfo]


def public_members(cls):
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        yield name, member


def test_every_exported_name_is_documented():
    doc = DOC.read_text()
    for name in pandastack.__all__:
        assert f"`{name}" in doc or f"{name}`" in doc or name in doc, name


def test_every_public_method_is_documented_and_has_a_docstring():
    doc = DOC.read_text()
    for cls in PUBLIC_CLASSES:
        assert cls.__doc__, cls
        for name, member in public_members(cls):
            fn = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
            if isinstance(fn, property):
                fn = fn.fget
            if not callable(fn):
                continue
            assert fn.__doc__, f"{cls.__name__}.{name} has no docstring"
            if name != "from_json":
                assert f"`{name}" in doc or f"{name}(" in doc, f"{cls.__name__}.{name} not in the docs"


def test_the_documents_surface():
    s = inspect.signature(pandastack.Sandbox.create)
    assert list(s.parameters)[:2] == ["template", "ttl_seconds"]
    assert s.parameters["template"].default == "code-interpreter"
    assert s.parameters["ttl_seconds"].default is None
    e = inspect.signature(pandastack.Sandbox.exec)
    assert list(e.parameters)[:6] == ["self", "cmd", "timeout_seconds", "check", "env", "cwd"]
    assert e.parameters["check"].default is False
    r = inspect.signature(pandastack.Sandbox.run_code)
    assert r.parameters["language"].default == "python"
    st = inspect.signature(pandastack.Sandbox.exec_stream)
    assert {"on_stdout", "on_stderr"} <= set(st.parameters)
    for cls in (pandastack.AuthenticationError, pandastack.NotFoundError, pandastack.TimeoutError,
                pandastack.RateLimitError, pandastack.SandboxError, pandastack.ConnectionError,
                pandastack.CommandFailed):
        assert issubclass(cls, pandastack.PandaStackError)
    for attr in ("png", "jpeg", "svg", "html", "markdown", "json", "text", "latex", "extra",
                 "chart", "is_main_result"):
        assert hasattr(pandastack.Result(), attr), attr
    for attr in ("results", "stdout", "stderr", "error", "exit_code", "execution_count", "png",
                 "text"):
        assert hasattr(pandastack.Execution(), attr), attr


@pytest.mark.parametrize("sync,aio", [
    (pandastack.Sandbox, pandastack.AsyncSandbox),
    (pandastack.CodeContext, pandastack.AsyncCodeContext),
    (pandastack.Filesystem, pandastack.AsyncFilesystem),
])
def test_the_async_surface_is_the_sync_one_awaited(sync, aio):
    """Same public names, same parameters and defaults; every method of the
    asyncio class is a coroutine function. AsyncSandbox adds aclose()."""
    names = {n for n, _ in public_members(sync)}
    assert {n for n, _ in public_members(aio)} - {"aclose"} == names
    assert names  # the probe sees members
    for name in names:
        s, a = inspect.getattr_static(sync, name), inspect.getattr_static(aio, name)
        if isinstance(s, property):
            assert isinstance(a, property), name
            continue
        s_fn = s.__func__ if isinstance(s, classmethod) else s
        a_fn = a.__func__ if isinstance(a, classmethod) else a
        assert isinstance(a, classmethod) == isinstance(s, classmethod), name
        assert inspect.iscoroutinefunction(a_fn), name
        sp, ap = inspect.signature(s_fn).parameters, inspect.signature(a_fn).parameters
        assert [(p.name, p.default, p.kind) for p in sp.values()] == \
            [(p.name, p.default, p.kind) for p in ap.values()], name
    for dunder in ("__aenter__", "__aexit__"):
        assert hasattr(aio, dunder) == hasattr(sync, "__enter__")


def test_py_typed_is_in_the_source():
    assert (SDK / "src" / "pandastack" / "py.typed").exists()


def test_pip_install_offline(tmp_path):
    """`pip install --no-build-isolation` of a copy of the folder into a venv
    that sees Debian's setuptools: no network needed."""
    import importlib.util
    if not (importlib.util.find_spec("venv") and importlib.util.find_spec("setuptools")):
        pytest.skip("venv or setuptools missing")
    src = tmp_path / "sdk"
    shutil.copytree(SDK, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info",
                                                            ".pytest_cache"))
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)],
                   check=True, timeout=120)
    py = env_dir / "bin" / "python"
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    out = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-build-isolation",
                          "--no-deps", "--no-index", str(src)],
                         capture_output=True, text=True, timeout=300, env=env)
    if out.returncode != 0 and "No module named pip" in out.stderr:
        pytest.skip("pip missing")
    assert out.returncode == 0, out.stderr
    check = subprocess.run(
        [str(py), "-c", "import pandastack, pathlib; p = pathlib.Path(pandastack.__file__).parent;"
                        "print(p); assert (p / 'py.typed').exists(); print(pandastack.__version__)"],
        capture_output=True, text=True, timeout=60, env=env, cwd=str(tmp_path))
    assert check.returncode == 0, check.stderr
    assert str(env_dir) in check.stdout and pandastack.__version__ in check.stdout


def test_types_check_strictly_with_mypy():
    """The package's own annotations pass `mypy --strict` for Python 3.9 (Debian's
    mypy; skipped where it is not installed)."""
    mypy = shutil.which("mypy")
    if mypy is None:
        pytest.skip("mypy is not installed (apt-get install mypy)")
    out = subprocess.run([mypy, "--strict", "--python-version", "3.9", "--no-incremental",
                          "--cache-dir", os.devnull, str(SDK / "src" / "pandastack")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
