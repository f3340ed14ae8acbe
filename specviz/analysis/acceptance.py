"""What measured acceptance says: rates with intervals, alpha, position independence, tokens/call.

Counts a_i = rounds that kept draft i (a_0 = rounds). Per-position rate r_i = a_i / a_0
(P(draft i kept)); conditional rate c_i = a_i / a_(i-1) (kept, given drafts 1..i-1 were).
Under Leviathan et al.'s i.i.d. model every c_i is alpha and r_i = alpha^i; the pooled
estimate is alpha = sum a_i / sum a_(i-1) (kept over tried). Position independence is tested
by the likelihood ratio of "one alpha" against "a c_i per position": 2 sum_i [a_i ln(c_i /
alpha) + (a_(i-1) - a_i) ln((1 - c_i) / (1 - alpha))] ~ chi-square with k - 1 degrees of
freedom. Tokens per call at k' is E[1 + accepted] = 1 + sum_(i <= k') r_i.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import theory
from .record import Acceptance, Averages
from .stats import chi2_sf

Z95 = 1.959963984540054  # two-sided 95 % normal quantile
IID_LEVEL = 0.01  # p-value below which acceptance is called position-dependent


def wilson(x: float, n: float, *, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial share x / n:
    (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)."""
    if n <= 0:
        return (0.0, 1.0)
    p = x / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    den = 1 + z * z / n
    lo = 0.0 if x <= 0 else max(0.0, (centre - half) / den)
    hi = 1.0 if x >= n else min(1.0, (centre + half) / den)
    return (min(lo, p), max(hi, p))


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, x * np.log(np.where(y > 0, y, 1.0)), 0.0)


def iid_test(a: np.ndarray, rounds: int) -> tuple[float, int, float]:
    """(LR statistic, degrees of freedom, p-value) of one alpha for every position."""
    kept = np.asarray(a, dtype=float)  # (k,)
    tried = np.concatenate([[rounds], kept[:-1]])  # (k,)
    live = tried > 0
    kept, tried = kept[live], tried[live]
    if len(kept) < 2:
        return (0.0, 0, 1.0)
    alpha = kept.sum() / tried.sum()
    c = kept / tried
    miss = tried - kept
    lr = 2 * float((_xlogy(kept, c) - _xlogy(kept, np.full_like(c, alpha))
                    + _xlogy(miss, 1 - c) - _xlogy(miss, np.full_like(c, 1 - alpha))).sum())
    df = len(kept) - 1
    return (max(lr, 0.0), df, chi2_sf(max(lr, 0.0), df))


@dataclass(frozen=True)
class AcceptanceReport:
    """Measured acceptance, read: rates, alpha, shape, prediction."""

    record: Acceptance | Averages
    rows: list[dict]  # per position: kept, rate, CI, conditional rate, CI, i.i.d. rate
    alpha: float  # pooled kept / tried (or, from totals alone, the i.i.d. alpha)
    alpha_ci: tuple[float, float] | None  # None: an average, no count to put one on
    lr: float  # likelihood-ratio statistic of position independence
    df: int
    p_value: float
    shape: str  # "i.i.d.", "decays", "rises", "varies", "assumed i.i.d."
    per_position: np.ndarray  # (k,) r_i used for prediction
    tail: float  # conditional rate used past the measured k

    @property
    def k(self) -> int:
        return self.record.k

    def tokens_per_call(self, k: int) -> float:
        """1 + sum_(i <= k) r_i; past the measured k, r_i = r_K tail^(i - K)."""
        r = self.per_position
        if k <= len(r):
            return 1.0 + float(r[:k].sum())
        extra = r[-1] * self.tail ** np.arange(1, k - len(r) + 1)
        return 1.0 + float(r.sum() + extra.sum())

    def extrapolates(self, k: int) -> bool:
        return k > self.k


def _shape(cond: np.ndarray, tried: np.ndarray, p: float) -> str:
    if p >= IID_LEVEL:
        return "i.i.d."
    i = np.arange(1, len(cond) + 1)
    slope = np.polyfit(i, cond, 1, w=np.sqrt(np.maximum(tried, 1)))[0]
    monotone = np.all(np.diff(cond) <= 0) or np.all(np.diff(cond) >= 0)
    if slope < 0:
        return "decays" if monotone or cond[-1] < cond[0] else "varies"
    return "rises" if monotone else "varies"


