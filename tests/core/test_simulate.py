"""Monte Carlo against exact, with thresholds derived from n, and the negative controls.

Every TV threshold is stats.tv_threshold(law, n): the exact expected TV of n perfect samples
plus a McDiarmid deviation with failure probability 1e-6. Nothing here is tuned.
"""

from __future__ import annotations

import numpy as np
import pytest
from scenarios import rule_sweep, sc
from support import random_tables

from specviz import (
    RULES,
    default_tables,
    exact_joint,
    long_decode,
    play_rounds,
    round_law,
    simulate,
    target_joint,
    tv,
    tv_threshold,
)
from specviz.analysis import theory
from specviz.analysis.stats import gof_pvalue
from specviz.core.pair import TablePair
from specviz.core.rule import overlap
from specviz.core.rules import target_of
from specviz.core.scenario import Scenario

T = default_tables()
N = 400_000


@pytest.mark.parametrize("rule", rule_sweep(RULES))
def test_monte_carlo_matches_exact_for_every_rule(rule):
    sim = simulate(sc(T.P, T.Q, 0, 4, rule=rule, seed=1), n=N, n_tokens=2)
    exact = exact_joint(sc(T.P, T.Q, 0, 4, rule=rule), n_tokens=2)
    assert sim.joint.sum() == N
    assert tv(sim.law, exact) <= tv_threshold(exact, N)
    assert gof_pvalue(sim.joint, exact) > 1e-6


@pytest.mark.parametrize("rule", ["correct", "block", "tree_iid", "multi_draft"])
@pytest.mark.parametrize("k", [1, 2])
def test_monte_carlo_law_through_the_bonus(rule, k):
    """At k = 1 and 2 the first three tokens reach the bonus after a round that kept every
    draft: each kind's vectorised round follows the exact law there too."""
    n = 200_000
    sim = simulate(sc(T.P, T.Q, 0, k, rule=rule, seed=11), n=n, n_tokens=3)
    exact = exact_joint(sc(T.P, T.Q, 0, k, rule=rule), n_tokens=3)
    assert tv(sim.law, exact) <= tv_threshold(exact, n)


def _power_n(bias: float, law) -> int:
    """The smallest n on a fixed ladder at which a bias this size clears twice the threshold."""
    for n in (100_000, 400_000, 1_600_000, 6_400_000):
        if bias > 2 * tv_threshold(law, n):
            return n
    raise AssertionError(f"bias {bias} is too small to test")


@pytest.mark.parametrize("rule", rule_sweep([r for r in RULES if not RULES[r].lossless]))
def test_negative_control_each_broken_rule_is_caught(rule):
    """The same test that passes the correct rule must fail each lossy or broken one; n is
    chosen from the rule's exact bias by a power calculation, not tuned."""
    target = target_joint(target_of(rule, T.P, T.Q), 0, n_tokens=2)
    bias = tv(exact_joint(sc(T.P, T.Q, 0, 4, rule=rule), n_tokens=2), target)
    n = _power_n(bias, target)
    sim = simulate(sc(T.P, T.Q, 0, 4, rule=rule, seed=2), n=n, n_tokens=2)
    assert tv(sim.law, target) > tv_threshold(target, n)
    assert gof_pvalue(sim.joint, target) < 1e-6


def test_correct_rule_passes_the_same_test():
    target = target_joint(T.P, 0, n_tokens=2)
    sim = simulate(sc(T.P, T.Q, 0, 4, rule="correct", seed=2), n=N, n_tokens=2)
    assert tv(sim.law, target) <= tv_threshold(target, N)


@pytest.mark.parametrize("seed", [0, 1])
def test_random_tables_with_zeros_three_tokens(seed):
    rng = np.random.default_rng(100 + seed)
    P, Q = random_tables(rng, V=4)
    n = 300_000
    sim = simulate(sc(P, Q, 2, 3, rule="correct", seed=seed), n=n, n_tokens=3)
    target = target_joint(P, 2, n_tokens=3)
    assert (sim.joint[target == 0] == 0).all()  # impossible sequences never appear
    assert tv(sim.law, target) <= tv_threshold(target, n)


def test_first_round_histogram_matches_exact():
    """n_tokens = 1: each decode runs exactly one round from ctx."""
    n = 200_000
    for rule in RULES:
        sim = simulate(sc(T.P, T.Q, 3, 5, rule=rule, seed=3), n=n, n_tokens=1)
        assert sim.rounds == n
        law = round_law(sc(T.P, T.Q, 3, 5, rule=rule))
        assert tv(sim.histogram / n, law.histogram) <= tv_threshold(law.histogram, n)


