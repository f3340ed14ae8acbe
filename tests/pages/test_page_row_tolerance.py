"""Tables in the URL whose rows sum to 1 only within the tolerance: /exactness and /rules
run with them, say that the rows were renormalised, and keep the lossless rules exact;
rows just past the tolerance are refused with the reason and the defaults kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support import run_page

from specviz.core.rules import RULES
from specviz.core.tables import ROW_SUM_ATOL, default_tables
from specviz.web import rulesui, urlcodec
from specviz.web.show import fold_name

D = default_tables()
ROOT = Path(__file__).resolve().parents[2]
EXACTNESS = str(ROOT / "pages/2_exactness.py")
RULES_PAGE = str(ROOT / "pages/8_rules.py")
GALLERY_OPEN = fold_name(rulesui.GALLERY_TABLE)  # the link that opens /rules' gallery table
LOSSLESS = [n for n, r in RULES.items() if r.lossless]


def sixths() -> np.ndarray:
    """The issue's rows: five entries 0.1666665 and one 0.1666668 (sum 0.9999993)."""
    M = np.full((6, 6), 0.1666665)
    M[:, 5] = 0.1666668
    return M


INSIDE = {"sixths": (D.P, sixths()), "plus 3e-7": (D.P * (1 + 3e-7), D.Q),
          "plus 0.9 tol": (D.P, D.Q * (1 + 0.9 * ROW_SUM_ATOL)),
          "minus 0.9 tol": (D.P * (1 - 0.9 * ROW_SUM_ATOL), D.Q)}
OUTSIDE = {"plus 1.1 tol": (D.P, D.Q * (1 + 1.1 * ROW_SUM_ATOL)),
           "minus 1.1 tol": (D.P * (1 - 1.1 * ROW_SUM_ATOL), D.Q)}


def url(P: np.ndarray, Q: np.ndarray) -> dict[str, str]:
    return {"P": urlcodec.encode_table(P), "Q": urlcodec.encode_table(Q)}


def warnings(at) -> str:
    return " ".join(w.value for w in at.warning)


@pytest.mark.parametrize("case", list(INSIDE))
def test_exactness_runs_and_says_rows_were_renormalised(case):
    at = run_page(EXACTNESS, timeout=60, n="2000", **url(*INSIDE[case]))
    assert "divided by their sums" in warnings(at)
    t = at.dataframe[0].value.set_index("rule")
    assert t.loc["correct", "exact_tv"] < 1e-12
    assert "verdict" in t.columns


@pytest.mark.parametrize("case", ["sixths", "plus 3e-7"])
def test_rules_page_keeps_the_lossless_rules_exact(case):
    at = run_page(RULES_PAGE, timeout=90, rules_n="20000", open=GALLERY_OPEN,
                  **url(*INSIDE[case]))
    assert "divided by their sums" in warnings(at)
    t = at.dataframe[0].value.set_index("rule")
    assert t.loc[LOSSLESS, "exact_here"].all()
    assert not t.loc[LOSSLESS, "verdict"].str.contains("not resolvable").any()


@pytest.mark.parametrize("case", list(OUTSIDE))
@pytest.mark.parametrize("page", [EXACTNESS, RULES_PAGE])
def test_rows_just_past_the_tolerance_are_refused_with_the_reason(case, page):
    params = {"n": "2000"} if page == EXACTNESS else {"rules_n": "20000"}
    at = run_page(page, timeout=90, **params, **url(*OUTSIDE[case]))
    text = warnings(at)
    assert "were not used" in text and "tolerance" in text and "defaults kept" in text
    assert "divided by their sums" not in text


def test_the_default_tables_bring_no_note():
    at = run_page(EXACTNESS, timeout=60, n="2000")
    assert "divided by their sums" not in warnings(at)
