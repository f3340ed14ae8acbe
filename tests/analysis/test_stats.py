from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.analysis.stats import (
    chi2_sf,
    empirical,
    gof_pvalue,
    sampling_floor,
    tv,
    tv_threshold,
)

LAW6 = np.array([0.0943, 0.3100, 0.0908, 0.0015, 0.3821, 0.1213])  # SPEC's p(.|a)
LAW6 = LAW6 / LAW6.sum()


def laws(size: int) -> st.SearchStrategy[np.ndarray]:
    weights = st.lists(st.floats(0.0, 10.0, allow_nan=False), min_size=size, max_size=size)
    return weights.filter(lambda w: sum(w) > 1e-3).map(lambda w: np.array(w) / np.sum(w))


# --------------------------------------------------------------------------- tv


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(laws(6), laws(6))
def test_tv_symmetric_and_bounded(a: np.ndarray, b: np.ndarray) -> None:
    d = tv(a, b)
    assert d == pytest.approx(tv(b, a), abs=1e-15)
    assert 0.0 <= d <= 1.0 + 1e-12


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(laws(6), laws(6))
def test_tv_zero_iff_equal(a: np.ndarray, b: np.ndarray) -> None:
    assert tv(a, a) == 0.0
    assert (tv(a, b) == 0.0) == bool(np.array_equal(a, b))


def test_tv_known_values() -> None:
    assert tv([1.0, 0.0], [0.0, 1.0]) == 1.0
    assert tv([0.5, 0.5], [0.25, 0.75]) == pytest.approx(0.25)
    assert tv(np.eye(2) / 2, np.full((2, 2), 0.25)) == pytest.approx(0.5)


def test_empirical() -> None:
    np.testing.assert_allclose(empirical([1, 3, 0]), [0.25, 0.75, 0.0])
    assert empirical(np.ones((2, 3))).shape == (2, 3)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: tv([0.5, 0.5], [1.0, 0.0, 0.0]), "same shape"),
        (lambda: tv([0.5, float("nan")], [0.5, 0.5]), "NaN"),
        (lambda: tv([1.5, -0.5], [0.5, 0.5]), "non-negative"),
        (lambda: tv([3, 1], [0.5, 0.5]), "sum to 1"),
        (lambda: empirical([0, 0]), "at least one observation"),
        (lambda: empirical([-1, 2]), "non-negative"),
        (lambda: sampling_floor(LAW6, 0), "n"),
        (lambda: sampling_floor([0.5, 0.6], 10), "sum to 1"),
        (lambda: tv_threshold(LAW6, 10, delta=0.0), "delta"),
        (lambda: gof_pvalue([1, 2], [0.2, 0.3, 0.5]), "same shape"),
        (lambda: gof_pvalue([0, 0, 0], [0.2, 0.3, 0.5]), "at least one observation"),
        (lambda: chi2_sf(1.0, 0), "df"),
        (lambda: chi2_sf(float("nan"), 1), "NaN"),
    ],
)
def test_bad_inputs_raise(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------- sampling floor


def brute_floor(law: np.ndarray, n: int) -> float:
    """0.5 * sum_x E|X_x - n p_x| / n by summing over the Binomial(n, p_x) pmf."""
    total = 0.0
    for p in law.ravel():
        total += math.fsum(
            math.comb(n, j) * p**j * (1 - p) ** (n - j) * abs(j - n * p) for j in range(n + 1)
        )
    return 0.5 * total / n


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 17, 40])
def test_sampling_floor_matches_brute_force(n: int) -> None:
    assert sampling_floor(LAW6, n) == pytest.approx(brute_floor(LAW6, n), rel=1e-10)


@settings(max_examples=30, deadline=None)
@given(laws(4), st.integers(1, 25))
def test_sampling_floor_brute_force_random_laws(law: np.ndarray, n: int) -> None:
    assert sampling_floor(law, n) == pytest.approx(brute_floor(law, n), rel=1e-9, abs=1e-12)


def test_sampling_floor_degenerate_cells() -> None:
    assert sampling_floor([1.0, 0.0, 0.0], 100) == 0.0
    assert sampling_floor(np.array([[0.5, 0.0], [0.0, 0.5]]), 1) == pytest.approx(0.5)


def test_sampling_floor_matches_monte_carlo() -> None:
    rng = np.random.default_rng(20221130)
    law = np.outer(LAW6, LAW6[::-1])  # (6, 6) a two-token joint
    n, repeats = 500, 2000
    counts = rng.multinomial(n, law.ravel(), size=repeats)  # (repeats, 36)
    tvs = 0.5 * np.abs(counts / n - law.ravel()).sum(axis=1)  # (repeats,)
    se = tvs.std(ddof=1) / math.sqrt(repeats)
    assert abs(tvs.mean() - sampling_floor(law, n)) < 5 * se


