"""Acceptance analysis: Wilson intervals, the i.i.d. test (with negative controls), prediction
of tokens per call checked against the exact law on specviz's own tables."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scenarios import sc

from specviz.analysis import theory
from specviz.analysis.acceptance import IID_LEVEL, analyse, wilson
from specviz.analysis.record import from_histogram, make_acceptance
from specviz.core.exact import round_law
from specviz.core.montecarlo import simulate
from specviz.core.tables import default_tables


def chain_counts(rng, n: int, cond) -> np.ndarray:
    """Rounds of drafts kept one after another with conditional rates cond: a_i counts."""
    a, alive = [], n
    for c in cond:
        alive = rng.binomial(alive, c)
        a.append(alive)
    return np.array(a)


def record(a, n):
    return make_acceptance(source="test", rounds=n, drafted=n * len(a),
                           accepted=int(np.sum(a)), k=len(a), accepted_at=a)


@settings(deadline=None, max_examples=60)
@given(st.integers(0, 500), st.integers(1, 500))
def test_wilson_contains_the_share(x, n):
    x = min(x, n)
    lo, hi = wilson(x, n)
    assert 0 <= lo <= x / n <= hi <= 1


def test_wilson_coverage():
    """95% intervals over 2,000 binomial draws cover p at least 95% - 3 standard errors."""
    rng = np.random.default_rng(1)
    n, p, reps = 200, 0.3, 2000
    hits = sum(lo <= p <= hi for lo, hi in (wilson(x, n) for x in rng.binomial(n, p, reps)))
    assert hits / reps >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps)


def test_iid_test_holds_its_level_and_catches_decay():
    rng = np.random.default_rng(7)
    reps, n = 300, 20_000
    p_iid = [analyse(record(chain_counts(rng, n, [0.7] * 5), n)).p_value for _ in range(reps)]
    rate = np.mean(np.array(p_iid) < IID_LEVEL)
    assert rate <= IID_LEVEL + 3 * math.sqrt(IID_LEVEL * (1 - IID_LEVEL) / reps)
    # negative control: a decay of 0.8 -> 0.66 must be caught every time at this n
    decays = [analyse(record(chain_counts(rng, n, [0.8, 0.75, 0.7, 0.66]), n))
              for _ in range(20)]
    assert all(r.shape == "decays" and r.p_value < IID_LEVEL for r in decays)


def test_alpha_and_its_interval_cover_the_truth():
    rng = np.random.default_rng(3)
    n = 50_000
    rep = analyse(record(chain_counts(rng, n, [0.62] * 4), n))
    assert rep.alpha_ci[0] <= 0.62 <= rep.alpha_ci[1] and rep.shape == "i.i.d."
    assert rep.tokens_per_call(4) == pytest.approx(theory.expected_tokens(0.62, 4), abs=0.02)


def test_prediction_matches_the_exact_law():
    """Per-position rates measured by Monte Carlo at k = 6 predict tokens per call at every
    k <= 6 as the exact law says, within 5 standard errors of n rounds."""
    t = default_tables()
    K, n = 6, 200_000
    sim = simulate(sc(t.P, t.Q, 0, K, rule="correct", seed=11), n=n, n_tokens=1)  # one round each
    acc = from_histogram(sim.histogram.tolist(), source="simulate")
    rep = analyse(acc)
    for k in range(1, K + 1):
        exact = round_law(sc(t.P, t.Q, 0, k, rule="correct")).tokens_per_call
        se = math.sqrt(k * k / 4 / n)  # accepted drafts lie in [0, k]: variance <= k^2 / 4
        assert abs(rep.tokens_per_call(k) - exact) <= 5 * se, k
        assert not rep.extrapolates(k)
    assert rep.extrapolates(K + 1)
    # negative control: predicting with the i.i.d. alpha^i instead misses on these tables
    wrong = theory.expected_tokens(rep.alpha, K)
    exact = round_law(sc(t.P, t.Q, 0, K, rule="correct")).tokens_per_call
    assert abs(wrong - exact) > 5 * math.sqrt(K * K / 4 / n) or rep.shape == "i.i.d."


def test_totals_only_assume_iid():
    acc = make_acceptance(source="t", rounds=1000, drafted=4000, accepted=2000, k=4)
    rep = analyse(acc)
    assert rep.shape == "assumed i.i.d."
    assert theory.draft_acceptance_rate(rep.alpha, 4) == pytest.approx(0.5)
    assert rep.alpha_ci[0] < rep.alpha < rep.alpha_ci[1]
