"""Statistics for checking samplers against exact laws, in pure NumPy (no SciPy).

A "law" is an array of probabilities (any shape, e.g. (V,) or (V, V) for a two-token joint)
that sums to 1; "counts" is an array of non-negative observation counts of the same shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .pasted import at_least

_SUM_TOL = 1e-6  # how far a law's total may stray from 1


# --------------------------------------------------------------------------- validation


def _as_nonneg(x: ArrayLike, name: str) -> NDArray[np.float64]:
    a = np.asarray(x, dtype=np.float64)
    if a.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.isnan(a).any():
        raise ValueError(f"{name} must not contain NaN")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite; got an infinite entry")
    if (a < 0).any():
        raise ValueError(f"{name} must be non-negative; got {float(a.min())!r}")
    return a


def _as_law(x: ArrayLike, name: str = "law") -> NDArray[np.float64]:
    a = _as_nonneg(x, name)
    total = float(a.sum())
    if abs(total - 1.0) > _SUM_TOL:
        raise ValueError(
            f"{name} must sum to 1 (a probability array); got sum {total!r}. "
            "For counts, pass empirical(counts)"
        )
    return a


def _same_shape(a: NDArray[np.float64], b: NDArray[np.float64], na: str, nb: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{na} and {nb} must have the same shape; got {a.shape} and {b.shape}")


# --------------------------------------------------------------------------- distances


def empirical(counts: ArrayLike) -> NDArray[np.float64]:
    """The empirical law counts / counts.sum() (same shape as counts)."""
    c = _as_nonneg(counts, "counts")
    total = c.sum()
    if total <= 0:
        raise ValueError("counts must contain at least one observation; got all zeros")
    return c / total


def tv(a: ArrayLike, b: ArrayLike) -> float:
    """Total variation distance TV(a, b) = 0.5 * sum |a - b| between two laws.

    Both must be probability arrays of the same shape; normalise counts with empirical().
    """
    pa = _as_law(a, "a")
    pb = _as_law(b, "b")
    _same_shape(pa, pb, "a", "b")
    return float(0.5 * np.abs(pa - pb).sum())


def _binomial_mad(n: int, p: NDArray[np.float64]) -> NDArray[np.float64]:
    """E|X - n p| for X ~ Binomial(n, p), elementwise (De Moivre's closed form).

    E|X - n p| = 2 m C(n, m) p^m (1 - p)^(n - m + 1), m = floor(n p) + 1, in log space.
    """
    out = np.zeros(p.shape)
    flat_p = p.ravel()
    flat_out = out.ravel()
    log_n_fact = math.lgamma(n + 1)
    for idx, pi in enumerate(flat_p):
        if pi <= 0.0 or pi >= 1.0:
            continue  # degenerate: X = n p surely
        m = math.floor(n * pi) + 1
        if m > n:
            continue  # only when n p rounds to n; the term is 0
        log_term = (
            math.log(2 * m)
            + log_n_fact
            - math.lgamma(m + 1)
            - math.lgamma(n - m + 1)
            + m * math.log(pi)
            + (n - m + 1) * math.log1p(-pi)
        )
        flat_out[idx] = math.exp(log_term)
    return flat_out.reshape(p.shape)


def sampling_floor(law: ArrayLike, n: int) -> float:
    """Exact E[TV(empirical law of n i.i.d. draws from law, law)].

    Each cell count is X_x ~ Binomial(n, p_x), so the floor is
    0.5 * sum_x E|X_x - n p_x| / n, with the binomial mean absolute deviation in closed form
    (De Moivre): E|X - n p| = 2 m C(n, m) p^m (1 - p)^(n - m + 1), m = floor(n p) + 1.
    This is the TV a perfect sampler shows at n samples.
    """
    p = _as_law(law)
    n = at_least(n, 1, "n", "number of samples")
    return float(0.5 * _binomial_mad(n, p).sum() / n)


def tv_threshold(law: ArrayLike, n: int, delta: float = 1e-6) -> float:
    """A pass/fail TV threshold derived from n, not tuned: floor + sqrt(ln(1/delta) / (2 n)).

    The empirical TV changes by at most 1/n when one of the n samples changes, so McDiarmid's
    inequality gives P(TV - E[TV] >= t) <= exp(-2 n t^2). With t = sqrt(ln(1/delta) / (2 n))
    an exact sampler exceeds the threshold with probability at most delta.
    """
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1); got {delta!r}")
    n = at_least(n, 1, "n", "number of samples")
    return sampling_floor(law, n) + math.sqrt(math.log(1.0 / delta) / (2.0 * n))


# --------------------------------------------------------------------------- chi-square

_EPS = 1e-15
_FPMIN = 1e-300
_MAX_ITER = 10_000


def _gamma_p_series(a: float, x: float) -> float:
    """Regularised lower incomplete gamma P(a, x) by its series (good for x < a + 1)."""
    ap = a
    term = total = 1.0 / a
    for _ in range(_MAX_ITER):
        ap += 1.0
        term *= x / ap
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_q_cf(a: float, x: float) -> float:
    """Regularised upper incomplete gamma Q(a, x) by modified Lentz continued fraction."""
    b = x + 1.0 - a
    c = 1.0 / _FPMIN
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_ITER):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < _FPMIN:
            d = _FPMIN
        c = b + an / c
        if abs(c) < _FPMIN:
            c = _FPMIN
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def chi2_sf(x: float, df: float) -> float:
    """Survival function of chi-square: P(X >= x) = Q(df/2, x/2), Q = upper regularised gamma.

    Series for x/2 < df/2 + 1, continued fraction otherwise (Numerical Recipes, §6.2).
    """
    x = float(x)
    df = float(df)
    if math.isnan(x) or math.isnan(df):
        raise ValueError(f"x and df must not be NaN; got x = {x!r}, df = {df!r}")
    if not (df > 0 and math.isfinite(df)):
        raise ValueError(f"df must be a finite number > 0; got {df!r}")
    if math.isinf(x):
        return 0.0
    a, hx = 0.5 * df, 0.5 * x
    if hx <= 0.0:  # includes subnormal x that halves to 0
        return 1.0
    if hx < a + 1.0:
        return min(1.0, max(0.0, 1.0 - _gamma_p_series(a, hx)))
    return min(1.0, max(0.0, _gamma_q_cf(a, hx)))


def gof_pvalue(counts: ArrayLike, law: ArrayLike) -> float:
    """Pearson chi-square goodness-of-fit p-value of counts against law (any shape).

    Statistic sum (O - E)^2 / E with E = n * law. Cells with E < 5 are pooled into one cell
    (if that pooled cell still has E < 5 it is merged into the smallest other cell);
    df = cells after pooling - 1, and df < 1 gives 1.0. Any observation in a cell where law
    is 0 is impossible under the law, so the p-value is 0.0.
    """
    o = _as_nonneg(counts, "counts")
    p = _as_law(law)
    _same_shape(o, p, "counts", "law")
    n = float(o.sum())
    if n <= 0:
        raise ValueError("counts must contain at least one observation; got all zeros")
    if (o[p == 0] > 0).any():
        return 0.0
    o, e = o[p > 0], n * p[p > 0]  # (cells,)
    small = e < 5.0
    obs = list(o[~small])
    exp = list(e[~small])
    if small.any():
        po, pe = float(o[small].sum()), float(e[small].sum())
        if pe < 5.0 and exp:
            j = int(np.argmin(exp))
            obs[j] += po
            exp[j] += pe
        else:
            obs.append(po)
            exp.append(pe)
    df = len(exp) - 1
    if df < 1:
        return 1.0
    oa, ea = np.asarray(obs), np.asarray(exp)
    stat = float(((oa - ea) ** 2 / ea).sum())
    return chi2_sf(stat, df)


# --------------------------------------------------------------------------- the verdict

GOF_ALPHA = 1e-3  # the goodness-of-fit test's level: an exact sampler fails it this often


@dataclass(frozen=True)
class Verdict:
    """Whether n decodes look like the target, by the stronger of two tests."""

    tv_above: bool  # the TV exceeds the threshold derived from n (tv_threshold)
    p_below: bool  # the goodness-of-fit p-value is below alpha
    text: str

    @property
    def consistent(self) -> bool:
        return not (self.tv_above or self.p_below)


def _p_text(p_value: float) -> str:
    return f"p = {p_value:.2g}" if p_value > 0 else "p < 1e-300"


def verdict(mc_tv: float, threshold: float, p_value: float,
            alpha: float = GOF_ALPHA) -> Verdict:
    """The sample differs from the target if either test says so: its TV is above the
    threshold derived from n, or its goodness-of-fit p-value is below alpha.

    An exact sampler fails the TV test with probability at most 1e-6 (tv_threshold's delta)
    and the chi-square test with about alpha, so it is flagged with about alpha + 1e-6.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}")
    tv_above, p_below = mc_tv > threshold, p_value < alpha
    reasons = (["TV above the threshold"] if tv_above else []) + (
        [_p_text(p_value)] if p_below else [])
    text = (f"differs from the target ({', '.join(reasons)})" if reasons
            else "consistent with the target")
    return Verdict(tv_above, p_below, text)

