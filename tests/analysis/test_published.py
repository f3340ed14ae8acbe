"""The planner against published speedups nobody here measured (tests/published.py: model
pair, hardware, k, acceptance, measured speedup, source), with its default fixed costs.

Tolerance: no closer than the papers' own theory. Leviathan et al.'s Theorem 3.8, fed their
own measured c and alpha (their Table 4), misses their own measured speedups (Table 2) by
0.774x (CNNDM, T5-small, T = 0: 2.4x for 3.1x) to 1.471x (EnDe, T5-large, T = 0: 2.5x for
1.7x); a prediction here may miss by as much, and no more. A case outside it is listed in
KNOWN_MISSES with the reason.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from published import CASES, KNOWN_MISSES, TOLERANCE, markdown

from specviz.analysis import overheads, planner
from specviz.analysis.accelerators import ACCELERATORS
from specviz.analysis.acceptance import analyse
from specviz.analysis.record import Averages

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_table_has_eight_or_more_cases_from_several_sources():
    assert len(CASES) >= 8 and len({c.source for c in CASES}) >= 3
    assert TOLERANCE == pytest.approx((2.4 / 3.1, 2.5 / 1.7))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_prediction_within_the_papers_own_miss(case):
    ratio = case.predicted() / case.measured
    lo, hi = TOLERANCE
    if case.name in KNOWN_MISSES:
        assert not lo <= ratio <= hi, f"{case.name} is within {TOLERANCE}: drop it there"
        assert KNOWN_MISSES[case.name].startswith("over" if ratio > hi else "under")
    else:
        assert lo <= ratio <= hi, (case.name, ratio)


def test_the_priced_c_of_leviathans_drafts_is_near_their_measured_c():
    """Table 4's c (T5-small 0.02, base 0.04, large 0.11, one or two digits) against the c the
    planner prices for the same pair on a TPU v4 with its default costs: within 25%."""
    want = {"T5-small": 0.02, "T5-base": 0.04, "T5-large": 0.11}
    rep = analyse(Averages("test", 1.5, 1))
    for case in CASES[:3]:
        s = planner.Setup(case.target, case.draft, ACCELERATORS["TPU v4"], 256,
                          costs=overheads.overheads("graphs"))
        c = planner.plan(s, rep, k_max=1).cost[0]
        assert c == pytest.approx(want[case.draft.name], rel=0.25), case.name


def test_controls_the_fixed_costs_and_the_mode_matter():
    """Without fixed costs T5-large's rows over-predict past the band (the costs bring them
    in); priced as eager PyTorch instead of compiled, T5-XXL on a TPU falls far below it."""
    large = next(c for c in CASES if c.name == "T5-XXL / T5-large, EnDe T=0")
    assert replace(large, mode="none").predicted() / large.measured > TOLERANCE[1]
    small = CASES[0]
    assert replace(small, mode="eager").predicted() / small.measured < TOLERANCE[0]


def test_the_tp8_miss_is_the_round_not_the_step():
    """The 70B EAGLE-3 case's stated reason, checked: SGLang's round took 5.88 / 234.54 s,
    2.2 of its plain 1 / 88.61 s steps; the planner's round (8 draft steps, 64 tokens
    verified) is under 1.5 of its own step, so its miss is in the round, not the step."""
    case = next(c for c in CASES if c.name == "Llama-3.3-70B / EAGLE-3, TP 8")
    assert (5.88 / 234.54) / (1 / 88.61) == pytest.approx(2.22, abs=0.01)
    s = planner.Setup(case.target, case.draft, ACCELERATORS[case.hardware], case.context,
                      case.dtype, case.dtype, case.dtype, tp=case.tp, devices=case.tp,
                      costs=overheads.overheads(case.mode))
    t1, _, drafts, tk = planner.round_times(s, np.array([case.k]), np.array([1]))
    assert 1.0 < float((drafts + tk)[0, 0] / t1[0]) < 1.5


def test_the_readme_gives_the_same_table():
    assert markdown() in README.read_text()