def _assumed_iid(acc: Acceptance | Averages) -> AcceptanceReport:
    """Totals or an average only: alpha from the draft acceptance rate under the i.i.d.
    model; an interval from the totals' counts, none from an average (no count behind it)."""
    k, to_alpha = acc.k, theory.alpha_from_draft_acceptance_rate
    alpha = float(to_alpha(acc.draft_acceptance_rate, k))
    ci = None if isinstance(acc, Averages) else \
        tuple(float(to_alpha(x, k)) for x in wilson(acc.accepted, acc.drafted))
    lo, hi = ci or (None, None)
    r = alpha ** np.arange(1, k + 1)
    rows = [{"position": i + 1, "kept": None, "rate": r[i], "rate_lo": None, "rate_hi": None,
             "conditional": alpha, "cond_lo": lo, "cond_hi": hi, "iid_rate": r[i]}
            for i in range(k)]
    return AcceptanceReport(acc, rows, alpha, ci, 0.0, 0, 1.0, "assumed i.i.d.", r, alpha)


def analyse(acc: Acceptance | Averages) -> AcceptanceReport:
    """Per-position and conditional rates with Wilson intervals, alpha, the i.i.d. test."""
    if acc.accepted_at is None:  # an average, or totals only
        return _assumed_iid(acc)
    a = acc.accepted_at.astype(float)  # (k,)
    tried = np.concatenate([[acc.rounds], a[:-1]])  # (k,)
    alpha = float(a.sum() / tried.sum())
    ci = wilson(a.sum(), tried.sum())
    lr, df, p = iid_test(a, acc.rounds)
    cond = np.divide(a, tried, out=np.zeros_like(a), where=tried > 0)
    rows = []
    for i in range(acc.k):
        r_lo, r_hi = wilson(a[i], acc.rounds)
        c_lo, c_hi = wilson(a[i], tried[i])
        rows.append({"position": i + 1, "kept": int(a[i]), "rate": a[i] / acc.rounds,
                     "rate_lo": r_lo, "rate_hi": r_hi, "conditional": cond[i],
                     "cond_lo": c_lo, "cond_hi": c_hi, "iid_rate": alpha ** (i + 1)})
    shape = _shape(cond, tried, p)
    tail = alpha if shape == "i.i.d." else float(cond[-1])
    return AcceptanceReport(acc, rows, alpha, ci, lr, df, p, shape, a / acc.rounds, tail)


def _p(p: float) -> str:
    return "p < 1e-12" if p < 1e-12 else f"p = {p:.3g}"


def summary(rep: AcceptanceReport) -> str:
    """One sentence on what the counts say."""
    acc = rep.record
    if isinstance(acc, Averages):
        return (f"An average from {acc.source}: mean acceptance length "
                f"{acc.mean_acceptance_length:.3f} at k = {acc.k}, so alpha = {rep.alpha:.3f} "
                "if every position is kept alike. No interval: an average carries no count "
                "of rounds; and no per-position law: it cannot show how acceptance falls "
                "with the position.")
    lo, hi = rep.alpha_ci
    head = (f"{acc.rounds:,} rounds of k = {acc.k} from {acc.source}: alpha = {rep.alpha:.3f} "
            f"(95% CI {lo:.3f}-{hi:.3f}), mean acceptance length "
            f"{acc.mean_acceptance_length:.3f}, draft acceptance rate "
            f"{acc.draft_acceptance_rate:.3f}.")
    if rep.shape == "assumed i.i.d.":
        return head + (" Only totals were given, so acceptance is taken to be the same at "
                       "every position (it cannot be tested).")
    if rep.shape == "i.i.d.":
        return head + (f" Acceptance is consistent with position independence (likelihood "
                       f"ratio {rep.lr:.1f} on {rep.df} df, {_p(rep.p_value)}).")
    how = {"decays": "decays with the position", "rises": "rises with the position",
           "varies": "varies with the position"}[rep.shape]
    return head + (f" Acceptance {how}: not i.i.d. (likelihood ratio {rep.lr:.1f} on "
                   f"{rep.df} df, {_p(rep.p_value)}), so predictions use the measured "
                   "per-position rates, not alpha^i.")
