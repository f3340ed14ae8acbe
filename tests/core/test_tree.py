"""Token trees: every preset exact under both lossless sibling rules, the literal
enumeration of tests/brute.py against the engine's DP, the broken variants biased and
caught, and the scalar round against the exact law."""

from __future__ import annotations

import re

import numpy as np
import pytest
from brute import brute_array, tree_outcomes
from scenarios import sc
from support import narrated_round, random_tables

from specviz import default_tables, exact_joint, round_law, simulate, target_joint, tv
from specviz.analysis.stats import tv_threshold
from specviz.core.kinds import tree, treelaw, treeshape
from specviz.core.pair import TablePair
from specviz.core.round import play_round
from specviz.core.rules import get_rule
from specviz.core.sampling import BucketSampler
from specviz.core.scenario import Scenario

T = default_tables()
LOSSLESS = ("tree_iid", "tree_wor")
BROKEN = ("tree_first_residual", "tree_wor_as_iid")


def test_shapes_by_hand():
    s = treeshape.preset(1, 3)  # 3-2-1: 3, then 2 under each, then 1 under each
    assert s.nodes == 3 + 6 + 6 and s.depth == 3
    assert s.children(()) == 3 and s.children((2,)) == 2 and s.children((2, 1)) == 1
    assert s.children((2, 1, 0)) == 0
    assert treeshape.preset(0, 4).nodes == 4  # the chain
    med = treeshape.TreeShape("paths", ((0,), (1,), (0, 0), (0, 1), (0, 2)))
    assert med.children(()) == 2 and med.children((0,)) == 3 and med.children((1,)) == 0
    with pytest.raises(ValueError, match="no parent"):
        treeshape.check_paths([[0, 0]])
    with pytest.raises(ValueError, match="without its earlier sibling"):
        treeshape.check_paths([[0], [2]])
    assert treeshape.preset(2, 64).nodes == 2 + 4 + 8 * 62  # the binary head is 3 levels deep


@pytest.mark.parametrize("rule", LOSSLESS)
@pytest.mark.parametrize("shape", range(len(treeshape.PRESETS)))
def test_every_preset_is_exact_on_random_tables_with_zeros(rule, shape):
    P, Q = random_tables(np.random.default_rng(200 + shape), V=4)
    r = get_rule(rule).with_params(shape=shape)
    for k in (1, 2, 4, 6):
        for n in (1, 2):
            np.testing.assert_allclose(exact_joint(sc(P, Q, 1, k, rule=r), n_tokens=n),
                                       target_joint(P, 1, n_tokens=n),
                                       rtol=0, atol=1e-12)


@pytest.mark.parametrize("rule", LOSSLESS + BROKEN)
@pytest.mark.parametrize("shape", [1, 3])
def test_dp_matches_the_literal_enumeration(rule, shape):
    P, Q = random_tables(np.random.default_rng(11 + shape), V=3)
    r = get_rule(rule).with_params(shape=shape)
    for k in (1, 2, 3):
        for n in (1, 2):
            np.testing.assert_allclose(exact_joint(sc(P, Q, 0, k, rule=r), n_tokens=n),
                                       brute_array(P, Q, 0, k, n, r), rtol=0, atol=1e-12)
        D, N = treelaw.round_tables(P, Q, treeshape.preset(shape, k), r.tree)
        kept, ends = np.zeros(k + 1), np.zeros(3)
        for seq, pr in tree_outcomes(P, Q, 2, treeshape.preset(shape, k).children, r.tree).items():
            kept[len(seq) - 1] += pr
            ends[seq[-1]] += pr
        np.testing.assert_allclose(D[2], kept, atol=1e-12)
        np.testing.assert_allclose(N[2], ends, atol=1e-12)


