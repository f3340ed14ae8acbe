"""Closed forms of speculative decoding (Leviathan, Kalman & Matias 2022, arXiv 2211.17192).

Names follow the paper: alpha = expected acceptance rate E[beta], k = drafted tokens per
round, c = draft cost per token as a fraction of one target call. Every function takes
scalars or NumPy arrays (broadcast) unless it says otherwise; scalar inputs give a float.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.tables import K_MAX

FloatOrArray = float | NDArray[np.float64]


# --------------------------------------------------------------------------- validation


def _fmt(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def _check_alpha(alpha: ArrayLike, name: str = "alpha") -> NDArray[np.float64]:
    a = np.asarray(alpha, dtype=np.float64)
    bad = np.isnan(a) | (a < 0.0) | (a > 1.0)
    if bad.any():
        raise ValueError(f"{name} must be in [0, 1]; got {_fmt(a[bad].flat[0])}")
    return a


def _check_k(k: ArrayLike) -> NDArray[np.int64]:
    try:
        kk = np.asarray(k, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"k must be an integer in [1, {K_MAX}]; got {k!r}") from err
    bad = ~np.isfinite(kk) | (kk != np.round(kk)) | (kk < 1) | (kk > K_MAX)
    if bad.any():
        raise ValueError(
            f"k must be an integer in [1, {K_MAX}] (drafted tokens per round); "
            f"got {_fmt(kk[bad].flat[0])}"
        )
    return kk.astype(np.int64)


def _check_c(c: ArrayLike) -> NDArray[np.float64]:
    cc = np.asarray(c, dtype=np.float64)
    bad = ~np.isfinite(cc) | (cc < 0.0)
    if bad.any():
        raise ValueError(
            f"c must be a finite number >= 0 (draft cost per token relative to one "
            f"target call); got {_fmt(cc[bad].flat[0])}"
        )
    return cc


def _check_tokens(tokens: ArrayLike, k: NDArray[np.int64]) -> NDArray[np.float64]:
    t = np.asarray(tokens, dtype=np.float64)
    t_b, k_b = np.broadcast_arrays(t, k)
    bad = np.isnan(t_b) | (t_b < 1.0 - 1e-9) | (t_b > k_b + 1 + 1e-9)
    if bad.any():
        i = np.flatnonzero(bad)[0]
        raise ValueError(
            f"tokens_per_call must be in [1, k + 1] (a round emits 1..k+1 tokens); "
            f"got {_fmt(t_b.flat[i])} with k = {int(k_b.flat[i])}"
        )
    return t


def _out(x: NDArray[np.float64]) -> FloatOrArray:
    """0-d results come back as a Python float, others as arrays."""
    return float(x) if np.ndim(x) == 0 else x


# --------------------------------------------------------------------------- closed forms


def expected_tokens(alpha: ArrayLike, k: ArrayLike) -> FloatOrArray:
    """E[tokens per target call] = (1 - alpha^(k+1)) / (1 - alpha) = sum_{i=0..k} alpha^i,
    which vLLM calls the mean acceptance length, 1 + accepted / drafts.

    Leviathan et al. 2022, eq. (1). Computed as the finite sum, so it is exactly k + 1 at
    alpha = 1 and stable near it.
    """
    a = _check_alpha(alpha)
    kk = _check_k(k)
    a, kk = np.broadcast_arrays(a, kk)
    i = np.arange(K_MAX + 1)  # (K_MAX+1,)
    powers = a[..., None] ** i  # (..., K_MAX+1)
    return _out(np.where(i <= kk[..., None], powers, 0.0).sum(axis=-1))


def round_speedup(tokens_per_call: ArrayLike, *, t1: ArrayLike, drafts: ArrayLike,
                  verify: ArrayLike) -> FloatOrArray:
    """S = E[tokens] t_1 / (t_drafts + t_verify): a round's tokens over its time (its drafting
    and its verify pass), against plain decoding's one token per step of t_1 (Leviathan et
    al. 2022, §3.4, with each pass's time given)."""
    return np.asarray(tokens_per_call) * t1 / (np.asarray(drafts) + verify)


def round_cost(k: ArrayLike, c: ArrayLike, verify: ArrayLike = 1.0) -> FloatOrArray:
    """A round's time in target calls: verify + k c, its verify pass (one call while
    memory-bound) and k draft calls at c each (Leviathan et al. 2022, §3.4)."""
    return _out(np.asarray(verify + _check_k(k) * _check_c(c), dtype=np.float64))


