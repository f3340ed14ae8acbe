"""Block verification (Sun et al. 2024, arXiv 2403.10444): exact, never worse than token
by token, and its three engines agree. Oracles: tests/brute.py's literal enumeration of
every block and every outcome of its backward coins, and hand-worked numbers."""

from __future__ import annotations

import numpy as np
import pytest
from brute import block_outcomes, brute_array
from hypothesis import given, settings
from hypothesis import strategies as st
from scenarios import sc
from support import narrated_round, random_tables

from specviz import default_tables, exact_joint, round_law, simulate, target_joint, tv
from specviz.analysis.stats import tv_threshold
from specviz.core.kinds import block
from specviz.core.kinds.block import BLOCK_STATES_MAX, round_tables, value_functions
from specviz.core.pair import TablePair
from specviz.core.round import play_round
from specviz.core.scenario import Scenario

T = default_tables()


@pytest.mark.parametrize("seed", range(3))
def test_block_law_equals_target_on_random_tables_with_zeros(seed):
    rng = np.random.default_rng(300 + seed)
    P, Q = random_tables(rng, V=4)
    assert (P == 0).any() and (Q == 0).any()
    for k in range(1, 7):
        for n in (1, 2, 3):
            np.testing.assert_allclose(exact_joint(sc(P, Q, seed, k, rule="block"), n_tokens=n),
                                       target_joint(P, seed, n_tokens=n), rtol=0, atol=1e-12)


def test_block_law_equals_target_where_draft_and_target_rows_agree():
    """Rows with p = q leave nothing to correct with (S = 0, w = 1): h must be 0 there."""
    P, Q = random_tables(np.random.default_rng(9), V=3)
    Q[1] = P[1]
    for k in (2, 3, 4):
        np.testing.assert_allclose(exact_joint(sc(P, Q, 0, k, rule="block"), n_tokens=3),
                                   target_joint(P, 0, n_tokens=3),
                                   rtol=0, atol=1e-12)


@pytest.mark.parametrize("backward", [0, 1, None])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_round_tables_match_the_literal_enumeration(k, backward):
    P, Q = random_tables(np.random.default_rng(40 + k), V=3)
    D, N = round_tables(P, Q, k, backward=backward)
    for c in range(3):
        kept, ends = np.zeros(k + 1), np.zeros(3)
        for seq, pr in block_outcomes(P, Q, c, k).items():
            kept[len(seq) - 1] += pr
            ends[seq[-1]] += pr
        np.testing.assert_allclose(D[c], kept, rtol=0, atol=1e-12)
        np.testing.assert_allclose(N[c], ends, rtol=0, atol=1e-12)


def test_two_token_example_by_hand():
    """Binary vocabulary, context-free models p = (1/3, 2/3), q = (2/3, 1/3), k = 1: block
    and token verification coincide; keep 'a' with 1/2, 'b' always: E[kept] = 2/3."""
    P = np.tile([1 / 3, 2 / 3], (2, 1))
    Q = np.tile([2 / 3, 1 / 3], (2, 1))
    assert round_law(sc(P, Q, 0, 1, rule="block")).histogram[1] == pytest.approx(2 / 3, abs=1e-15)
    # k = 2 by hand: blocks aa, ab, ba, bb with q = 4/9, 2/9, 2/9, 1/9 and weights
    # w1 = 1/2, 1, w2 = min(1, w1 p/q); E[kept] = sum_i E_q[w_i]
    w1 = {0: 0.5, 1: 1.0}
    w2 = {(a, b): min(1.0, w1[a] * P[0, b] / Q[0, b]) for a in (0, 1) for b in (0, 1)}
    q = {(a, b): Q[0, a] * Q[0, b] for a in (0, 1) for b in (0, 1)}
    want = sum(Q[0, a] * w1[a] for a in (0, 1)) + sum(q[x] * w2[x] for x in q)
    law = round_law(sc(P, Q, 0, 2, rule="block"))
    assert law.histogram @ np.arange(3) == pytest.approx(want, abs=1e-14)
    token = round_law(sc(P, Q, 0, 2, rule="correct"))
    assert law.histogram @ np.arange(3) > token.histogram @ np.arange(3) + 1e-3


