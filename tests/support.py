"""Shared test helpers (a plain module: tests/e2e has a conftest of its own)."""

from __future__ import annotations

import numpy as np


def random_tables(rng: np.random.Generator, V: int, zero_frac: float = 0.3):
    """A random pair whose rows have zeros in random places (each row keeps some mass)."""

    def table():
        M = rng.dirichlet(np.ones(V), size=V)
        M[rng.random((V, V)) < zero_frac] = 0.0
        empty = M.sum(axis=1) == 0
        M[empty, rng.integers(0, V, empty.sum())] = 1.0
        return M / M.sum(axis=1, keepdims=True)

    return table(), table()
