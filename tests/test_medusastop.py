"""Choosing Medusa's stop threshold (specviz.medusastop): the held-out rounds it scores,
hand-worked, and the threshold it picks."""

from __future__ import annotations

import numpy as np
import pytest

from specviz.medusastop import choose, stop_gain

# two heads at three positions: (top probability, right?) per head
SURE = np.array([[0.9, 0.2, 0.9], [0.8, 0.9, 0.1]])
HIT = np.array([[True, True, False], [True, True, True]])
RATIOS = [1.0, 1.0, 1.5]  # r(1), r(2), r(3): a pass over 3 positions costs 1.5 of one


def test_rounds_hand_worked():
    """s = 0.5: position 0 drafts both heads, both right (3 tokens, r(3) = 1.5); position 1
    stops at head 1 (0.2): one token for r(1); position 2 drafts head 1 (wrong) and stops at
    head 2 (0.1): one token for r(2)."""
    tokens, drafts, cost, speedup = stop_gain(SURE, HIT, RATIOS, 0.5, c=0.0)
    assert (tokens, drafts, cost) == pytest.approx((5 / 3, 1.0, 3.5 / 3))
    assert speedup == pytest.approx(5 / 3.5)
    # each head computed costs c: both at positions 0 and 2 (head 2 seen unsure), one at 1
    assert stop_gain(SURE, HIT, RATIOS, 0.5, c=0.1)[2] == pytest.approx((3.5 + 0.5) / 3)
    # s = 0: every head drafts everywhere (no stop): 2 + 2 + 0 kept, r(3) each round
    assert stop_gain(SURE, HIT, RATIOS, 0.0, c=0.0) == pytest.approx((7 / 3, 2, 1.5, 14 / 9))


def test_the_threshold_of_the_largest_speedup_the_smallest_of_equals():
    """s in (0.1, 0.2]: only position 2's unsure head 2 is cut: 7/3 tokens for 4/3 -> 1.75,
    above no stop (1.56) and s in (0.2, 0.8] (1.43)."""
    best, rows = choose(SURE, HIT, RATIOS, c=0.0)
    assert best == pytest.approx(0.11)
    assert max(r[4] for r in rows) == pytest.approx(1.75)
