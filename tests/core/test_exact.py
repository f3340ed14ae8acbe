"""Exact laws: the theorem made checkable, and the DP against a brute-force enumeration."""

from __future__ import annotations

import numpy as np
import pytest
from brute import brute_joint
from scenarios import sc
from support import random_tables

from specviz import RULES, default_tables, exact_joint, round_law, target_joint
from specviz.analysis import theory
from specviz.core.rule import overlap
from specviz.core.rules import target_of

LOSSLESS = [r for r in RULES if RULES[r].lossless]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_tokens", [2, 3])
def test_correct_rule_equals_target_on_random_tables_with_zeros(seed, n_tokens):
    rng = np.random.default_rng(seed)
    P, Q = random_tables(rng, V=5)
    assert (P == 0).any() and (Q == 0).any()
    for k in range(1, 7):
        for ctx in range(5):
            got = exact_joint(sc(P, Q, ctx, k, rule="correct"), n_tokens=n_tokens)
            want = target_joint(P, ctx, n_tokens=n_tokens)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("rule", LOSSLESS)
@pytest.mark.parametrize("seed", range(3))
def test_every_lossless_rule_equals_target_on_random_tables_with_zeros(rule, seed):
    rng = np.random.default_rng(50 + seed)
    P, Q = random_tables(rng, V=5)
    for k in (1, 2, 5):
        for ctx in range(5):
            for n_tokens in (2, 3):
                np.testing.assert_allclose(exact_joint(sc(P, Q, ctx, k, rule=rule),
                                                       n_tokens=n_tokens),
                                           target_joint(target_of(rule, P, Q), ctx,
                                                        n_tokens=n_tokens),
                                           rtol=0, atol=1e-12)


def test_correct_rule_equals_target_on_default_tables():
    T = default_tables()
    for k in (1, 4, 8):
        for ctx in range(T.V):
            np.testing.assert_allclose(exact_joint(sc(T.P, T.Q, ctx, k), n_tokens=2),
                                       target_joint(T.P, ctx, n_tokens=2),
                                       rtol=0, atol=1e-12)


@pytest.mark.parametrize("rule", list(RULES))
@pytest.mark.parametrize("k", [1, 2, 3])
def test_dp_matches_brute_force_enumeration(rule, k):
    """An independent recursion over every path (tests/brute.py) gives the same law."""
    rng = np.random.default_rng(7 + k)
    P, Q = random_tables(rng, V=3)
    for ctx in range(3):
        for n in (1, 2, 3):
            brute = brute_joint(P, Q, ctx, k, n, rule)
            got = exact_joint(sc(P, Q, ctx, k, rule=rule), n_tokens=n)
            want = np.zeros((3,) * n)
            for key, v in brute.items():
                want[key] += v
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("rule", [r for r in RULES if not RULES[r].lossless])
def test_every_broken_rule_is_biased_on_the_default_tables(rule):
    T = default_tables()
    target = target_joint(target_of(rule, T.P, T.Q), 0, n_tokens=2)
    bias = 0.5 * np.abs(exact_joint(sc(T.P, T.Q, 0, 4, rule=rule), n_tokens=2) - target).sum()
    assert bias > 0.01


def test_joint_is_a_law():
    T = default_tables()
    for rule in RULES:
        J = exact_joint(sc(T.P, T.Q, 2, 5, rule=rule), n_tokens=3)
        assert J.shape == (6, 6, 6)
        assert (J >= 0).all()
        assert J.sum() == pytest.approx(1.0, abs=1e-12)


def test_first_position_acceptance_is_overlap():
    T = default_tables()
    for ctx in range(T.V):
        law = round_law(sc(T.P, T.Q, ctx, 1))
        assert law.per_position[0] == pytest.approx(overlap(T.P[ctx], T.Q[ctx]), abs=1e-14)


def test_identical_rows_give_the_closed_form():
    """With every row the same, acceptance is i.i.d. with alpha = sum min(p, q)."""
    p = np.array([0.5, 0.3, 0.2, 0.0])
    q = np.array([0.25, 0.25, 0.25, 0.25])
    P, Q = np.tile(p, (4, 1)), np.tile(q, (4, 1))
    alpha = float(overlap(p, q))
    for k in (1, 3, 6):
        law = round_law(sc(P, Q, 1, k))
        assert law.tokens_per_call == pytest.approx(theory.expected_tokens(alpha, k), abs=1e-12)
        np.testing.assert_allclose(law.histogram, theory.acceptance_histogram(alpha, k), atol=1e-12)
        np.testing.assert_allclose(law.per_position, theory.per_position_acceptance(alpha, k),
                                   atol=1e-12)
        assert law.draft_acceptance_rate == pytest.approx(theory.draft_acceptance_rate(alpha, k))
        long = round_law(sc(P, Q, 1, k), long_run=True)
        assert long.tokens_per_call == pytest.approx(law.tokens_per_call, abs=1e-12)
        assert long.alpha == pytest.approx(alpha, abs=1e-12)


def test_continue_rule_emits_k_tokens_on_rejection():
    T = default_tables()
    law = round_law(sc(T.P, T.Q, 0, 4, rule="continue"))
    all_kept = law.histogram[-1]
    assert law.tokens_per_call == pytest.approx(4 * (1 - all_kept) + 5 * all_kept, abs=1e-12)


def test_long_run_is_a_time_average_even_for_a_periodic_chain():
    """a -> b -> a ... deterministically: the long run spends half its rounds at each."""
    P = np.array([[0.0, 1.0], [1.0, 0.0]])
    Q = np.array([[0.5, 0.5], [0.5, 0.5]])
    law = round_law(sc(P, Q, 0, 1), long_run=True)
    assert law.alpha == pytest.approx(0.5, abs=1e-12)
    assert law.draft_acceptance_rate == pytest.approx(0.5, abs=1e-12)