@pytest.mark.parametrize("rule", rule_sweep(RULES))
def test_scalar_rounds_match_exact(rule):
    """play_round, one round at a time, chained until two tokens are out."""
    n, k = 3_000, 3
    counts = np.zeros((6, 6))
    for d in range(n):
        rounds = play_rounds(Scenario.on(TablePair(T.P, T.Q), 0, k=k, rule=rule, seed=d),
                             n_rounds=2)
        toks = [t for tr in rounds for t in tr.tokens]
        counts[toks[0], toks[1]] += 1
    exact = exact_joint(sc(T.P, T.Q, 0, k, rule=rule), n_tokens=2)
    assert tv(counts / n, exact) <= tv_threshold(exact, n)


def test_identical_rows_tokens_per_call_within_four_standard_errors():
    p = np.array([0.4, 0.3, 0.2, 0.1, 0.0])
    q = np.array([0.1, 0.2, 0.2, 0.3, 0.2])
    P, Q = np.tile(p, (5, 1)), np.tile(q, (5, 1))
    alpha = float(overlap(p, q))
    for k in (1, 4, 7):
        stats = long_decode(sc(P, Q, 0, k, seed=k), n_rounds=100_000)
        want = theory.expected_tokens(alpha, k)
        assert abs(stats.tokens_per_call - want) <= 4 * stats.tokens_per_call_se
        sim = simulate(sc(P, Q, 0, k, seed=k), n=100_000, n_tokens=3)
        L = np.arange(k + 1) + 1  # tokens emitted by a round that kept j drafts
        mean = sim.histogram @ L / sim.rounds
        se = np.sqrt((sim.histogram @ (L - mean) ** 2) / sim.rounds / sim.rounds)
        assert abs(sim.tokens_per_call - want) <= 4 * se


@pytest.mark.parametrize("rule", rule_sweep(RULES))
def test_long_decode_matches_exact_long_run(rule):
    stats = long_decode(sc(T.P, T.Q, 0, 4, rule=rule, seed=9), n_rounds=200_000)
    law = round_law(sc(T.P, T.Q, 0, 4, rule=rule), long_run=True)
    # rounds in one chain are Markov-dependent; 5 SE of the i.i.d. estimate leaves room
    assert abs(stats.tokens_per_call - law.tokens_per_call) <= 5 * stats.tokens_per_call_se
    assert stats.rounds == 200_000 and stats.drafted == 4 * 200_000


def test_metrics_are_consistent():
    sim = simulate(sc(T.P, T.Q, 0, 4, seed=4), n=50_000)
    assert sim.draft_acceptance_rate == pytest.approx(sim.accepted / (4 * sim.rounds))
    assert sim.mean_acceptance_length == pytest.approx(1 + sim.accepted / sim.rounds)
    assert sim.per_position[0] == pytest.approx(1 - sim.histogram[0] / sim.rounds)
    assert np.all(np.diff(sim.per_position) <= 0)
    assert sim.tokens == sim.accepted + sim.rounds  # correct rule: j + 1 per round


def test_seeded_determinism():
    a = simulate(sc(T.P, T.Q, 0, 4, rule="continue", seed=5), n=10_000)
    b = simulate(sc(T.P, T.Q, 0, 4, rule="continue", seed=5), n=10_000)
    c = simulate(sc(T.P, T.Q, 0, 4, rule="continue", seed=6), n=10_000)
    assert np.array_equal(a.joint, b.joint) and np.array_equal(a.histogram, b.histogram)
    assert not np.array_equal(a.joint, c.joint)


def test_chunks_cover_exactly_n(monkeypatch):
    import specviz.core.montecarlo as sim_mod

    monkeypatch.setattr(sim_mod, "CHUNK_CELLS", 5 * 1000)  # 1000 decodes a chunk at k = 4
    sim = sim_mod.simulate(sc(T.P, T.Q, 0, 4, seed=0), n=4_321)
    assert sim.joint.sum() == 4_321


def test_zero_probability_tokens_never_emitted():
    P = T.P.copy()
    assert P[3, 2] == 0  # p(c | d) = 0 in the default target
    sim = simulate(sc(T.P, T.Q, 3, 4, seed=0), n=200_000, n_tokens=1)
    assert sim.joint[2] == 0


def test_large_vocabulary_runs():
    rng = np.random.default_rng(0)
    P, Q = rng.dirichlet(np.ones(300), 300), rng.dirichlet(np.ones(300), 300)
    n = 100_000
    sim = simulate(sc(P, Q, 5, 8, seed=0), n=n, n_tokens=1)
    assert tv(sim.law, P[5]) <= tv_threshold(P[5], n)
