"""One verdict for a Monte Carlo run against the target: the stronger of the TV test (the
threshold derived from n) and the chi-square goodness-of-fit test (p against alpha)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenarios import sc

from specviz import default_tables, simulate, target_joint
from specviz.analysis.audit import CAUGHT
from specviz.analysis.stats import GOF_ALPHA, gof_pvalue, tv, tv_threshold, verdict
from specviz.views import demos

D = default_tables()
TARGET = target_joint(D.P, 0, n_tokens=2)


def run_verdict(rule: str, n: int, seed: int):
    sim = simulate(sc(D.P, D.Q, 0, 4, rule=rule, seed=seed), n=n, n_tokens=2)
    return verdict(tv(sim.law, TARGET), tv_threshold(TARGET, n), gof_pvalue(sim.joint, TARGET))


def binomial_upper(n: int, p: float, delta: float = 1e-6) -> int:
    """The smallest x with P(Binomial(n, p) > x) <= delta."""
    tail, x = 1.0, -1
    while tail > delta:
        x += 1
        tail -= math.comb(n, x) * p**x * (1 - p) ** (n - x)
    return x


def test_wording():
    assert verdict(0.01, 0.02, 0.5).text == "consistent with the target"
    assert verdict(0.01, 0.02, 1.6e-15).text == "differs from the target (p = 1.6e-15)"
    assert verdict(0.03, 0.02, 0.5).text == "differs from the target (TV above the threshold)"
    assert verdict(0.03, 0.02, 0.0).text == ("differs from the target (TV above the "
                                             "threshold, p < 1e-300)")


def test_each_test_alone_is_enough_to_differ():
    assert verdict(0.01, 0.02, 0.5).consistent
    tv_only, p_only = verdict(0.03, 0.02, 0.5), verdict(0.01, 0.02, GOF_ALPHA / 2)
    assert not tv_only.consistent and tv_only.tv_above and not tv_only.p_below
    assert not p_only.consistent and p_only.p_below and not p_only.tv_above
    assert verdict(0.02, 0.02, GOF_ALPHA).consistent  # both edges are inclusive passes


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 2.0])
def test_alpha_must_be_a_level(alpha):
    with pytest.raises(ValueError, match="alpha"):
        verdict(0.0, 0.1, 0.5, alpha)


@pytest.mark.parametrize("seed", range(3))
def test_the_issues_case_no_resample_at_n_2000_differs(seed):
    """`python -m specviz demo 2 --n 2000`: no_resample's TV is under the threshold while
    its p-value is far below the level (about 1e-15 to 1e-7 across seeds); the verdict
    follows the p-value."""
    ex = demos.exactness(sc(D.P, D.Q, 0, 4, seed=seed), n=2_000)
    a = next(x for x in ex.audits if x.rule == "no_resample")
    assert a.audit.at_floor and a.audit.p_value < GOF_ALPHA / 1_000
    assert not a.audit.test.consistent
    assert a.audit.test.text.startswith("differs from the target (p =")
    assert a.audit.verdict == CAUGHT


@pytest.mark.parametrize("seed", range(3))
def test_negative_control_the_correct_rule_at_large_n_is_consistent(seed):
    assert run_verdict("correct", 1_000_000, seed).consistent


@pytest.mark.parametrize("seed", range(3))
def test_no_resample_differs_at_moderate_n(seed):
    assert not run_verdict("no_resample", 50_000, seed).consistent


def test_an_exact_sampler_is_flagged_about_alpha_of_the_time():
    """Direct multinomial draws from the target: the combined verdict's false alarms stay
    under a binomial bound at twice alpha (the chi-square level is asymptotic) plus the TV
    test's 1e-6."""
    rng = np.random.default_rng(2024)
    n, reps = 2_000, 5_000
    line = tv_threshold(TARGET, n)
    flagged = 0
    for _ in range(reps):
        counts = rng.multinomial(n, TARGET.ravel()).reshape(TARGET.shape)
        flagged += not verdict(tv(counts / n, TARGET), line, gof_pvalue(counts, TARGET)).consistent
    assert flagged <= binomial_upper(reps, 2 * GOF_ALPHA + 1e-6)
