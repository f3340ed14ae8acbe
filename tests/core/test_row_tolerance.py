"""Rows accepted within the tolerance behave as distributions everywhere downstream: the
validator renormalises them (and says which), and refuses rows just past the tolerance."""

from __future__ import annotations

import numpy as np
import pytest
from scenarios import sc

from specviz import RULES, default_tables, exact_joint, target_joint
from specviz.analysis.audit import BIAS_MIN
from specviz.analysis.stats import tv
from specviz.core.rules import target_of
from specviz.core.tables import (
    ROW_SUM_ATOL,
    renormalisation_note,
    renormalised_rows,
    validate_pair,
    validate_table,
)
from specviz.views import demos, gallery

D = default_tables()
LOSSLESS = [r for r in RULES if RULES[r].lossless]
INSIDE = (1 + 0.9 * ROW_SUM_ATOL, 1 - 0.9 * ROW_SUM_ATOL, 1 + 3e-7, 1 + 5e-7)
OUTSIDE = (1 + 1.1 * ROW_SUM_ATOL, 1 - 1.1 * ROW_SUM_ATOL)


def scaled(M: np.ndarray, factor: float) -> np.ndarray:
    """Every row of M multiplied by factor: each sums to factor."""
    return M * factor


def sixths() -> np.ndarray:
    """The issue's rows: five entries 0.1666665 and one 0.1666668 (sum 0.9999993)."""
    M = np.full((6, 6), 0.1666665)
    M[:, 5] = 0.1666668
    return M


@pytest.mark.parametrize("factor", INSIDE)
def test_rows_inside_the_tolerance_are_accepted_and_renormalised(factor):
    M = scaled(D.Q, factor)
    out = validate_table(M, "Q")
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(out, D.Q, rtol=1e-15, atol=0)
    assert renormalised_rows(M) == list(range(6))
    np.testing.assert_array_equal(M, scaled(D.Q, factor))  # the input is left alone


@pytest.mark.parametrize("factor", OUTSIDE)
def test_rows_just_outside_the_tolerance_are_refused(factor):
    with pytest.raises(ValueError, match=r"row 'a' of Q sums to .*tolerance"):
        validate_table(scaled(D.Q, factor), "Q", D.vocab)


def test_float_rounding_is_left_as_it_is():
    """The default rows sum to 1 up to an ulp: validation returns them unchanged, so the app
    never mistakes the defaults for edited tables."""
    for M in (D.P, D.Q):
        np.testing.assert_array_equal(validate_table(M), M)
        assert renormalised_rows(M) == []
    assert renormalisation_note({"P": D.P, "Q": D.Q}, D.vocab) is None


def test_renormalising_twice_changes_nothing():
    once = validate_table(sixths())
    np.testing.assert_array_equal(validate_table(once), once)


def test_the_note_names_each_renormalised_row():
    P = D.P.copy()
    P[2] *= 1 + 3e-7
    note = renormalisation_note({"P": P, "Q": D.Q}, D.vocab)
    assert "P row 'c' (sum 1.0000003)" in note and "Q" not in note.split(":", 1)[1]


@pytest.mark.parametrize("factor", INSIDE)
def test_lossless_rules_stay_exact_and_tv_works(factor):
    P, Q = validate_pair(scaled(D.P, factor), scaled(D.Q, 2 - factor))
    for rule in LOSSLESS:  # each against the law it must follow (warp(P) for a warped one)
        target = target_joint(target_of(rule, P, Q), 0, n_tokens=2)
        assert tv(exact_joint(sc(P, Q, 0, 4, rule=rule), n_tokens=2), target) <= BIAS_MIN


@pytest.mark.parametrize("factor", [1 + 3e-7, 1 + 5e-7])
def test_the_gallery_reads_lossless_rules_as_exact(factor):
    g = gallery.gallery(sc(scaled(D.P, factor), scaled(D.Q, factor), 0, 4, seed=0),
                        n=20_000, names=LOSSLESS)
    for r in g.results:
        assert not r.biased, (r.rule.name, r.exact_tv)


def test_the_issues_sixths_run_through_exactness_and_the_gallery():
    Q = sixths()
    ex = demos.exactness(sc(D.P, Q, 0, 4, seed=0), n=2_000)
    assert {a.rule for a in ex.audits} == {"correct", "greedy", "no_resample", "continue"}
    g = gallery.gallery(sc(D.P, Q, 0, 4, seed=0), n=20_000, names=LOSSLESS)
    assert all(not r.biased for r in g.results)
