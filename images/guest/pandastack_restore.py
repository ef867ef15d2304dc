"""pandastack_restore - run your own code in a code context after every restore.

A sandbox made from a snapshot (a fork, a create from a snapshot, a resume) or
handed out ready-made from a template's pool goes on from a copy of another
one's memory: anything a process drew at random before (keys, nonces, session
ids, seeded generators) is the same in every copy.  The agent reseeds what it
can reach (the kernel's RNG; in every code context Python's random, numpy's
global generator and OpenSSL's); a function registered here runs in the code
context's kernel after each such restore, before the sandbox is handed out, for
the rest: make new keys, reconnect, reseed your own generators.

    import pandastack_restore

    @pandastack_restore.register_after_restore
    def rekey():
        global key
        key = os.urandom(32)

    # or with arguments
    pandastack_restore.register_after_restore(server.rekey, force=True)

Functions run in the order they were registered, in the kernel's main thread,
with os.environ["PANDASTACK_SANDBOX_ID"] already naming the new sandbox (also
pandastack_restore.sandbox_id()).  Together they get 10 s; then they are
interrupted (KeyboardInterrupt).  One that raises does not stop the others;
the failures are reported in /run/pandastack/after-restore.json.  What they
print is not kept.

Registering works in the kernel process of a code context (the agent runs the
functions there; it learns of them from a mark this module leaves in the
kernel's private folder, PANDASTACK_KERNEL_DIR).  In any other process it has
no effect: use an executable in /etc/pandastack/after-restore.d/ instead
(docs/snapshots.md, "After-restore hooks").
"""

import os
import threading

__all__ = ["register_after_restore", "unregister_after_restore", "sandbox_id"]

_MARK = "after-restore"
_lock = threading.Lock()
_hooks = []


def _set_mark(present):
    folder = os.environ.get("PANDASTACK_KERNEL_DIR")
    if not folder:
        return
    path = os.path.join(folder, _MARK)
    try:
        if present:
            with open(path, "a"):
                pass
        else:
            os.unlink(path)
    except OSError:
        pass


def register_after_restore(func, *args, **kwargs):
    """Call func(*args, **kwargs) after every restore of this sandbox.

    Returns func, so it works as a decorator.
    """
    if not callable(func):
        raise TypeError("register_after_restore needs a callable, not %r" % (func,))
    with _lock:
        _hooks.append((func, args, kwargs))
        _set_mark(True)
    return func


def unregister_after_restore(func):
    """Forget every registration of func.  Returns how many there were."""
    with _lock:
        kept = [h for h in _hooks if h[0] is not func]
        n = len(_hooks) - len(kept)
        _hooks[:] = kept
        if not _hooks:
            _set_mark(False)
    return n


def sandbox_id():
    """The id of the sandbox this code runs in, as of the last restore
    (None before the first one)."""
    return os.environ.get("PANDASTACK_SANDBOX_ID")


def _name(func):
    return getattr(func, "__qualname__", None) or repr(func)


def _run_after_restore():
    """Called by the agent after a restore (not for users)."""
    with _lock:
        hooks = list(_hooks)
    failed = []
    for func, args, kwargs in hooks:
        try:
            func(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - every hook runs, failures are reported
            failed.append("%s: %s: %s" % (_name(func), type(e).__name__, e))
    if failed:
        raise RuntimeError("after-restore functions failed: " + "; ".join(failed))
