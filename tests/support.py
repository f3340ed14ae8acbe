"""Shared test helpers (a plain module: tests/e2e has a conftest of its own)."""

from __future__ import annotations

import re

import numpy as np
from streamlit.testing.v1 import AppTest


def random_tables(rng: np.random.Generator, V: int, zero_frac: float = 0.3):
    """A random pair whose rows have zeros in random places (each row keeps some mass)."""

    def table():
        M = rng.dirichlet(np.ones(V), size=V)
        M[rng.random((V, V)) < zero_frac] = 0.0
        empty = M.sum(axis=1) == 0
        M[empty, rng.integers(0, V, empty.sum())] = 1.0
        return M / M.sum(axis=1, keepdims=True)

    return table(), table()


def run_page(path: str, timeout: float = 30, **params: str) -> AppTest:
    """Run a page under AppTest with URL parameters; it must raise nothing."""
    at = AppTest.from_file(path, default_timeout=timeout)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def chips(at: AppTest) -> str:
    """The round's token chips (HTML)."""
    return next(h.proto.body for h in at.html if 'class="sv-chips"' in h.proto.body)


def statuses(at: AppTest) -> list[str]:
    """Each chip's status, in order."""
    return re.findall(r'data-status="(\w+)"', chips(at))


def frame(at: AppTest) -> str:
    """The step counter and caption ("<b>Round r</b> · step s · kind ..." and the caption)."""
    return next(h.proto.body for h in at.html if 'class="sv-step"' in h.proto.body)