def test_a_tree_of_m_iid_siblings_per_level_is_specinfer_multi_draft():
    """SpecInfer's m candidates per position (rule multi_draft) is the tree with m
    children everywhere: only the kept child's subtree is ever read."""
    P, Q = random_tables(np.random.default_rng(4), V=4)
    shape = treeshape.TreeShape.from_branching("3-3-3", (3, 3, 3))
    D, _ = treelaw.round_tables(P, Q, shape, "iid")
    for c in range(4):
        law = round_law(sc(P, Q, c, 3, rule=get_rule("multi_draft").with_params(m=3)))
        np.testing.assert_allclose(D[c], law.histogram, atol=1e-12)


def test_multi_draft_is_a_tree_drafted_along_the_path_it_walks():
    """At m = 8, k = 32 the tree has 8 + 8^2 + ... + 8^32 nodes, far over any cap: the round
    draws a node's candidates only when it reaches it, so every drafted token is tried and
    lies on the kept path; the vectorised round and the exact law run at that size too."""
    r = get_rule("multi_draft").with_params(m=8)
    shape = treeshape.rule_shape(r, 32)
    assert shape.lazy and shape.drafted == 8 * 32
    assert shape.children((7,) * 31) == 8 and shape.children((0,) * 32) == 0
    pair = TablePair(T.P, T.Q)
    for seed in range(10):
        tr = play_round(Scenario.on(pair, 0, k=32, rule=r), rng=np.random.default_rng(seed))
        kept = [len(pos.tries) - 1 for pos in tr.positions]
        assert len(tr.tree) == sum(len(pos.tries) for pos in tr.positions)  # all tried
        assert all(tuple(kept[:len(path) - 1]) == path[:-1] for path, _ in tr.tree)
    sim = simulate(sc(T.P, T.Q, 0, 32, rule=r, seed=3), n=2_000, n_tokens=1)
    assert sim.joint.sum() == 2_000
    law = round_law(sc(T.P, T.Q, 0, 32, rule=r))
    assert len(law.histogram) == 33 and law.histogram.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("rule", BROKEN)
def test_broken_tree_rules_are_biased_and_caught(rule):
    target = target_joint(T.P, 0, n_tokens=2)
    bias = tv(exact_joint(sc(T.P, T.Q, 0, 4, rule=rule), n_tokens=2), target)
    assert bias > 1e-3
    n = next(n for n in (100_000, 400_000, 1_600_000) if bias > 2 * tv_threshold(target, n))
    sim = simulate(sc(T.P, T.Q, 0, 4, rule=rule, seed=5), n=n, n_tokens=2)
    assert tv(sim.law, target) > tv_threshold(target, n)


@pytest.mark.parametrize("rule", LOSSLESS)
def test_monte_carlo_executes_the_tree(rule):
    n = 300_000
    exact = exact_joint(sc(T.P, T.Q, 0, 4, rule=rule), n_tokens=2)
    sim = simulate(sc(T.P, T.Q, 0, 4, rule=rule, seed=6), n=n, n_tokens=2)
    assert tv(sim.law, exact) <= tv_threshold(exact, n)
    hist = round_law(sc(T.P, T.Q, 0, 4, rule=rule)).histogram
    first = simulate(sc(T.P, T.Q, 0, 4, rule=rule, seed=7), n=n, n_tokens=1)
    assert tv(first.histogram / n, hist) <= tv_threshold(hist, n)


def test_a_wider_tree_keeps_more_than_the_chain():
    chain = round_law(sc(T.P, T.Q, 0, 4, rule="correct"), long_run=True).tokens_per_call
    for rule in LOSSLESS:
        assert round_law(sc(T.P, T.Q, 0, 4, rule=rule), long_run=True).tokens_per_call > chain
    # the chain preset is the standard rule
    r = get_rule("tree_iid").with_params(shape=0)
    assert round_law(sc(T.P, T.Q, 0, 4, rule=r), long_run=True).tokens_per_call == pytest.approx(
        chain, abs=1e-12)


