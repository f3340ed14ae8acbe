"""Exact laws: the theorem made checkable, and the DP against a brute-force enumeration."""

from __future__ import annotations

import itertools
import math

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


def _continue_round(P, Q, c: int, k: int) -> tuple[float, np.ndarray]:
    """One round of the tutorial's 'continue' rule from context c, every path enumerated
    from its description: drafts x_1..x_k, a q-chain from c; x_i kept with probability
    min(1, p/q) at its context; on the first rejection, y ~ norm(max(0, p - q)) there, then
    x_(i+1)..x_k unchecked (k tokens, ending on x_k, or on y when i = k); all kept: a bonus
    from p at x_k (k + 1 tokens, ending on it). -> (E[tokens], law of the last token)."""
    V = len(P)
    tokens, end = 0.0, np.zeros(V)
    for xs in itertools.product(range(V), repeat=k):
        ctxs = (c, *xs[:-1])
        drafted = math.prod(Q[a][x] for a, x in zip(ctxs, xs, strict=True))
        if drafted == 0:
            continue
        ahead = drafted  # the drafts so far kept
        for i, (a, x) in enumerate(zip(ctxs, xs, strict=True), start=1):
            keep = min(1.0, P[a][x] / Q[a][x])
            residual = [max(0.0, P[a][y] - Q[a][y]) for y in range(V)]
            for y in range(V) if keep < 1 else ():
                pr = ahead * (1 - keep) * residual[y] / sum(residual)
                tokens += pr * k
                end[xs[-1] if i < k else y] += pr
            ahead *= keep
        for y in range(V):  # every draft kept: the bonus
            tokens += ahead * P[xs[-1]][y] * (k + 1)
            end[y] += ahead * P[xs[-1]][y]
    return tokens, end


@pytest.mark.parametrize("k", [1, 2, 4])
def test_continue_rules_long_run_tokens_per_call_is_the_brute_force_rounds(k):
    """The long run of 'continue' (rounds starting where the last one ended, time-averaged)
    from one round enumerated path by path, against round_law's: ending a round on the last
    unchecked draft x_k (not on y) only where a draft is left after the rejection moved it
    4.35777 -> 4.35697 at k = 4, inside the Monte Carlo's tolerance."""
    T = default_tables()
    P, Q = T.P.tolist(), T.Q.tolist()
    rounds = [_continue_round(P, Q, c, k) for c in range(len(P))]
    N = np.array([end for _, end in rounds])  # (V, V): where a round from c ends
    np.testing.assert_allclose(N.sum(axis=1), 1.0, atol=1e-12)
    V = len(N)
    lhs = np.vstack([N.T - np.eye(V), np.ones(V)])  # pi N = pi, sum(pi) = 1
    pi, _, rank, _ = np.linalg.lstsq(lhs, np.r_[np.zeros(V), 1.0], rcond=None)
    assert rank == V  # one stationary law: the time average from any context is it
    want = float(pi @ [tokens for tokens, _ in rounds])
    got = round_law(sc(T.P, T.Q, 0, k, rule="continue"), long_run=True).tokens_per_call
    assert got == pytest.approx(want, rel=0, abs=1e-12)
    assert round_law(sc(T.P, T.Q, 0, k, rule="continue")).tokens_per_call == pytest.approx(
        rounds[0][0], rel=0, abs=1e-12)  # the first round alone, from context 0


def test_long_run_is_a_time_average_even_for_a_periodic_chain():
    """a -> b -> a ... deterministically: the long run spends half its rounds at each."""
    P = np.array([[0.0, 1.0], [1.0, 0.0]])
    Q = np.array([[0.5, 0.5], [0.5, 0.5]])
    law = round_law(sc(P, Q, 0, 1), long_run=True)
    assert law.alpha == pytest.approx(0.5, abs=1e-12)
    assert law.draft_acceptance_rate == pytest.approx(0.5, abs=1e-12)
