"""Production metrics against their closed forms on identical-row tables."""

from __future__ import annotations

import numpy as np
import pytest
from scenarios import sc

from specviz.analysis import theory
from specviz.analysis.metrics import convert, metrics_report
from specviz.core.rule import overlap

p = np.array([0.5, 0.2, 0.2, 0.1])
q = np.array([0.25, 0.25, 0.25, 0.25])
P, Q = np.tile(p, (4, 1)), np.tile(q, (4, 1))
ALPHA = float(overlap(p, q))  # 0.7


def test_identical_rows_match_theory_exactly_and_measured_within_error():
    rep = metrics_report(sc(P, Q, 0, 5, seed=1), n_rounds=100_000)
    assert rep.alpha == pytest.approx(ALPHA)
    for row in rep.rows:
        assert row["exact"] == pytest.approx(row["theory"], abs=1e-12)
    n = 100_000
    for i, (m, t) in enumerate(zip(rep.per_position["measured"], rep.per_position["theory"],
                                   strict=True)):
        assert abs(m - t) <= 5 * np.sqrt(t * (1 - t) / n), i  # a binomial share
    np.testing.assert_allclose(rep.histogram["exact"], theory.acceptance_histogram(ALPHA, 5))
    np.testing.assert_allclose(rep.per_position["theory"], ALPHA ** np.arange(1, 6))


def test_acceptance_rate_is_not_alpha():
    rep = metrics_report(sc(P, Q, 0, 4), n_rounds=20_000)
    rate = rep.rows[1]["exact"]
    assert rate < ALPHA
    assert rate == pytest.approx(ALPHA * (1 - ALPHA**4) / (4 * (1 - ALPHA)))


@pytest.mark.parametrize("k", [1, 3, 8])
def test_converter_round_trips(k):
    out = convert(0.6, k)
    assert convert(out["draft_acceptance_rate"], k, "rate")["alpha"] == pytest.approx(0.6)
    assert convert(out["mean_acceptance_length"], k, "length")["alpha"] == pytest.approx(0.6)
    if k == 1:
        assert out["draft_acceptance_rate"] == pytest.approx(0.6)  # equal only at k = 1


def test_converter_bad_input():
    with pytest.raises(ValueError, match="given"):
        convert(0.5, 4, "beta")
    with pytest.raises(ValueError, match="mean acceptance length"):
        convert(9.0, 4, "length")
