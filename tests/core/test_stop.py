"""Draft-side stops (core.stop, ModelPair.stop): a round drafts only while the draft is sure,
the trace says why it stopped, and the first tokens still follow the target's law; a stop
that looks at the draft it is about to draw (and at p there) is caught as biased."""

from __future__ import annotations

import numpy as np
import pytest

from specviz import default_tables, target_joint, tv, tv_threshold
from specviz.core.draws import StreamDraws
from specviz.core.pair import TablePair
from specviz.core.round import play
from specviz.core.rules import get_rule
from specviz.core.sampling import draw_row
from specviz.core.stop import Confident, unsure

T = default_tables()
K = 4
SURE = 0.3  # q's top probability is 0.448, 0.35, 0.3 at a, b, d and 0.25 at c, e, f


class QStop(TablePair):
    """Stops before any draft, the first too, where max q(.|newest token) < SURE: written
    from the rule's description (it reads q at the prefix the next draft comes from)."""

    def stop(self, prefix, drafts):
        top = self.Q[([*prefix, *drafts])[-1]].max()
        return f"max q {top:.2f}" if top < SURE else None


class Peeking(TablePair):
    """Negative control: draws the draft it is about to draw (the round's own uniform) and
    stops where the target would rate it below the draft, p(x) < q(x)."""

    draws: StreamDraws

    def stop(self, prefix, drafts):
        c = ([*prefix, *drafts])[-1]
        x = draw_row(self.Q[c], self.draws.draft(len(drafts)))
        return "peeked" if self.P[c, x] < self.Q[c, x] else None


def first_two(pair, rule: str, n: int, seed: int = 0) -> tuple[np.ndarray, int]:
    """Counts (V, V) of the first two tokens of n decodes from 'a', each round on fresh
    draws; and how many rounds drafted fewer than K."""
    rng, r, V = np.random.default_rng(seed), get_rule(rule), pair.V
    counts, short = np.zeros((V, V)), 0
    for _ in range(n):
        prefix, out = [0], []
        while len(out) < 2:
            pair.draws = StreamDraws(rng.random((K + 2, 3)))
            d = play(pair, prefix, K, r, pair.draws, light=True)
            short += d.k < K
            out += d.tokens
            prefix = prefix + list(d.tokens)
        counts[out[0], out[1]] += 1
    return counts / n, short


def test_a_round_stops_where_the_draft_is_unsure_and_says_why():
    Q = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.4, 0.3, 0.3]])
    tr = play(Confident(TablePair(Q, Q), 0.5), [0], 6, get_rule("correct"),
              StreamDraws(np.full((8, 3), 0.5)))
    assert [p.token for p in tr.positions] == [1, 2] and tr.k == 2
    assert tr.stopped == "max q 0.40 < 0.5" and tr.rejected_at is None
    assert [e.origin for e in tr.emitted] == ["accepted", "accepted", "bonus"]
    full = play(TablePair(Q, Q), [0], 6, get_rule("correct"), StreamDraws(np.full((8, 3), .5)))
    assert full.k == 6 and full.stopped == ""
    assert unsure(Q[2], 0.4) is None and unsure(Q[2], 0.41) == pytest.approx(0.4)


def test_a_stop_before_the_first_draft_is_one_target_step():
    pair = QStop(T.P, T.Q)
    tr = play(pair, [2], K, get_rule("correct"), StreamDraws(np.full((K + 2, 3), 0.3)))
    assert tr.k == 0 and tr.positions == () and tr.stopped == "max q 0.25"
    assert [e.origin for e in tr.emitted] == ["bonus"]
    np.testing.assert_array_equal(tr.bonus_row, T.P[2])


def test_bad_threshold():
    with pytest.raises(ValueError, match="threshold"):
        Confident(TablePair(T.P, T.Q), 1.5)


@pytest.mark.parametrize("rule", ["correct", "block"])
@pytest.mark.parametrize("make", [QStop, lambda P, Q: Confident(TablePair(P, Q), 0.4)],
                         ids=["q-stop", "confident"])
def test_a_draft_side_stop_keeps_the_targets_law(rule, make):
    n = 4_000
    law, short = first_two(make(T.P, T.Q), rule, n)
    assert short > n // 4  # it does stop short, often
    target = target_joint(T.P, 0, n_tokens=2)
    assert tv(law, target) <= tv_threshold(target, n)


def test_a_stop_that_looks_at_the_next_draft_is_caught():
    """Negative control: skipping the drafts the target would rate low replaces their
    residual draws by bonus tokens from p (exact TV 0.21 on the first token from 'a')."""
    n = 4_000
    law, short = first_two(Peeking(T.P, T.Q), "correct", n)
    assert short > 0
    target = target_joint(T.P, 0, n_tokens=2)
    assert tv(law, target) > tv_threshold(target, n)
