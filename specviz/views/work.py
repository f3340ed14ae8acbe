"""Which page computations are heavy (the app runs those in a bounded pool of workers)."""

from __future__ import annotations

from collections.abc import Callable


def heavy(fn: Callable) -> Callable:
    """Mark fn as heavy: at most a few such calls run at once across all sessions."""
    fn.heavy = True
    return fn
