"""Observed counts against exact laws: lossless or not, the run's power, the nearest known law.

Public functions (all keyword-only past the first arguments):

    compare(observed, target, known=None, *, output=None, level=LEVEL,
            power=POWER, resolution=None) -> Comparison
        observed: {key: counts}          counts over a statistic's outcomes, any shape
        target:   {key: law}             the exact law each statistic must follow
        known:    {name: {key: law}}     the exact laws of known rules (correct and broken),
                                         over the same keys (a missing key is not used)
        output:   keys that decide lossless (default: every key of target); the others
                  (tokens per round, say) only help name the nearest known law
    check(counts, law, *, alpha, delta, name="") -> Check     one statistic, the two tests
    detectable_tv(law, n, *, delta, power=POWER) -> float      the smallest TV caught
    mean_and_error(counts, values) -> (mean, standard error)   e.g. tokens per round

Each statistic is tested twice (stats.verdict): its TV against the line derived from n,
tv_threshold = floor + sqrt(ln(1/delta) / 2n), and Pearson's chi-square at alpha. With m
output statistics, Bonferroni: alpha = (1 - TV_SHARE) level / m, delta = TV_SHARE level / m,
so a lossless sampler fails the whole comparison with probability at most `level`
(LEVEL = 1%, checked in tests/analysis/test_lawcompare.py by auditing exact draws many times).

Power: a law at TV b from the target has E[TV(empirical)] >= b (Jensen), and McDiarmid's lower
tail P(TV < E - t) <= exp(-2 n t^2); so b >= threshold + sqrt(ln(1 / (1 - power)) / 2n) is
caught with probability >= power by the TV test alone (chi-square often catches less).
A run is too small (verdict INCONCLUSIVE) when it passes yet some known biased law would not
be caught on any statistic, or (resolution given) no statistic would catch TV = resolution.

The nearest known law: every known law is tested like the target (the same levels, over all
its keys); the consistent ones are candidates; the best by log-likelihood is named when it is
the only one or beats the next by a likelihood ratio of 1/level; otherwise "biased, unlike any
known rule" (none consistent) or "like one of A, B" (not told apart at this n).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .audit import is_biased
from .stats import empirical, gof_pvalue, sampling_floor, tv, tv_threshold, verdict

LEVEL = 0.01  # the false-alarm level of one whole comparison (family-wise, Bonferroni)
TV_SHARE = 0.1  # the share of the level spent on the TV tests (the rest on chi-square)
POWER = 0.95  # "the smallest TV it would catch" is caught with at least this probability

LOSSLESS, BIASED, INCONCLUSIVE = "lossless", "biased", "too small to tell"
BAD_INPUT = "bad input"  # a verifier that could not be audited (verifieraudit)
UNLIKE = "biased, unlike any known rule"


@dataclass(frozen=True)
class Check:
    """One statistic's counts against one law: both tests and the lines they are read on."""

    name: str
    n: int  # observations
    tv: float  # TV(empirical, law)
    floor: float  # E[TV] of n exact draws (stats.sampling_floor)
    threshold: float  # the TV pass line at delta
    p_value: float  # chi-square goodness of fit
    alpha: float  # the chi-square level this check is read at
    detectable: float  # the smallest TV caught with probability >= POWER at this n

    @property
    def passed(self) -> bool:
        return verdict(self.tv, self.threshold, self.p_value, self.alpha).consistent


@dataclass(frozen=True)
class Match:
    """One known law against the counts: consistent or not, and how likely."""

    name: str
    consistent: bool
    loglik: float  # sum counts log law over every key (-inf: an observed cell it forbids)
    worst_tv: float  # the largest TV(empirical, law) over its keys
    exact_tv: float  # the largest exact TV(law, target) over the output keys (its bias)


@dataclass(frozen=True)
class Comparison:
    """The verdict of counts against a target and known laws."""

    checks: tuple[Check, ...]  # the output statistics against the target
    matches: tuple[Match, ...]  # every known law, in the order given
    verdict: str  # LOSSLESS | BIASED | INCONCLUSIVE
    like: tuple[str, ...]  # the nearest known law(s): one name, several if not told apart
    unseen: tuple[str, ...]  # known biased laws this run would not catch
    level: float

    @property
    def lossless(self) -> bool:
        return self.verdict == LOSSLESS

    @property
    def detectable(self) -> float:
        """The smallest TV this run catches on its most sensitive statistic."""
        return min(c.detectable for c in self.checks)

    @property
    def worst(self) -> Check:
        """The check furthest above its line (the one a summary quotes)."""
        return max(self.checks, key=lambda c: (not c.passed, c.tv - c.threshold))

    @property
    def behaves_like(self) -> str:
        """'like NAME', 'like one of A, B', or UNLIKE (biased); '' when not biased."""
        if self.verdict != BIASED:
            return ""
        if not self.like:
            near = max((m for m in self.matches if is_biased(m.exact_tv)),
                       key=lambda m: m.loglik, default=None)
            return UNLIKE + (f" (the closest, {near.name}, is ruled out at this n)"
                             if near is not None and math.isfinite(near.loglik) else "")
        return f"like {self.like[0]}" if len(self.like) == 1 else \
            f"like one of {', '.join(self.like)} (not told apart at this n)"


