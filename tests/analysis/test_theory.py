from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.analysis import theory
from specviz.analysis.theory import (
    K_MAX,
    acceptance_histogram,
    alpha_from_draft_acceptance_rate,
    best_k,
    break_even_cost,
    draft_acceptance_rate,
    expected_tokens,
    per_position_acceptance,
    speedup,
    walltime_speedup,
)

alphas = st.floats(0.0, 1.0, allow_nan=False)
ks = st.integers(1, K_MAX)
costs = st.floats(0.0, 5.0, allow_nan=False)


# --------------------------------------------------------------------------- expected_tokens


@pytest.mark.parametrize("k", [1, 2, 4, 16, K_MAX])
def test_expected_tokens_is_k_plus_one_at_alpha_one(k: int) -> None:
    assert expected_tokens(1.0, k) == k + 1


def test_expected_tokens_is_one_at_alpha_zero() -> None:
    assert expected_tokens(0.0, 7) == 1.0


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(alphas, ks)
def test_expected_tokens_matches_direct_sum(alpha: float, k: int) -> None:
    direct = math.fsum(alpha**i for i in range(k + 1))
    assert expected_tokens(alpha, k) == pytest.approx(direct, rel=1e-12)


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(st.floats(0.0, 0.999, allow_nan=False), ks)
def test_expected_tokens_matches_closed_form(alpha: float, k: int) -> None:
    closed = (1 - alpha ** (k + 1)) / (1 - alpha)
    assert expected_tokens(alpha, k) == pytest.approx(closed, rel=1e-9)


def test_expected_tokens_is_stable_near_one() -> None:
    # The closed form loses digits here; the sum must tend smoothly to k + 1.
    assert expected_tokens(1 - 1e-12, 4) == pytest.approx(5.0, abs=1e-9)


def test_expected_tokens_broadcasts() -> None:
    a = np.array([0.0, 0.5, 1.0])[:, None]  # (3, 1)
    k = np.array([1, 2, 4])  # (3,)
    out = expected_tokens(a, k)
    assert isinstance(out, np.ndarray) and out.shape == (3, 3)
    assert out[2].tolist() == [2.0, 3.0, 5.0]
    assert out[1].tolist() == [1.5, 1.75, 1.9375]
    assert isinstance(expected_tokens(0.5, 3), float)


def test_spec_table_alpha_one() -> None:
    # SPEC demo 3: alpha 1.00 -> 5.0 tokens/call and 3.571x at k = 4, c = 0.10.
    assert expected_tokens(1.0, 4) == 5.0
    assert round(walltime_speedup(1.0, 4, 0.1), 3) == 3.571


# --------------------------------------------------------------------------- cost model


def test_speedup_tutorial_numbers() -> None:
    assert round(speedup(5.0, 4, 0.1), 3) == 3.571
    assert speedup(5.0, 4, 0.1) == pytest.approx(5.0 / 1.4)
    # SPEC demo 5: 2.81 tokens/call at k = 4 (2.8064 unrounded)
    assert round(break_even_cost(2.8064, 4), 4) == 0.4516
    assert speedup(2.81, 4, 0.6) == pytest.approx(2.81 / 3.4)
    assert round(speedup(2.8064, 4, 0.6), 3) == 0.825
    assert round(speedup(2.8064, 4, 1.0), 3) == 0.561


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(st.floats(1.0, 5.0), st.integers(4, K_MAX))
def test_speedup_is_one_at_break_even(tokens: float, k: int) -> None:
    assert speedup(tokens, k, break_even_cost(tokens, k)) == pytest.approx(1.0)


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(alphas, ks, costs)
def test_walltime_speedup_is_thm_3_8(alpha: float, k: int, c: float) -> None:
    expected = expected_tokens(alpha, k) / (k * c + 1)
    assert walltime_speedup(alpha, k, c) == pytest.approx(expected, rel=1e-12)
    assert walltime_speedup(alpha, k, c) == pytest.approx(
        speedup(expected_tokens(alpha, k), k, c), rel=1e-12
    )


def test_speedup_broadcasts() -> None:
    out = speedup(np.array([2.0, 3.0]), 4, np.array([[0.0], [0.25]]))  # (2, 2)
    np.testing.assert_allclose(out, [[2.0, 3.0], [1.0, 1.5]])


# --------------------------------------------------------------------------- best k


def test_best_k_interior_for_middling_alpha() -> None:
    k, s = best_k(0.7, 0.1)
    assert 2 <= k <= 8
    brute = [walltime_speedup(0.7, kk, 0.1) for kk in range(1, K_MAX + 1)]
    assert s == pytest.approx(max(brute))
    assert k == int(np.argmax(brute)) + 1
    assert s > walltime_speedup(0.7, k - 1, 0.1)
    assert s > walltime_speedup(0.7, k + 1, 0.1)


@settings(deadline=None, max_examples=50)  # no deadline: the machine may be loaded
@given(alphas, costs)
def test_best_k_is_one_when_alpha_le_c(alpha: float, c: float) -> None:
    if alpha <= c:
        k, s = best_k(alpha, c)
        assert k == 1
        assert s <= 1.0 + 1e-12


def test_best_k_ties_go_to_smallest_k() -> None:
    assert best_k(0.0, 0.0) == (1, 1.0)  # speedup 1 for every k
    assert best_k(1.0, 1.0) == (1, 1.0)  # (k + 1) / (k + 1) = 1 for every k
    assert best_k(1.0, 0.0) == (K_MAX, K_MAX + 1.0)
    assert best_k(1.0, 0.0, k_max=8) == (8, 9.0)