@pytest.mark.slow  # over 2 s on a quiet core (tests/conftest.py)
def test_scalar_tree_rounds_follow_the_exact_law_and_step_in_order():
    pair, n = TablePair(T.P, T.Q), 3_000
    rng = np.random.default_rng(9)
    hist = np.zeros(4)
    for _ in range(n):
        tr = narrated_round(pair, 1, 3, rng=rng, rule="tree_wor")
        hist[tr.accepted] += 1
    law = round_law(sc(T.P, T.Q, 1, 3, rule="tree_wor")).histogram
    assert tv(hist / n, law) <= tv_threshold(law, n)
    kinds = [s.kind for s in tr.steps]
    assert kinds[0] == "start" and kinds[-1] == "done" and "verify" in kinds
    for pos in tr.positions:  # distinct siblings, tried in order, at most one kept
        toks = [t.token for t in pos.tries]
        assert len(set(toks)) == len(toks)
        assert [t.accepted for t in pos.tries].count(True) <= 1


def test_dynamic_policies_run_trees_and_refuse_block():
    from specviz.core.dynamic import run_policy

    run = run_policy(sc(T.P, T.Q, 0, 3, rule="tree_wor", seed=1), policy="constant", length=300)
    assert run.tokens >= 300 and run.accepted <= 3 * run.rounds
    with pytest.raises(ValueError, match="block"):
        run_policy(sc(T.P, T.Q, 0, 3, rule="block", seed=1), policy="constant", length=300)


# ------------------------------------------------------------------ trees given as paths
MEDUSA = "[[0], [1], [0, 0], [0, 1], [1, 0]]"  # Medusa's choices format
LOPSIDED = "[[0], [1], [2], [0, 0], [0, 1], [0, 0, 0], [2, 0], [0, 0, 0, 0]]"


def test_paths_parse_in_medusa_and_branching_forms():
    assert treeshape.parse_paths(MEDUSA) == ((0,), (1,), (0, 0), (0, 1), (1, 0))
    assert treeshape.parse_paths("((1,), (0,), (0, 0),)") == ((0,), (1,), (0, 0))  # any order
    three_two_one = treeshape.TreeShape.from_branching("x", (3, 2, 1))
    assert treeshape.parse_paths("3-2-1") == three_two_one.paths
    shape = treeshape.rule_shape(get_rule("tree_iid").with_params(shape=0), 3)  # the preset
    assert shape.nodes == 3
    r = rules_with(LOPSIDED)
    assert treeshape.rule_shape(r, 2).paths == ((0,), (1,), (2,), (0, 0), (0, 1), (2, 0))  # cut
    assert treeshape.rule_shape(r, 9).depth == 4 and treeshape.rule_shape(r, 9).width == 3


