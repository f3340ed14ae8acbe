"""The two lines of the rule, the published walkthrough of row 'a', and the edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scenarios import sc

from specviz import (
    accept_prob,
    accepts,
    default_tables,
    exact_joint,
    overlap,
    play_round,
    residual,
    round_law,
    target_joint,
)
from specviz.core.pair import TablePair
from specviz.core.scenario import Scenario

VOCAB = "abcdef"


def _law(V: int):
    raw = arrays(np.float64, V, elements=st.floats(0, 1, allow_subnormal=False))
    return raw.filter(lambda w: w.sum() > 1e-3).map(lambda w: w / w.sum())


@st.composite
def pairs(draw):
    V = draw(st.integers(2, 8))
    return draw(_law(V)), draw(_law(V))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(pairs())
def test_kept_mass_plus_residual_mass_is_p(pq):
    """q(x) min(1, p/q) + (1 - beta) residual(x) = min(p, q) + max(0, p - q) = p."""
    p, q = pq
    kept = np.array([q[x] * accept_prob(p, q, x) for x in range(len(p))])
    beta = overlap(p, q)
    np.testing.assert_allclose(kept + (1 - beta) * residual(p, q), p, atol=1e-12)
    np.testing.assert_allclose(kept.sum(), beta, atol=1e-12)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(pairs())
def test_residual_is_a_law_supported_where_p_exceeds_q(pq):
    p, q = pq
    r = residual(p, q)
    assert np.all(r >= 0) and r.sum() == pytest.approx(1.0)
    if (p - q).clip(0).sum() > 1e-9:
        assert np.all(r[p <= q] == 0)


def test_row_a_walkthrough():
    T = default_tables()
    p, q = T.P[0], T.Q[0]
    np.testing.assert_array_equal(np.round(p, 4), [0.0943, 0.3100, 0.0908, 0.0015, 0.3821, 0.1213])
    np.testing.assert_array_equal(np.round(q, 4), [0.0823, 0.2638, 0.0777, 0.0013, 0.4479, 0.1270])
    assert accept_prob(p, q, VOCAB.index("b")) == 1.0
    assert accept_prob(p, q, VOCAB.index("e")) == pytest.approx(0.8532, abs=5e-5)
    assert 1 - accept_prob(p, q, VOCAB.index("e")) == pytest.approx(0.147, abs=5e-4)
    np.testing.assert_allclose(residual(p, q), [0.1673, 0.6457, 0.1838, 0.0032, 0, 0], atol=5e-5)


def test_p_zero_is_never_accepted_even_at_u_zero():
    assert not accepts(0.0, 0.0, 0.3)
    assert accept_prob(np.array([0.0, 1.0]), np.array([0.5, 0.5]), 0) == 0.0
    assert accepts(0.0, 1e-300, 0.3)  # any positive p passes at u = 0


def test_q_zero_entries():
    p, q = np.array([0.5, 0.5]), np.array([1.0, 0.0])
    assert accept_prob(p, q, 1) == 1.0  # never drafted; min(1, inf)
    assert accept_prob(np.array([1.0, 0.0]), q, 1) == 0.0


def test_p_equals_q_always_accepts_and_has_no_nan():
    p = np.array([0.2, 0.3, 0.5])
    r = residual(p, p)
    assert np.isfinite(r).all()
    np.testing.assert_allclose(r, p)  # the documented fallback
    P = np.tile(p, (3, 1))
    law = round_law(sc(P, P, 0, 4))
    assert law.histogram[-1] == pytest.approx(1.0)
    tr = play_round(Scenario.on(TablePair(P, P), 0, k=4), rng=np.random.default_rng(0))
    assert tr.accepted == 4 and tr.emitted[-1].origin == "bonus"


def test_disjoint_supports_always_reject_with_residual_p():
    p, q = np.array([0.6, 0.4, 0.0, 0.0]), np.array([0.0, 0.0, 0.5, 0.5])
    np.testing.assert_allclose(residual(p, q), p)
    P = np.array([p, p, p, p])
    Q = np.array([q, q, q, q])
    law = round_law(sc(P, Q, 0, 3))
    assert law.histogram[0] == pytest.approx(1.0)
    for seed in range(20):
        tr = play_round(Scenario.on(TablePair(P, Q), 0, k=3), rng=np.random.default_rng(seed))
        assert tr.rejected_at == 1 and tr.emitted[0].origin == "resampled"
        assert tr.emitted[0].token in (0, 1)


def test_one_hot_draft_is_still_exact():
    """A greedy or prompt-lookup drafter proposes one token: q is one-hot."""
    T = default_tables()
    Q = np.eye(6)[np.argmax(T.Q, axis=1)]
    for k in (1, 3):
        np.testing.assert_allclose(exact_joint(sc(T.P, Q, 0, k), n_tokens=2), target_joint(T.P, 0,
                                                                                       n_tokens=2),
                                   atol=1e-12)
    law = round_law(sc(T.P, Q, 0, 1))
    assert law.per_position[0] == pytest.approx(T.P[0, np.argmax(T.Q[0])])
