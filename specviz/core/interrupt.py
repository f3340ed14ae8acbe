"""A stop check for long loops: the library asks, the app decides.

Long loops (Monte Carlo chunks, rounds, decodes, training levels) call check(). By default
nothing happens; an app installs a hook for the thread that runs a request (install) and
the hook raises (or returns True) when the work should end: its session has gone, the
server is shutting down. A time budget (budget(seconds)) backs the app's priced caps: past
its deadline check() raises OverBudget, and loops that can end with what they have done ask
overdue() and stop early instead. carry(fn) hands the calling thread's hook and deadline to
a worker thread. turn(): a point between pieces of long work where the app may let other
work go first (turns(fn) installs what it does; by default nothing).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps

_local = threading.local()


class Interrupted(RuntimeError):
    """Raised by check() when the installed hook says the work should stop."""


class OverBudget(ValueError):
    """Raised by check() past the deadline of budget(): the request ran out of its time.
    A ValueError, as a refusal of settings: the app says it on the page."""


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Work in the block (and in threads it carries to) stops `seconds` from now: check()
    raises OverBudget, overdue() turns True. Nested budgets keep the earlier deadline."""
    before = getattr(_local, "deadline", None)
    mine = (time.monotonic() + float(seconds), float(seconds))
    with _set("deadline", mine if before is None or mine[0] < before[0] else before):
        yield


@contextmanager
def _set(name: str, value: object) -> Iterator[None]:
    """This thread's `name` set to value in the block, restored after it."""
    before = getattr(_local, name, None)
    setattr(_local, name, value)
    try:
        yield
    finally:
        setattr(_local, name, before)


def overdue() -> bool:
    """Whether this thread's time budget is spent (False without one)."""
    d = getattr(_local, "deadline", None)
    return d is not None and time.monotonic() > d[0]


def goes_on(started: bool) -> bool:
    """Whether a loop that can end with what it has done takes another step: not once it has
    started and this thread's budget is spent; Interrupted when the hook says stop."""
    if started and overdue():
        return False
    check(deadline=False)
    return True


def turns(fn: Callable[[], object]):
    """turn() calls fn in the with-block (in this thread): the app hands its worker on."""
    return _set("turn", fn)


def turn() -> None:
    """Between two pieces of long work (a measurement's decodes): the app's turn, if any."""
    fn = getattr(_local, "turn", None)
    if fn is not None:
        fn()


def install(hook: Callable[[], bool] | None) -> None:
    """Set this thread's hook (None removes it)."""
    _local.hook = hook


def current() -> Callable[[], bool] | None:
    return getattr(_local, "hook", None)


def check(*, deadline: bool = True) -> None:
    """Raise Interrupted when this thread's hook says stop (the hook may raise itself), and
    OverBudget past this thread's deadline (deadline=False: a loop that asks overdue() and
    ends with what it has done)."""
    hook = current()
    if hook is not None and hook():
        raise Interrupted("the work was stopped")
    if deadline and overdue():
        seconds = _local.deadline[1]
        raise OverBudget(f"stopped after {seconds:g} s, the time one request may take; "
                         "lower k, n, the tree or the number of rounds")


def carry(fn: Callable) -> Callable:
    """fn wrapped to run under the calling thread's hook and deadline, in whatever thread
    calls it."""
    hook, deadline = current(), getattr(_local, "deadline", None)

    @wraps(fn)
    def run(*args, **kwargs):
        before, before_deadline = current(), getattr(_local, "deadline", None)
        install(hook)
        _local.deadline = deadline
        try:
            return fn(*args, **kwargs)
        finally:
            install(before)
            _local.deadline = before_deadline
    return run