@pytest.mark.parametrize("text, why", [
    ("[[0], [2]]", "without its earlier sibling [1]"),
    ("[[0, 0]]", "no parent [0]"),
    ("[[0], [0]]", "appears twice"),
    ("[[0], [-1]]", "path 2 is not"),
    ("[[0], [1.5]]", "path 2 is not"),
    ("[[0], [true]]", "path 2 is not"),
    ("[[0], []]", "path 2 is not"),
    ("[]", "non-empty list"),
    ("{\"a\": 1}", "non-empty list"),
    ("hello", "nor a branching"),
    ("20-20", "the cap is 256"),
    ("[" + ",".join(f"[{i}]" for i in range(300)) + "]", "the cap is 256"),
    ("[" * 5000, "over 4,000 characters"),
])
def test_malformed_paths_say_what_is_wrong(text, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        treeshape.parse_paths(text)


def test_paths_deeper_than_the_engine_drafts_are_refused():
    with pytest.raises(ValueError, match="65 deep; the cap is 64"):
        treeshape.check_paths([[0] * d for d in range(1, 66)])


def rules_with(text: str, rule: str = "tree_iid"):
    from specviz.core.rules import with_tree

    return with_tree(rule, treeshape.parse_paths(text))


def test_with_tree_leaves_other_rules_alone_and_checks_the_paths():
    from specviz.core.rules import with_tree

    assert with_tree("correct", ((0,),)) is get_rule("correct")
    assert with_tree("tree_wor", ()) is get_rule("tree_wor")
    assert with_tree("tree_wor", [[0], [1]]).paths == ((0,), (1,))
    with pytest.raises(ValueError, match="no parent"):
        with_tree("tree_wor", [[0, 1]])


@pytest.mark.parametrize("rule", LOSSLESS)
@pytest.mark.parametrize("text", [MEDUSA, LOPSIDED, "[[0], [1], [2], [3], [4], [5], [6]]"])
def test_path_trees_are_exact_on_random_tables_with_zeros(rule, text):
    r = rules_with(text, rule)
    for seed in range(2):
        P, Q = random_tables(np.random.default_rng(600 + seed), V=4)
        for k in (1, 2, 5):
            for n in (1, 2, 3):
                np.testing.assert_allclose(exact_joint(sc(P, Q, 2, k, rule=r), n_tokens=n),
                                           target_joint(P, 2, n_tokens=n), rtol=0, atol=1e-12)


@pytest.mark.parametrize("rule", LOSSLESS + BROKEN)
def test_path_tree_dp_matches_the_literal_enumeration(rule):
    r = rules_with(LOPSIDED, rule)
    for k in (1, 3):
        law = exact_joint(sc(T.P, T.Q, 0, k, rule=r), n_tokens=2)
        np.testing.assert_allclose(law, brute_array(T.P, T.Q, 0, k, 2, r), rtol=0, atol=1e-12)
        if rule in BROKEN and k == 3:  # biased here, so the tree's shape shows in the law
            assert tv(law, target_joint(T.P, 0, n_tokens=2)) > 1e-3


def test_monte_carlo_and_the_round_draft_the_path_tree():
    r = rules_with(LOPSIDED, "tree_wor")
    n, k = 300_000, 3
    exact = exact_joint(sc(T.P, T.Q, 0, k, rule=r), n_tokens=2)
    sim = simulate(sc(T.P, T.Q, 0, k, rule=r, seed=8), n=n, n_tokens=2)
    assert tv(sim.law, exact) <= tv_threshold(exact, n)
    hist = round_law(sc(T.P, T.Q, 0, k, rule=r)).histogram
    first = simulate(sc(T.P, T.Q, 0, k, rule=r, seed=9), n=n, n_tokens=1)
    assert tv(first.histogram / n, hist) <= tv_threshold(hist, n)
    # negative control: the preset tree's histogram is refused for the path tree's runs
    other = round_law(sc(T.P, T.Q, 0, k, rule="tree_wor")).histogram
    assert tv(first.histogram / n, other) > tv_threshold(other, n)
    pair = TablePair(T.P, T.Q)
    for seed in range(20):
        tr = play_round(Scenario.on(pair, 0, k=k, rule=r), rng=np.random.default_rng(seed))
        assert {p for p, _ in tr.tree} <= set(treeshape.rule_shape(r, k).paths)
        assert {p for p, _ in tr.tree if len(p) == 1} == {(0,), (1,), (2,)}
        assert all(len(pos.tries) <= (3 if pos.i == 1 else 2) for pos in tr.positions)


def test_broken_rules_on_a_path_tree_are_biased():
    target = target_joint(T.P, 0, n_tokens=2)
    r = rules_with("[[0], [1], [2], [0, 0], [0, 1], [0, 2]]", "tree_first_residual")
    assert tv(exact_joint(sc(T.P, T.Q, 0, 3, rule=r), n_tokens=2), target) > 1e-3


def test_wide_trees_without_replacement_state_their_cap():
    P, Q = random_tables(np.random.default_rng(1), V=64, zero_frac=0.0)
    r = rules_with("[[0], [1], [2]]", "tree_wor")
    with pytest.raises(ValueError, match="cap"):
        round_law(sc(P, Q, 0, 2, rule=r))
    law = round_law(sc(P, Q, 0, 2, rule=rules_with("[[0], [1], [2]]")))  # i.i.d.: no orders
    assert len(law.histogram) == 3 and law.histogram[2] == 0  # one level: nothing kept at 2
    assert law.tokens_per_call == pytest.approx(1 + law.histogram[1], abs=1e-12)


def _one_hot_draft():
    """The default pair with the draft warped to its top-1 token: q is one-hot in every row,
    so a node has one token to draft without replacement."""
    from specviz.core.warp import Warp, warp_tables

    return warp_tables(T.P, T.Q, Warp(top_k=1, draft=True))


@pytest.mark.parametrize("text, tables", [("8", "default"), ("7-1", "default"),
                                          ("3", "one-hot draft")])
def test_siblings_past_the_drafts_support_do_not_exist(text, tables):
    """More siblings than the row has tokens to draw without replacement: the siblings that
    cannot be drawn are not there. The scalar round plays (it raised KeyError), the exact law
    is the literal enumeration's and the target's, and both samplers follow it."""
    from specviz.core.rules import with_tree

    P, Q = (T.P, T.Q) if tables == "default" else _one_hot_draft()
    r = with_tree("tree_wor", treeshape.parse_paths(text))
    exact = exact_joint(sc(P, Q, 0, 2, rule=r), n_tokens=2)
    np.testing.assert_allclose(exact, brute_array(P, Q, 0, 2, 2, r), rtol=0, atol=1e-12)
    np.testing.assert_allclose(exact, target_joint(P, 0, n_tokens=2), rtol=0, atol=1e-12)
    n = 200_000
    sim = simulate(sc(P, Q, 0, 2, rule=r, seed=12), n=n, n_tokens=2)
    assert tv(sim.law, exact) <= tv_threshold(exact, n)
    pair, rng, m = TablePair(P, Q), np.random.default_rng(13), 2_000
    first, hist = np.zeros(P.shape[0]), np.zeros(3)
    for _ in range(m):
        tr = play_round(Scenario.on(pair, 0, k=2, rule=r), rng=rng)
        first[tr.tokens[0]] += 1
        hist[tr.accepted] += 1
        assert all(len({t.token for t in pos.tries}) == len(pos.tries) for pos in tr.positions)
    law = round_law(sc(P, Q, 0, 2, rule=r)).histogram
    assert tv(hist / m, law) <= tv_threshold(law, m)
    assert tv(first / m, P[0]) <= tv_threshold(P[0], m)
    wrong = np.full(P.shape[0], 1 / P.shape[0])
    assert tv(first / m, wrong) > tv_threshold(wrong, m)  # negative control: it can fail


@pytest.mark.parametrize("rule", [get_rule("multi_draft").with_params(m=m) for m in (1, 3, 8)]
                         + [get_rule("tree_iid").with_params(shape=1),
                            get_rule("tree_first_residual").with_params(shape=2)])
def test_tabled_siblings_walk_the_same_round_as_the_rows(rule):
    """i.i.d. siblings read from the tables of (sibling j, context) give, uniform for
    uniform, the round that computes p_j and q's draws row by row; without replacement
    the siblings are never tabled."""
    rng = np.random.default_rng(4)
    for P, Q in ((T.P, T.Q), random_tables(rng, 12), random_tables(rng, 40, 0.6)):
        shape = treeshape.rule_shape(rule, 5)
        tabled = tree.sibling_tables(P, Q, shape.width, rule.tree)
        assert tabled is not None
        ctx = rng.integers(0, P.shape[0], 4_000)
        bonus = BucketSampler(P)  # y ~ P[c]
        rows = tree.tree_round(P, Q, shape, rule.tree, bonus, ctx, np.random.default_rng(8))
        read = tree.tree_round(P, Q, shape, rule.tree, bonus, ctx, np.random.default_rng(8),
                               tabled=tabled)
        for a, b in zip(rows, read, strict=True):
            np.testing.assert_array_equal(a, b)
    for mode in ("wor", "as_iid"):
        assert tree.sibling_tables(T.P, T.Q, 3, mode) is None
    assert tree.sibling_tables(T.P, T.Q, tree.SIBLING_CELLS_MAX, "iid") is None