@settings(max_examples=25, deadline=2_000)  # each example: two exact laws at V <= 5, k <= 5
@given(seed=st.integers(0, 10**6), V=st.integers(2, 5), k=st.integers(1, 5))
def test_block_never_keeps_fewer_than_token_by_token(seed, V, k):
    P, Q = random_tables(np.random.default_rng(seed), V=V)
    for ctx in range(V):
        block = round_law(sc(P, Q, ctx, k, rule="block")).histogram @ np.arange(k + 1)
        token = round_law(sc(P, Q, ctx, k, rule="correct")).histogram @ np.arange(k + 1)
        assert block >= token - 1e-12


def test_monte_carlo_executes_block_verification():
    n = 400_000
    exact = exact_joint(sc(T.P, T.Q, 0, 4, rule="block"), n_tokens=2)
    sim = simulate(sc(T.P, T.Q, 0, 4, rule="block", seed=3), n=n, n_tokens=2)
    assert tv(sim.law, exact) <= tv_threshold(exact, n)
    law = round_law(sc(T.P, T.Q, 0, 4, rule="block"))
    first = simulate(sc(T.P, T.Q, 0, 4, rule="block", seed=4), n=n, n_tokens=1)
    assert tv(first.histogram / n, law.histogram) <= tv_threshold(law.histogram, n)


def test_negative_control_token_by_token_histogram_is_refused():
    """The same histogram test refuses token-by-token's law for block's runs."""
    n = 400_000
    token = round_law(sc(T.P, T.Q, 0, 4, rule="correct")).histogram
    first = simulate(sc(T.P, T.Q, 0, 4, rule="block", seed=4), n=n, n_tokens=1)
    assert tv(first.histogram / n, token) > tv_threshold(token, n)


def test_scalar_round_steps_and_totals():
    pair = TablePair(T.P, T.Q)
    for seed in range(30):
        tr = narrated_round(pair, 0, 4, rng=np.random.default_rng(seed), rule="block")
        kinds = [s.kind for s in tr.steps]
        assert kinds[0] == "start" and kinds[-1] == "done" and kinds.count("draft") == 4
        assert tr.accepted == sum(1 for e in tr.emitted if e.origin == "accepted")
        assert len(tr.emitted) == tr.accepted + 1
        verify = [s.position for s in tr.steps if s.kind == "verify"]
        assert verify == sorted(verify, reverse=True) and verify[0] == 4  # backwards


def test_scalar_rounds_follow_the_exact_law():
    pair, n = TablePair(T.P, T.Q), 4_000
    rng = np.random.default_rng(5)
    hist = np.zeros(4)
    for _ in range(n):
        hist[play_round(Scenario.on(pair, 2, k=3, rule="block"), rng=rng).accepted] += 1
    law = round_law(sc(T.P, T.Q, 2, 3, rule="block")).histogram
    assert tv(hist / n, law) <= tv_threshold(law, n)


