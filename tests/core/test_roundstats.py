"""Round statistics (specviz.core.roundstats): every metric against its definition, worked
by hand on a small histogram."""

import math

import numpy as np
import pytest

from specviz.core.roundstats import RoundStats

# k = 2: two rounds kept nothing, one kept draft 1 only, three kept both drafts.
H = np.array([2, 1, 3])
COUNTED = RoundStats(histogram=H, tokens=2 * 1 + 1 * 2 + 3 * 3, drafted=6 * 2)


def test_counted_totals():
    assert (COUNTED.k, COUNTED.rounds, COUNTED.accepted, COUNTED.drafted) == (2, 6, 7, 12)
    assert COUNTED.accepted_at.tolist() == [4, 3]  # rounds keeping draft 1, draft 2: counts


def test_counted_metrics_follow_their_definitions():
    assert COUNTED.tokens_per_call == pytest.approx(13 / 6)  # tokens / target calls
    assert COUNTED.mean_acceptance_length == pytest.approx(1 + 7 / 6)  # 1 + accepted / drafts
    assert COUNTED.draft_acceptance_rate == pytest.approx(7 / 12)  # accepted / drafted
    np.testing.assert_allclose(COUNTED.per_position, [4 / 6, 3 / 6])  # shares, not counts
    np.testing.assert_allclose(COUNTED.shares, [2 / 6, 1 / 6, 3 / 6])
    assert COUNTED.drafted_per_round == pytest.approx(2.0)


def test_draft_acceptance_rate_is_not_alpha():
    """alpha pools kept / tried per position (position i is tried only after i - 1 kept):
    7 / (6 + 4) here; the draft acceptance rate divides by every draft proposed."""
    alpha = 7 / (6 + 4)
    assert COUNTED.draft_acceptance_rate != pytest.approx(alpha)


def test_exact_law_of_one_round():
    law = RoundStats(histogram=np.array([0.5, 0.25, 0.25]), tokens=0.5 * 1 + 0.25 * 2 + 0.25 * 3,
                     drafted=2)
    assert law.rounds == pytest.approx(1.0)
    assert law.tokens_per_call == pytest.approx(1.75)
    assert law.mean_acceptance_length == pytest.approx(1.75)  # no 'continue': 1 + E[J]
    assert law.draft_acceptance_rate == pytest.approx(0.75 / 2)
    np.testing.assert_allclose(law.per_position, [0.5, 0.25])  # P(J >= i)


def test_batches_add_up_and_nothing_counted_is_nan():
    none = RoundStats(histogram=np.zeros(3, dtype=np.int64), tokens=0, drafted=0)
    assert math.isnan(none.tokens_per_call) and math.isnan(none.draft_acceptance_rate)
    both = none.tally(np.array([0, 2, 2]), np.array([1, 3, 3]))
    both = both.tally(np.array([0, 1, 2]), np.array([1, 2, 3]))
    assert both.histogram.tolist() == H.tolist() and both.tokens == 13 and both.drafted == 12
