"""A stop check for long loops: the library asks, the app decides.

Long loops (Monte Carlo chunks, rounds, decodes, training levels) call check(). By default
nothing happens; an app installs a hook for the thread that runs a request (install) and
the hook raises (or returns True) when the work should end: its session has gone, the
server is shutting down. carry(fn) hands the calling thread's hook to a worker thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import wraps

_local = threading.local()


class Interrupted(RuntimeError):
    """Raised by check() when the installed hook says the work should stop."""


def install(hook: Callable[[], bool] | None) -> None:
    """Set this thread's hook (None removes it)."""
    _local.hook = hook


def current() -> Callable[[], bool] | None:
    return getattr(_local, "hook", None)


def check() -> None:
    """Raise Interrupted when this thread's hook says stop (the hook may raise itself)."""
    hook = current()
    if hook is not None and hook():
        raise Interrupted("the work was stopped")


def carry(fn: Callable) -> Callable:
    """fn wrapped to run under the calling thread's hook, in whatever thread calls it."""
    hook = current()

    @wraps(fn)
    def run(*args, **kwargs):
        before = current()
        install(hook)
        try:
            return fn(*args, **kwargs)
        finally:
            install(before)
    return run
