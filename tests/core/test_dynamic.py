"""Dynamic draft length: hand-worked sequences, shared randomness, and exactness."""

from __future__ import annotations

import numpy as np
import pytest
from scenarios import rule_sweep, sc

from specviz import default_tables, target_joint, tv, tv_threshold
from specviz.core.dynamic import POLICIES, run_policies, run_policy
from specviz.core.rules import RULES, target_of

T = default_tables()
SAME = np.full((3, 3), 1 / 3)  # p == q: every draft is kept
P_DISJOINT = np.array([[1.0, 0.0, 0.0]] * 3)
Q_DISJOINT = np.array([[0.0, 0.5, 0.5]] * 3)  # never a token p allows: every draft rejected


def test_constant_always_accepting():
    run = run_policy(sc(SAME, SAME, 0, 4), policy="constant", length=50)
    assert run.ks == [4] * 10 and run.tokens == 50
    assert run.rounds == 10 and run.drafted == 40
    assert run.speedup(0.0) == pytest.approx(5.0)
    assert run.speedup(0.25) == pytest.approx(50 / (10 + 10))


def test_heuristic_grows_by_two_and_caps():
    run = run_policy(sc(SAME, SAME, 0, 2), policy="heuristic", length=60, k_max=9)
    assert run.ks[:5] == [2, 4, 6, 8, 9]
    assert set(run.ks[4:]) == {9}


def test_heuristic_shrinks_by_one_to_one():
    run = run_policy(sc(P_DISJOINT, Q_DISJOINT, 0, 4), policy="heuristic", length=8)
    assert run.ks == [4, 3, 2, 1, 1, 1, 1, 1]
    assert run.accepted == 0 and run.tokens == 8
    assert run.text == [0] * 8  # the residual is p itself


def test_oracle_drafts_nothing_when_everything_would_be_rejected():
    run = run_policy(sc(P_DISJOINT, Q_DISJOINT, 0, 4), policy="oracle", length=5)
    assert run.ks == [0] * 5 and run.drafted == 0
    assert run.speedup(0.5) == pytest.approx(1.0)  # no worse than plain decoding
    assert run.text == [0] * 5


def test_oracle_drafts_up_to_k_max_when_all_would_pass():
    run = run_policy(sc(SAME, SAME, 0), policy="oracle", length=34, k_max=16)
    assert run.ks == [16, 16] and run.tokens == 34


def test_oracle_text_is_that_of_k_max_with_fewer_drafts():
    oracle = run_policy(sc(T.P, T.Q, 0, seed=4), policy="oracle", length=500, k_max=8)
    full = run_policy(sc(T.P, T.Q, 0, 8, seed=4), policy="constant", length=500)
    assert oracle.text == full.text and oracle.rounds == full.rounds
    assert oracle.drafted < full.drafted


def test_confidence_threshold_hand_worked():
    """a -> b -> c surely; c's top probability is 0.4. With threshold 0.5 a round from 'a'
    drafts 'b' (top 1.0: go on), then 'c' (top 0.4: stop): k = 2, all kept, then a bonus."""
    Q = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.4, 0.3, 0.3]])
    run = run_policy(sc(Q, Q, 0), policy="confidence", length=3, threshold=0.5, k_max=6)
    assert run.ks[0] == 2 and run.text[:2] == [1, 2] and run.accepted == 2
    every = run_policy(sc(Q, Q, 0), policy="confidence", length=30, threshold=0.0, k_max=6)
    assert set(every.ks) == {6}
    # at a top probability equal to the threshold the draft goes on ("while top >= threshold")
    edge = run_policy(sc(Q, Q, 0), policy="confidence", length=3, threshold=0.4, k_max=3)
    assert edge.ks[0] == 3


def test_policies_share_the_stream():
    runs = run_policies(sc(T.P, T.Q, 0, 4, seed=3), length=400)
    # the first round's first draft is the same token for every policy that drafts
    firsts = {p: r.text[0] for p, r in runs.items() if r.ks[0] > 0}
    assert len(set(firsts.values())) <= 2  # kept draft, or a rejection token at t = 0
    assert runs["constant"].ks == [4] * len(runs["constant"].ks)


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_is_exact(policy):
    """The first two tokens over many seeds follow the target's law."""
    n = 6_000
    counts = np.zeros((6, 6))
    for s in range(n):
        text = run_policy(sc(T.P, T.Q, 0, 3, seed=s), policy=policy, length=2).text
        counts[text[0], text[1]] += 1
    target = target_joint(T.P, 0, n_tokens=2)
    assert tv(counts / n, target) <= tv_threshold(target, n)


def test_bad_input():
    with pytest.raises(ValueError, match="valid policies"):
        run_policy(sc(T.P, T.Q, 0), policy="greedy")
    with pytest.raises(ValueError, match="threshold"):
        run_policy(sc(T.P, T.Q, 0), policy="confidence", threshold=2.0)


LOSSLESS = [name for name, r in RULES.items() if r.lossless and r.kind != "block"]


@pytest.mark.parametrize("rule, policy", rule_sweep(LOSSLESS, POLICIES))
def test_every_lossless_rule_is_exact_under_every_policy(policy, rule):
    """The policies play the one round, so every rule of the registry runs under them
    (block verification excepted: it refuses, see below); the lossless ones keep the law
    they must follow (the target's, or the warped target's) for the first two tokens."""
    n = 3_000
    counts = np.zeros((6, 6))
    for s in range(n):
        text = run_policy(sc(T.P, T.Q, 0, 3, rule=rule, seed=s), policy=policy, length=2).text
        counts[text[0], text[1]] += 1
    target = target_joint(target_of(rule, T.P, T.Q), 0, n_tokens=2)
    assert tv(counts / n, target) <= tv_threshold(target, n)


def test_block_verification_is_refused_by_the_policies():
    with pytest.raises(ValueError, match="block verification"):
        run_policy(sc(T.P, T.Q, 0, rule="block"))


@pytest.mark.parametrize("policy", POLICIES)
def test_a_broken_rule_under_a_policy_is_caught(policy):
    """Negative control: greedy (exact TV 0.39 at k = 4) is refused by the same check."""
    n = 3_000
    counts = np.zeros((6, 6))
    for s in range(n):
        text = run_policy(sc(T.P, T.Q, 0, 3, rule="greedy", seed=s), policy=policy, length=2).text
        counts[text[0], text[1]] += 1
    target = target_joint(T.P, 0, n_tokens=2)
    assert tv(counts / n, target) > tv_threshold(target, n)
