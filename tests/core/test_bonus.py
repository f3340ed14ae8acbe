"""The bonus token's law: three emitted tokens at k = 1 and 2 always reach a bonus (k = 1:
the second token is one whenever the first draft stands), checked exactly and by Monte Carlo
against tests/oracle.py, whose bonus is drawn from p at the last prefix."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from oracle import oracle_joint, oracle_rules
from scenarios import sc
from support import random_tables

from specviz import default_tables, exact_joint
from specviz.analysis.stats import tv, tv_threshold
from specviz.core.montecarlo import simulate

D = default_tables()
N = 400_000  # decodes per Monte Carlo check; the threshold below is derived from it
N_TOKENS = 3


def wrong_bonus(rule: str):
    """The same rule with its bonus drawn from p one prefix early: what a bug would give."""
    return replace(oracle_rules()[rule], bonus_one_back=True)


@pytest.mark.parametrize("rule", list(oracle_rules()))
@pytest.mark.parametrize("k", [1, 2])
def test_exact_bonus_law_is_the_oracle(rule, k):
    tables = [(D.P, D.Q), random_tables(np.random.default_rng(11 + k), 4)]
    for P, Q in tables:
        for ctx in range(P.shape[0]):
            np.testing.assert_allclose(exact_joint(sc(P, Q, ctx, k, rule=rule), n_tokens=N_TOKENS),
                                       oracle_joint(P, Q, ctx, k, N_TOKENS, rule),
                                       rtol=0, atol=1e-10)


@pytest.mark.parametrize("k", [1, 2])
def test_the_wrong_bonus_is_far_from_the_right_one(k):
    """Power: a bonus drawn at the wrong prefix moves the law by far more than the Monte
    Carlo threshold, so the tests below would see it."""
    right = oracle_joint(D.P, D.Q, 0, k, N_TOKENS, "correct")
    wrong = oracle_joint(D.P, D.Q, 0, k, N_TOKENS, wrong_bonus("correct"))
    assert tv(wrong, right) > 2 * tv_threshold(right, N)


@pytest.mark.parametrize("rule", list(oracle_rules()))
@pytest.mark.parametrize("k", [1, 2])
def test_monte_carlo_bonus_law_is_the_oracle(rule, k):
    law = oracle_joint(D.P, D.Q, 0, k, N_TOKENS, rule)
    sim = simulate(sc(D.P, D.Q, 0, k, rule=rule, seed=k), n=N, n_tokens=N_TOKENS)
    assert tv(sim.law, law) <= tv_threshold(law, N)


@pytest.mark.parametrize("k", [1, 2])
def test_monte_carlo_is_caught_against_a_wrong_bonus(k):
    """Negative control: the same measurement against the wrong-bonus law fails."""
    wrong = oracle_joint(D.P, D.Q, 0, k, N_TOKENS, wrong_bonus("correct"))
    sim = simulate(sc(D.P, D.Q, 0, k, rule="correct", seed=k), n=N, n_tokens=N_TOKENS)
    assert tv(sim.law, wrong) > tv_threshold(wrong, N)