@pytest.mark.parametrize("seed", range(4))
def test_value_functions_agree_with_the_forward_walk(seed):
    """Every split of the levels between the forward walk (backward = 0: the walk alone,
    over merged (start, token, w) states) and the value functions gives the same tables."""
    rng = np.random.default_rng(500 + seed)
    P, Q = (T.P, T.Q) if seed == 0 else random_tables(rng, V=int(rng.integers(2, 6)))
    for k in range(1, 9 if seed == 0 else 7):
        D0, N0 = round_tables(P, Q, k, backward=0)
        for backward in {1, k // 2, k, None}:
            D, N = round_tables(P, Q, k, backward=backward)
            np.testing.assert_allclose(D, D0, rtol=0, atol=1e-12)
            np.testing.assert_allclose(N, N0, rtol=0, atol=1e-12)


def test_value_functions_are_linear_between_their_knots():
    """F_r(c, .) read between two knots equals the function's own value there: the one-level
    recursion evaluated directly at the midpoint of every piece (the kinks are complete)."""
    from specviz.core.rule import ratio

    P, Q = T.P, T.Q
    R = ratio(P, Q)
    knots, vals = value_functions(P, Q, R, 3)
    below_k, below_v = value_functions(P, Q, R, 2)
    for c in range(6):
        mid = 0.5 * (knots[c][1:] + knots[c][:-1])  # (pieces,)
        want = np.zeros((len(mid), 4 + 6))
        d = np.maximum(mid[:, None] * P[c] - Q[c], 0.0)
        want[:, 0], want[:, 4:] = d.sum(axis=1), d
        for x in range(6):
            w = np.minimum(1.0, mid * R[c, x])
            f = np.stack([np.interp(w, below_k[x], below_v[x][:, j])
                          for j in range(below_v[x].shape[1])], axis=1)
            want[:, 1:4] += Q[c, x] * f[:, :3]
            want[:, 4:] += Q[c, x] * f[:, 3:]
        got = np.stack([np.interp(mid, knots[c], vals[c][:, j])
                        for j in range(vals[c].shape[1])], axis=1)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


@pytest.mark.slow  # over 2 s on a quiet core (tests/conftest.py)
def test_k16_exact_law_matches_monte_carlo():
    """k = 16 on the default pair: the exact first-round histogram against n decodes at the
    TV threshold from n, and the exact long run against a measured decode; negative control:
    the law at k = 15 is refused by the same histogram test."""
    n, k = 400_000, 16
    law = round_law(sc(T.P, T.Q, 0, k, rule="block")).histogram
    first = simulate(sc(T.P, T.Q, 0, k, rule="block", seed=8), n=n, n_tokens=1)
    assert tv(first.histogram / n, law) <= tv_threshold(law, n)
    off = np.append(round_law(sc(T.P, T.Q, 0, k - 1, rule="block")).histogram, 0.0)
    assert tv(first.histogram / n, off) > tv_threshold(off, n)
    from specviz import long_decode

    exact = round_law(sc(T.P, T.Q, 0, k, rule="block"), long_run=True).tokens_per_call
    st_ = long_decode(sc(T.P, T.Q, 0, k, rule="block", seed=3), n_rounds=200_000, chains=500)
    assert abs(st_.tokens_per_call - exact) < 6 * st_.tokens_per_call_se


def test_the_exact_law_states_its_cap():
    with pytest.raises(ValueError, match="cap"):
        round_law(sc(T.P, T.Q, 0, 32, rule="block"), long_run=True)
    assert BLOCK_STATES_MAX >= 100_000


def test_brute_array_reads_block_rule():
    P, Q = random_tables(np.random.default_rng(2), V=3)
    np.testing.assert_allclose(brute_array(P, Q, 1, 2, 2, "block"), target_joint(P, 1, n_tokens=2),
                               atol=1e-12)


def test_block_walk_is_priced_before_it_is_enumerated(monkeypatch):
    """/?rule=block&k=32 enumerated 3,048,062 states (12-15 s) before refusing; now the
    walk is priced from its first levels and refused before anything large is built."""
    sizes = []
    grow = block._grow

    def spy(*args):
        out = grow(*args)
        sizes.append(len(out[0]))
        return out

    monkeypatch.setattr(block, "_grow", spy)
    with pytest.raises(ValueError, match="priced from its first levels"):
        block.round_tables(T.P, T.Q, 32)
    assert max(sizes) <= block.PROBE_STATES * T.P.shape[0]
    D, N = block.round_tables(T.P, T.Q, 8)  # a walk under the cap still runs, exactly
    assert np.allclose(D.sum(axis=1), 1.0) and np.allclose(N.sum(axis=1), 1.0)