@settings(deadline=None, max_examples=50)  # no deadline: the machine may be loaded
@given(alphas, costs)
def test_cor_3_9(alpha: float, c: float) -> None:
    # k = 1 gives exactly (1 + alpha)/(1 + c), so the best k gives at least that.
    k1 = (1.0 + alpha) / (1.0 + c)
    assert walltime_speedup(alpha, 1, c) == pytest.approx(k1, rel=1e-12)
    _, s = best_k(alpha, c)
    assert s >= k1 - 1e-12
    # alpha > c if and only if some k gains (away from rounding at alpha == c)
    if abs(alpha - c) > 1e-9:
        assert (alpha > c) == (s > 1.0)


# --------------------------------------------------------------------------- acceptance metrics


def test_per_position_acceptance() -> None:
    np.testing.assert_allclose(per_position_acceptance(0.5, 3), [0.5, 0.25, 0.125])
    assert per_position_acceptance(np.array([0.2, 0.9]), 5).shape == (2, 5)


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(alphas, ks)
def test_histogram_sums_to_one_and_mean_matches(alpha: float, k: int) -> None:
    h = acceptance_histogram(alpha, k)
    assert h.shape == (k + 1,)
    assert (h >= 0).all()
    assert h.sum() == pytest.approx(1.0, abs=1e-12)
    mean_accepted = float((np.arange(k + 1) * h).sum())
    assert mean_accepted == pytest.approx(expected_tokens(alpha, k) - 1, abs=1e-12)
    # P(position i accepted) = P(accepted >= i)
    tail = h[::-1].cumsum()[::-1][1:]  # P(accepted >= i), i = 1..k
    np.testing.assert_allclose(tail, per_position_acceptance(alpha, k), atol=1e-12)


def test_histogram_matches_simulation() -> None:
    rng = np.random.default_rng(0)
    alpha, k, n = 0.7, 4, 200_000
    u = rng.random((n, k))  # (rounds, k)
    accepted = np.cumprod(u < alpha, axis=1).sum(axis=1)  # (rounds,) first rejection stops
    counts = np.bincount(accepted, minlength=k + 1)
    h = acceptance_histogram(alpha, k)
    se = np.sqrt(h * (1 - h) / n)
    assert (np.abs(counts / n - h) < 5 * se).all()


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(alphas, ks)
def test_draft_acceptance_rate_is_brute_force_expectation(alpha: float, k: int) -> None:
    h = acceptance_histogram(alpha, k)
    brute = float(sum(h[j] * j / k for j in range(k + 1)))
    assert draft_acceptance_rate(alpha, k) == pytest.approx(brute, abs=1e-12)
    if alpha < 0.999:
        closed = alpha * (1 - alpha**k) / (k * (1 - alpha))
        assert draft_acceptance_rate(alpha, k) == pytest.approx(closed, rel=1e-9, abs=1e-15)


def test_draft_acceptance_rate_is_not_alpha() -> None:
    assert draft_acceptance_rate(1.0, 4) == 1.0
    assert draft_acceptance_rate(0.6, 1) == pytest.approx(0.6)
    assert draft_acceptance_rate(0.6, 4) == pytest.approx(0.3264)


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(alphas, ks)
def test_alpha_from_rate_round_trip(alpha: float, k: int) -> None:
    rate = draft_acceptance_rate(alpha, k)
    back = alpha_from_draft_acceptance_rate(rate, k)
    assert draft_acceptance_rate(back, k) == pytest.approx(rate, abs=1e-12)
    if alpha > 1e-3 or k == 1:
        assert back == pytest.approx(alpha, abs=1e-7)


def test_alpha_from_rate_broadcasts() -> None:
    alpha = np.array([0.1, 0.5, 0.95])
    rate = draft_acceptance_rate(alpha, 4)
    np.testing.assert_allclose(alpha_from_draft_acceptance_rate(rate, 4), alpha, atol=1e-12)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: expected_tokens(1.3, 4), r"alpha must be in \[0, 1\]; got 1.3"),
        (lambda: expected_tokens(-0.1, 4), r"alpha must be in \[0, 1\]; got -0.1"),
        (lambda: expected_tokens(float("nan"), 4), r"alpha must be in \[0, 1\]; got nan"),
        (lambda: expected_tokens(np.array([0.5, 2.0]), 4), r"got 2"),
        (lambda: expected_tokens(0.5, 0), r"k must be an integer in \[1, 64\]"),
        (lambda: expected_tokens(0.5, 65), r"got 65"),
        (lambda: expected_tokens(0.5, 2.5), r"got 2.5"),
        (lambda: walltime_speedup(0.5, 4, -0.1), r"c must be a finite number >= 0"),
        (lambda: walltime_speedup(0.5, 4, float("nan")), r"c must be"),
        (lambda: walltime_speedup(0.5, 4, float("inf")), r"c must be"),
        (lambda: speedup(6.0, 4, 0.1), r"tokens_per_call must be in \[1, k \+ 1\]"),
        (lambda: speedup(0.5, 4, 0.1), r"tokens_per_call"),
        (lambda: break_even_cost(3.0, 0), r"k must be"),
        (lambda: best_k(0.5, -1.0), r"c must be"),
        (lambda: best_k(0.5, 0.1, k_max=100), r"k must be"),
        (lambda: walltime_speedup(1.5, 1, 0.1), r"alpha must be"),
        (lambda: acceptance_histogram(0.5, 0), r"k must be"),
        (lambda: per_position_acceptance(1.01, 3), r"alpha must be"),
        (lambda: alpha_from_draft_acceptance_rate(1.2, 4), r"rate must be in \[0, 1\]"),
    ],
)
def test_bad_inputs_raise(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_k_max_constant() -> None:
    assert theory.K_MAX == 64
