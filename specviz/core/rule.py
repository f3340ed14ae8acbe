"""The acceptance rule: the paper's two lines (Leviathan et al. 2022, Algorithm 1).

accept x ~ q with probability min(1, p(x) / q(x)); on rejection draw from
norm(max(0, p - q)). The accepted mass min(p, q) plus the residual mass
max(0, p - q) is p, which is why the output follows the target exactly.
"""

from __future__ import annotations

import numpy as np

RESIDUAL_EPS = 1e-12  # below this total mass the residual is treated as empty


def ratio(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """p / q elementwise, with q = 0 mapped to +inf where p > 0 and to 0 where p = 0.

    A token with q(x) = 0 is never drafted, so its entry only matters to callers
    that pass a draft from somewhere else (a one-hot or greedy draft).
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = p / q
    return np.where(q > 0, r, np.where(p > 0, np.inf, 0.0))


def accept_prob(p: np.ndarray, q: np.ndarray, x: int) -> float:
    """min(1, p(x) / q(x)): the chance that drafted token x is kept (0 when p(x) = 0)."""
    return float(min(1.0, ratio(p[x], q[x])))


def accepts(u: float | np.ndarray, p_x: float | np.ndarray, q_x: float | np.ndarray):
    """The coin: accept iff u < p(x) / q(x) with u ~ U[0, 1); strict, so p(x) = 0 never passes."""
    return np.asarray(u) < ratio(p_x, q_x)


def residual(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """norm(max(0, p - q)) over the last axis: the law of the token emitted on a rejection.

    Degenerate case: when max(0, p - q) has total mass below RESIDUAL_EPS (p <= q, up to
    rounding) we return norm(p), so that a draw from it still follows the target: for a
    row p of a law a rejection then has probability at most that mass; a p that is not a
    law (a masked row left unnormalised) is renormalised like every sampler does.
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    d = p - q  # (..., V)
    np.maximum(d, 0.0, out=d)
    mass = d.sum(axis=-1, keepdims=True)  # (..., 1)
    empty = mass < RESIDUAL_EPS
    if not empty.any():  # the common case, in two passes over V
        d /= mass
        return d
    total = p.sum(axis=-1, keepdims=True)  # (..., 1): 1 for a law
    law = np.where(total > 0, p / np.where(total > 0, total, 1.0), p)
    return np.where(empty, law, d / np.where(empty, 1.0, mass))


def overlap(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """beta = sum_x min(p(x), q(x)) = 1 - TV(p, q): the chance the first draft is accepted."""
    beta = np.minimum(np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)).sum(axis=-1)
    return np.minimum(beta, 1.0)  # a sum of laws' minima: past 1 only by rounding