def test_sampling_floor_shrinks_like_one_over_root_n() -> None:
    f1, f4 = sampling_floor(LAW6, 10_000), sampling_floor(LAW6, 40_000)
    assert f4 == pytest.approx(f1 / 2, rel=0.02)


def test_tv_threshold() -> None:
    n = 60_000
    floor = sampling_floor(LAW6, n)
    t = tv_threshold(LAW6, n, delta=1e-6)
    assert t == pytest.approx(floor + math.sqrt(math.log(1e6) / (2 * n)))
    # an exact sampler stays under it
    rng = np.random.default_rng(1)
    counts = rng.multinomial(n, LAW6, size=200)
    assert all(tv(empirical(c), LAW6) < t for c in counts)


# --------------------------------------------------------------------------- chi-square


@pytest.mark.parametrize(
    "x, df, p",
    [
        (3.841458820694124, 1, 0.05),
        (6.634896601021214, 1, 0.01),
        (18.307038053275146, 10, 0.05),
        (124.34211340400407, 100, 0.05),
        (0.10258658877510107, 2, 0.95),
        (1.0, 3, 0.8012519569012008),
        (20.0, 3, 1.6974243555282643e-04),
    ],
)
def test_chi2_sf_known_values(x: float, df: float, p: float) -> None:
    assert chi2_sf(x, df) == pytest.approx(p, rel=1e-9)


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(st.floats(0.0, 60.0, allow_nan=False))
def test_chi2_sf_df3_closed_form(x: float) -> None:
    # Q(3/2, x/2) = erfc(sqrt(x/2)) + sqrt(2 x / pi) exp(-x/2)
    closed = math.erfc(math.sqrt(x / 2)) + math.sqrt(2 * x / math.pi) * math.exp(-x / 2)
    assert chi2_sf(x, 3) == pytest.approx(closed, rel=1e-9, abs=1e-300)


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(st.floats(0.0, 200.0, allow_nan=False))
def test_chi2_sf_df2_is_exponential(x: float) -> None:
    assert chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-9, abs=1e-300)


@settings(deadline=None)  # no deadline: the machine may be loaded
@given(st.floats(1e-6, 100.0, allow_nan=False))
def test_chi2_sf_df1_is_erfc(x: float) -> None:
    assert chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-9, abs=1e-300)


def test_chi2_sf_edges() -> None:
    assert chi2_sf(0.0, 5) == 1.0
    assert chi2_sf(float("inf"), 5) == 0.0
    xs = np.linspace(0.1, 60, 200)
    ps = [chi2_sf(x, 7) for x in xs]
    assert all(a > b for a, b in zip(ps, ps[1:], strict=False))


# --------------------------------------------------------------------------- goodness of fit


def test_gof_pvalue_right_and_wrong_law() -> None:
    rng = np.random.default_rng(7)
    law = np.outer(LAW6, LAW6)  # (6, 6)
    counts = rng.multinomial(20_000, law.ravel()).reshape(law.shape)
    assert gof_pvalue(counts, law) > 1e-3
    wrong = 0.9 * law + 0.1 / law.size
    assert gof_pvalue(counts, wrong) < 1e-6


def test_gof_pvalue_is_calibrated() -> None:
    rng = np.random.default_rng(11)
    ps = [gof_pvalue(rng.multinomial(2_000, LAW6), LAW6) for _ in range(400)]
    frac = np.mean(np.array(ps) < 0.05)
    assert 0.02 <= frac <= 0.09  # 5 % nominal, binomial SE about 1.1 %


def test_gof_pvalue_impossible_cell_is_zero() -> None:
    assert gof_pvalue([10, 10, 1], [0.5, 0.5, 0.0]) == 0.0


def test_gof_pvalue_pools_small_cells() -> None:
    law = np.array([0.495, 0.495, 0.005, 0.005])
    # n = 100: the two small cells (E = 0.5 each) pool into one with E = 1 < 5,
    # which merges into the first smallest big cell: 2 cells, df = 1
    counts = np.array([50, 48, 1, 1])
    o = np.array([52.0, 48.0])
    e = np.array([50.5, 49.5])
    stat = float(((o - e) ** 2 / e).sum())
    assert gof_pvalue(counts, law) == pytest.approx(chi2_sf(stat, 1))
    # a single cell after pooling: nothing to test
    assert gof_pvalue([3, 1], [0.5, 0.5]) == 1.0