def detectable_tv(law: ArrayLike, n: int, *, delta: float, power: float = POWER) -> float:
    """threshold(delta) + sqrt(ln(1 / (1 - power)) / 2n): a law this far (TV) from `law`
    is caught by the TV test with probability >= power (see the module's docstring)."""
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1); got {power!r}")
    return tv_threshold(law, n, delta) + math.sqrt(math.log(1.0 / (1.0 - power)) / (2.0 * n))


def check(counts: ArrayLike, law: ArrayLike, *, alpha: float, delta: float,
          name: str = "", power: float = POWER) -> Check:
    """counts (any shape) against law (the same shape): TV, floor, line, p-value, power."""
    c = np.asarray(counts, dtype=np.float64)
    law = np.asarray(law, dtype=np.float64)
    n = int(c.sum())
    return Check(name=name, n=n, tv=tv(empirical(c), law), floor=sampling_floor(law, n),
                 threshold=tv_threshold(law, n, delta), p_value=gof_pvalue(c, law),
                 alpha=alpha, detectable=detectable_tv(law, n, delta=delta, power=power))


def _loglik(counts: np.ndarray, law: np.ndarray) -> float:
    seen = counts > 0
    if (law[seen] <= 0).any():
        return -math.inf
    return float((counts[seen] * np.log(law[seen])).sum())


def _levels(m: int, level: float) -> tuple[float, float]:
    """(alpha, delta) of each of m checks so that all m together fail at most `level`."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    return (1.0 - TV_SHARE) * level / m, TV_SHARE * level / m


def _match(name: str, laws: Mapping[str, ArrayLike], observed: Mapping[str, np.ndarray],
           target: Mapping[str, ArrayLike], output: Collection[str], level: float,
           power: float) -> Match:
    keys = [key for key in observed if key in laws]
    alpha, delta = _levels(max(len(keys), 1), level)
    checks = [check(observed[key], laws[key], alpha=alpha, delta=delta, power=power)
              for key in keys]
    bias = max((tv(laws[key], target[key]) for key in output if key in laws), default=0.0)
    return Match(name=name, consistent=bool(keys) and all(c.passed for c in checks),
                 loglik=sum(_loglik(observed[key], np.asarray(laws[key], dtype=np.float64))
                            for key in keys),
                 worst_tv=max((c.tv for c in checks), default=0.0), exact_tv=bias)


def _nearest(matches: list[Match], level: float) -> tuple[str, ...]:
    """The consistent known law with the best likelihood, if it beats the next one by a
    likelihood ratio of 1 / level (else all those within that ratio of the best)."""
    ok = sorted((m for m in matches if m.consistent), key=lambda m: -m.loglik)
    if not ok:
        return ()
    close = [m.name for m in ok if ok[0].loglik - m.loglik < math.log(1.0 / level)]
    return tuple(close)


def _seen(laws: Mapping[str, ArrayLike], target: Mapping[str, ArrayLike],
          output: list[str], checks: tuple[Check, ...]) -> bool:
    """Whether some output statistic would catch these laws (exact TV >= detectable)."""
    return any(key in laws and tv(laws[key], target[key]) >= c.detectable
               for key, c in zip(output, checks, strict=True))


def compare(observed: Mapping[str, ArrayLike], target: Mapping[str, ArrayLike],
            known: Mapping[str, Mapping[str, ArrayLike]] | None = None, *,
            output: Collection[str] | None = None, level: float = LEVEL,
            power: float = POWER, resolution: float | None = None) -> Comparison:
    """Counts against the target's laws and every known law; see the module's docstring."""
    obs = {key: np.asarray(v, dtype=np.float64) for key, v in observed.items()}
    output = list(target) if output is None else [key for key in output]
    missing = [key for key in output if key not in obs or key not in target]
    if missing or not output:
        raise ValueError(f"every output statistic needs counts and a target law; "
                         f"missing: {', '.join(map(str, missing)) or 'all (none given)'}")
    alpha, delta = _levels(len(output), level)
    checks = tuple(check(obs[key], target[key], alpha=alpha, delta=delta, name=str(key),
                         power=power) for key in output)
    matches = [_match(name, laws, obs, target, output, level, power)
               for name, laws in (known or {}).items()]
    passed = all(c.passed for c in checks)
    unseen = tuple(m.name for m in matches if is_biased(m.exact_tv)
                   and not _seen((known or {})[m.name], target, output, checks))
    if not passed:
        return Comparison(checks, tuple(matches), BIASED,
                          _nearest([m for m in matches if is_biased(m.exact_tv)], level),
                          unseen, level)
    small = bool(unseen) or (resolution is not None and
                             min(c.detectable for c in checks) > resolution)
    return Comparison(checks, tuple(matches), INCONCLUSIVE if small else LOSSLESS,
                      _nearest([m for m in matches if not is_biased(m.exact_tv)], level),
                      unseen, level)


def mean_and_error(counts: ArrayLike, values: ArrayLike) -> tuple[float, float]:
    """The mean of `values` under the empirical law of counts, and its standard error
    sqrt(var / n) (tokens per round: counts over lengths 1..k+1, values 1..k+1)."""
    c = np.asarray(counts, dtype=np.float64).ravel()
    v = np.asarray(values, dtype=np.float64).ravel()
    if c.shape != v.shape:
        raise ValueError(f"counts and values must have the same size; got {c.size}, {v.size}")
    w = empirical(c)
    mean = float(w @ v)
    return mean, math.sqrt(max(float(w @ (v - mean) ** 2), 0.0) / c.sum())