def speedup(tokens_per_call: ArrayLike, k: ArrayLike, c: ArrayLike,
            verify: ArrayLike = 1.0) -> FloatOrArray:
    """Walltime speedup from a measured tokens/call: S = tokens / (verify + k c), round_speedup
    with the verify pass priced as `verify` target calls (1, or roofline.verify_cost_ratio
    at a batch) and k draft calls at c each (Leviathan et al. 2022, §3.4).
    """
    kk = _check_k(k)
    cc = _check_c(c)
    t = _check_tokens(tokens_per_call, kk)
    return _out(np.asarray(round_speedup(t, t1=1.0, drafts=kk * cc, verify=verify),
                           dtype=np.float64))


def walltime_speedup(alpha: ArrayLike, k: ArrayLike, c: ArrayLike) -> FloatOrArray:
    """S = (1 - alpha^(k+1)) / ((1 - alpha)(1 + k c)).

    Leviathan et al. 2022, Thm 3.8.
    """
    kk = _check_k(k)
    cc = _check_c(c)
    tokens = np.asarray(expected_tokens(alpha, kk))
    return _out(np.asarray(tokens / round_cost(kk, cc), dtype=np.float64))


def break_even_cost(tokens_per_call: ArrayLike, k: ArrayLike) -> FloatOrArray:
    """c* = (tokens - 1) / k: the draft cost at which speedup = 1 (slower above it).

    Solves tokens / (1 + k c) = 1 (Leviathan et al. 2022, Thm 3.8 cost model).
    """
    kk = _check_k(k)
    t = _check_tokens(tokens_per_call, kk)
    return _out(np.asarray((t - 1.0) / kk, dtype=np.float64))


def best_k(alpha: float, c: float, k_max: int = K_MAX) -> tuple[int, float]:
    """argmax over integer k in 1..k_max of walltime_speedup(alpha, k, c), and its value.

    Scalars only. Ties (within 1e-12 relative) go to the smallest k.
    Leviathan et al. 2022, §3.4 (choosing gamma).
    """
    if np.ndim(alpha) or np.ndim(c):
        raise ValueError("best_k takes scalar alpha and c; loop over arrays yourself")
    kmax = int(_check_k(k_max))
    ks = np.arange(1, kmax + 1)  # (kmax,)
    s = np.asarray(walltime_speedup(float(alpha), ks, float(c)))  # (kmax,)
    best = s.max()
    i = int(np.flatnonzero(s >= best * (1.0 - 1e-12))[0])
    return int(ks[i]), float(s[i])


def per_position_acceptance(alpha: ArrayLike, k: int) -> NDArray[np.float64]:
    """P(draft position i accepted) = alpha^i for i = 1..k (Leviathan et al. 2022, §3.3).

    Returns shape alpha.shape + (k,).
    """
    a = _check_alpha(alpha)
    kk = int(_check_k(k))
    i = np.arange(1, kk + 1)  # (k,)
    return a[..., None] ** i  # (..., k)


def acceptance_histogram(alpha: ArrayLike, k: int) -> NDArray[np.float64]:
    """P(accepted = j) = alpha^j (1 - alpha) for j < k, alpha^k for j = k (capped geometric).

    Leviathan et al. 2022, §3.3. Returns shape alpha.shape + (k + 1,); sums to 1.
    """
    a = _check_alpha(alpha)
    kk = int(_check_k(k))
    j = np.arange(kk + 1)  # (k+1,)
    powers = a[..., None] ** j  # (..., k+1)
    hist = powers * (1.0 - a[..., None])
    hist[..., kk] = powers[..., kk]
    return hist


def draft_acceptance_rate(alpha: ArrayLike, k: ArrayLike) -> FloatOrArray:
    """accepted / drafted = alpha (1 - alpha^k) / (k (1 - alpha)); 1 at alpha = 1.

    vLLM's "draft acceptance rate". It is NOT alpha: acceptance stops at the first
    rejection, so later drafts are never accepted. Equals (expected_tokens - 1) / k.
    """
    kk = _check_k(k)
    tokens = np.asarray(expected_tokens(alpha, kk))
    return _out(np.asarray((tokens - 1.0) / kk, dtype=np.float64))


def alpha_from_draft_acceptance_rate(rate: ArrayLike, k: ArrayLike) -> FloatOrArray:
    """Invert draft_acceptance_rate(alpha, k) = rate for alpha, by bisection.

    The rate rises monotonically from 0 (alpha = 0) to 1 (alpha = 1), so the root is unique.
    """
    r = _check_alpha(rate, name="rate")
    kk = _check_k(k)
    r, kk = np.broadcast_arrays(r, kk)
    lo = np.zeros(r.shape)
    hi = np.ones(r.shape)
    for _ in range(80):  # 2^-80 is below float64 resolution on [0, 1]
        mid = 0.5 * (lo + hi)
        low = np.asarray(draft_acceptance_rate(mid, kk)) < r
        lo = np.where(low, mid, lo)
        hi = np.where(low, hi, mid)
    return _out(np.asarray(0.5 * (lo + hi), dtype=np.float64))
