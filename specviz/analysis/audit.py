"""The exactness audit: n draws of a sampler against the law it should follow, and one verdict.

Two tests on the counts (stats): TV(empirical, target) against the pass line derived from n,
tv_threshold = floor + sqrt(ln(1/delta) / 2n), and Pearson's chi-square goodness of fit at
GOF_ALPHA. A sampler differs from the target when either test says so (stats.verdict).

The verdict also knows whether the sampler is biased (its own exact law differs from the
target's by more than rounding, or the rule is lossy by construction), so it never calls a
biased sampler exact:

    biased, a test fails       caught
    exact, both pass           consistent with the target
    biased, both pass          not resolvable at this n (n_to_resolve says which n would)
    exact, a test fails        differs from the target (false alarm), with chance ~ alpha
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .stats import Verdict, empirical, gof_pvalue, sampling_floor, tv, tv_threshold, verdict

BIAS_MIN = 1e-12  # an exact TV at or below this is rounding: the sampler is exact here
N_RESOLVE_MAX = 10**12  # the search limit of n_to_resolve (floor arithmetic stays accurate)

CONSISTENT = "consistent with the target"  # exact, and both tests pass
CAUGHT = "caught"  # biased, and a test fails
UNRESOLVED = "not resolvable at this n"  # biased, yet both tests pass
FALSE_ALARM = "differs from the target (false alarm)"  # exact, yet a test fails: chance ~ alpha


@dataclass(frozen=True)
class Audit:
    """n draws against their target law: the two tests, the lines they are read against."""

    n: int  # draws counted
    mc_tv: float  # TV(empirical law, target)
    floor: float  # E[TV] of n exact draws from the target (stats.sampling_floor)
    threshold: float  # the pass line (stats.tv_threshold)
    p_value: float  # chi-square goodness of fit of the counts to the target
    biased: bool  # the sampler's own exact law is not the target's

    @property
    def at_floor(self) -> bool:
        """The TV test alone: the Monte Carlo TV is under the line derived from n."""
        return self.mc_tv <= self.threshold

    @property
    def test(self) -> Verdict:
        """Both tests, with their reasons (stats.verdict)."""
        return verdict(self.mc_tv, self.threshold, self.p_value)

    @property
    def verdict(self) -> str:
        """caught / consistent with the target / not resolvable at this n / false alarm."""
        if not self.test.consistent:
            return CAUGHT if self.biased else FALSE_ALARM
        return UNRESOLVED if self.biased else CONSISTENT


def audit(counts: ArrayLike, target: ArrayLike, *, biased: bool) -> Audit:
    """The audit of counts (any shape, the target's) against the target law."""
    counts = np.asarray(counts, dtype=np.float64)
    n = int(counts.sum())
    return Audit(n=n, mc_tv=tv(empirical(counts), target), floor=sampling_floor(target, n),
                 threshold=tv_threshold(target, n), p_value=gof_pvalue(counts, target),
                 biased=bool(biased))


def is_biased(exact_tv: float) -> bool:
    """An exact TV from the target beyond rounding (BIAS_MIN)."""
    return bool(exact_tv > BIAS_MIN)


def n_to_resolve(target: np.ndarray, bias: float, n_max: int = N_RESOLVE_MAX) -> int | None:
    """The smallest n whose pass threshold lies below `bias` (None if above n_max).

    E[TV of the Monte Carlo law] >= TV of its mean (Jensen), which is the rule's exact TV;
    so from this n on, a rule with this bias is expected above the threshold, i.e. caught.
    A sufficient n, not a necessary one: sampling noise adds to the bias, so a run often
    crosses the line sooner.
    The threshold (stats.tv_threshold) falls with n, so this is a bisection.
    """
    if not is_biased(bias):
        return None
    if tv_threshold(target, n_max) >= bias:
        return None
    lo, hi = 1, n_max  # threshold(lo) >= bias > threshold(hi), or lo already resolves
    if tv_threshold(target, lo) < bias:
        return lo
    while hi - lo > 1:
        mid = int(math.sqrt(lo * hi)) if hi > 4 * lo else (lo + hi) // 2
        mid = min(max(mid, lo + 1), hi - 1)
        if tv_threshold(target, mid) < bias:
            hi = mid
        else:
            lo = mid
    return hi
