"""Token trees: every preset exact under both lossless sibling rules, the literal
enumeration of tests/brute.py against the engine's DP, the broken variants biased and
caught, and the scalar round against the exact law."""

from __future__ import annotations

import numpy as np
import pytest
from brute import brute_array, tree_outcomes
from support import random_tables

from specviz import default_tables, exact_joint, round_law, simulate, target_joint, tv
from specviz.analysis.stats import tv_threshold
from specviz.core import tree
from specviz.core.pair import TablePair
from specviz.core.round import play_round
from specviz.core.rules import get_rule

T = default_tables()
LOSSLESS = ("tree_iid", "tree_wor")
BROKEN = ("tree_first_residual", "tree_wor_as_iid")


def test_shapes_by_hand():
    s = tree.preset(1, 3)  # 3-2-1: 3, then 2 under each, then 1 under each
    assert s.nodes == 3 + 6 + 6 and s.depth == 3
    assert s.children(()) == 3 and s.children((2,)) == 2 and s.children((2, 1)) == 1
    assert s.children((2, 1, 0)) == 0
    assert tree.preset(0, 4).nodes == 4  # the chain
    med = tree.TreeShape("paths", ((0,), (1,), (0, 0), (0, 1), (0, 2)))
    assert med.children(()) == 2 and med.children((0,)) == 3 and med.children((1,)) == 0
    with pytest.raises(ValueError):
        tree.TreeShape("bad", ((0, 0),))  # no parent
    with pytest.raises(ValueError):
        tree.TreeShape("bad", ((0,), (2,)))  # skips a sibling
    assert tree.preset(2, 64).nodes == 2 + 4 + 8 * 62  # the binary head is 3 levels deep


@pytest.mark.parametrize("rule", LOSSLESS)
@pytest.mark.parametrize("shape", range(len(tree.PRESETS)))
def test_every_preset_is_exact_on_random_tables_with_zeros(rule, shape):
    P, Q = random_tables(np.random.default_rng(200 + shape), V=4)
    r = get_rule(rule).with_params(shape=shape)
    for k in (1, 2, 4, 6):
        for n in (1, 2):
            np.testing.assert_allclose(exact_joint(P, Q, 1, k, n_tokens=n, rule=r),
                                       target_joint(P, 1, n_tokens=n),
                                       rtol=0, atol=1e-12)


@pytest.mark.parametrize("rule", LOSSLESS + BROKEN)
@pytest.mark.parametrize("shape", [1, 3])
def test_dp_matches_the_literal_enumeration(rule, shape):
    P, Q = random_tables(np.random.default_rng(11 + shape), V=3)
    r = get_rule(rule).with_params(shape=shape)
    for k in (1, 2, 3):
        for n in (1, 2):
            np.testing.assert_allclose(exact_joint(P, Q, 0, k, n_tokens=n, rule=r),
                                       brute_array(P, Q, 0, k, n, r), rtol=0, atol=1e-12)
        D, N = tree.round_tables(P, Q, tree.preset(shape, k), r.tree)
        kept, ends = np.zeros(k + 1), np.zeros(3)
        for seq, pr in tree_outcomes(P, Q, 2, tree.preset(shape, k).children, r.tree).items():
            kept[len(seq) - 1] += pr
            ends[seq[-1]] += pr
        np.testing.assert_allclose(D[2], kept, atol=1e-12)
        np.testing.assert_allclose(N[2], ends, atol=1e-12)


def test_a_tree_of_m_iid_siblings_per_level_is_specinfer_multi_draft():
    """SpecInfer's m candidates per position (rule multi_draft) is the tree with m
    children everywhere: only the kept child's subtree is ever read."""
    P, Q = random_tables(np.random.default_rng(4), V=4)
    shape = tree.TreeShape.from_branching("3-3-3", (3, 3, 3))
    D, _ = tree.round_tables(P, Q, shape, "iid")
    for c in range(4):
        law = round_law(P, Q, c, 3, rule=get_rule("multi_draft").with_params(m=3))
        np.testing.assert_allclose(D[c], law.histogram, atol=1e-12)


@pytest.mark.parametrize("rule", BROKEN)
def test_broken_tree_rules_are_biased_and_caught(rule):
    target = target_joint(T.P, 0, n_tokens=2)
    bias = tv(exact_joint(T.P, T.Q, 0, 4, n_tokens=2, rule=rule), target)
    assert bias > 1e-3
    n = next(n for n in (100_000, 400_000, 1_600_000) if bias > 2 * tv_threshold(target, n))
    sim = simulate(T.P, T.Q, 0, 4, n=n, rule=rule, n_tokens=2, seed=5)
    assert tv(sim.law, target) > tv_threshold(target, n)


@pytest.mark.parametrize("rule", LOSSLESS)
def test_monte_carlo_executes_the_tree(rule):
    n = 300_000
    exact = exact_joint(T.P, T.Q, 0, 4, n_tokens=2, rule=rule)
    sim = simulate(T.P, T.Q, 0, 4, n=n, rule=rule, n_tokens=2, seed=6)
    assert tv(sim.law, exact) <= tv_threshold(exact, n)
    hist = round_law(T.P, T.Q, 0, 4, rule=rule).histogram
    first = simulate(T.P, T.Q, 0, 4, n=n, rule=rule, n_tokens=1, seed=7)
    assert tv(first.histogram / n, hist) <= tv_threshold(hist, n)


def test_a_wider_tree_keeps_more_than_the_chain():
    chain = round_law(T.P, T.Q, 0, 4, rule="correct", long_run=True).tokens_per_call
    for rule in LOSSLESS:
        assert round_law(T.P, T.Q, 0, 4, rule=rule, long_run=True).tokens_per_call > chain
    # the chain preset is the standard rule
    r = get_rule("tree_iid").with_params(shape=0)
    assert round_law(T.P, T.Q, 0, 4, rule=r, long_run=True).tokens_per_call == pytest.approx(
        chain, abs=1e-12)


def test_scalar_tree_rounds_follow_the_exact_law_and_step_in_order():
    pair, n = TablePair(T.P, T.Q), 3_000
    rng = np.random.default_rng(9)
    hist = np.zeros(4)
    for _ in range(n):
        tr = play_round(pair, 1, 3, rng=rng, rule="tree_wor")
        hist[tr.accepted] += 1
    law = round_law(T.P, T.Q, 1, 3, rule="tree_wor").histogram
    assert tv(hist / n, law) <= tv_threshold(law, n)
    kinds = [s.kind for s in tr.steps]
    assert kinds[0] == "start" and kinds[-1] == "done" and "verify" in kinds
    for pos in tr.positions:  # distinct siblings, tried in order, at most one kept
        toks = [t.token for t in pos.tries]
        assert len(set(toks)) == len(toks)
        assert [t.accepted for t in pos.tries].count(True) <= 1


def test_dynamic_policies_run_trees_and_refuse_block():
    from specviz.core.dynamic import run_policy

    run = run_policy(T.P, T.Q, 0, policy="constant", k=3, n_tokens=300, seed=1, rule="tree_wor")
    assert run.tokens >= 300 and run.accepted <= 3 * run.target_calls
    with pytest.raises(ValueError, match="block"):
        run_policy(T.P, T.Q, 0, policy="constant", k=3, n_tokens=300, seed=1, rule="block")
