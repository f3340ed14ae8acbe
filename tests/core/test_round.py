"""The traced round: a frozen record the animation steps through."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from support import narrated_round

from specviz import RULES, RoundTrace, default_tables, play_rounds
from specviz.core.pair import TablePair
from specviz.core.scenario import Scenario

T = default_tables()


def _round(seed, rule="correct", k=4, ctx=0):
    return narrated_round(TablePair(T.P, T.Q), ctx, k, rng=np.random.default_rng(seed),
                          rule=rule)


SINGLE = [r for r in RULES if RULES[r].kind == "chain"]


def test_multi_draft_trace():
    for seed in range(60):
        tr = _round(seed, "multi_draft")
        assert 1 <= len(tr.positions) <= 4
        for pos in tr.positions:
            assert 1 <= len(pos.tries) <= 3
            assert all(not t.accepted for t in pos.tries[:-1])
            assert pos.accepted == pos.tries[-1].accepted
            assert all(t.accepted == (t.u < t.threshold) for t in pos.tries)
        if tr.rejected_at is None:
            assert len(tr.positions) == 4 and tr.emitted[-1].origin == "bonus"
        else:
            assert tr.rejected_at == len(tr.positions) and tr.emitted[-1].origin == "resampled"
        assert [s.kind for s in tr.steps][-1] == "done"


@pytest.mark.parametrize("rule", SINGLE)
def test_trace_is_consistent(rule):
    for seed in range(60):
        tr = _round(seed, rule)
        verified = [p for p in tr.positions if p.verified]
        assert len(tr.positions) == 4
        assert all(p.accepted for p in verified[:-1])  # verification stops at the first miss
        if tr.rejected_at is None:
            assert tr.accepted == 4 and tr.emitted[-1].origin == "bonus"
            assert len(tr.emitted) == 5 and tr.bonus_row is not None
        else:
            assert verified[-1].i == tr.rejected_at and not verified[-1].accepted
            assert tr.emitted[tr.rejected_at - 1].origin == "resampled"
            assert tr.rejection_row is not None
            later = tuple(range(tr.rejected_at + 1, 5))
            if RULES[rule].keep_unverified:
                assert tr.flushed == () and len(tr.emitted) == 4
                tail = [e.origin for e in tr.emitted[tr.rejected_at:]]
                assert tail == ["unverified"] * len(later)
            else:
                assert tr.flushed == later and len(tr.emitted) == tr.rejected_at
        for p in verified:  # the coin and the threshold decide
            assert p.accepted == (p.u < p.threshold)
            assert p.p == tr.positions[p.i - 1].p_row[p.token]
        for p in tr.positions[1:]:  # each draft conditions on the one before
            assert p.context == tr.positions[p.i - 2].token


def test_steps_follow_the_round():
    for seed in range(40):
        tr = _round(seed)
        kinds = [s.kind for s in tr.steps]
        assert kinds[0] == "start" and kinds[-1] == "done"
        assert kinds.count("draft") == 4
        assert kinds.count("verify") == sum(p.verified for p in tr.positions)
        assert ("bonus" in kinds) == (tr.rejected_at is None)
        assert ("residual" in kinds) == (tr.rejected_at is not None)
        assert ("flush" in kinds) == bool(tr.flushed)


def test_same_seed_same_trace():
    a, b = _round(11), _round(11)
    assert a.tokens == b.tokens and [p.u for p in a.positions] == [p.u for p in b.positions]
    assert [s.caption for s in a.steps] == [s.caption for s in b.steps]
    assert any(_round(s).tokens != a.tokens for s in range(12, 20))


def test_trace_is_frozen():
    tr = _round(0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tr.k = 3
    with pytest.raises(ValueError):
        tr.positions[0].p_row[0] = 1.0


class _ReadOnlyRows(TablePair):
    """The tables' rows as a model pair caches them: read-only arrays that own their memory."""

    def _own(self, row):
        row = np.array(row, dtype=np.float64)
        row.setflags(write=False)
        return row

    def p(self, prefix):
        return self._own(self.P[prefix[-1]])

    def q(self, prefix):
        return self._own(self.Q[prefix[-1]])


def test_a_trace_copies_rows_that_could_change_and_shares_those_that_cannot():
    """A row some owner may still write (the table pair's rows are views of its writable
    tables, read-only views too) is copied: writing the table after the round leaves the
    trace as played. A read-only row that owns its memory is kept as it is, not copied."""
    P, Q = T.P.copy(), T.Q.copy()
    tr = narrated_round(TablePair(P, Q), 0, 4, rng=np.random.default_rng(0))
    first = tr.positions[0]
    want = first.p_row.copy()
    P[:], Q[:] = 0.0, 0.0
    np.testing.assert_array_equal(first.p_row, want)
    assert not first.p_row.flags.writeable and not np.shares_memory(first.p_row, P)
    P, Q = T.P.copy(), T.Q.copy()
    views = TablePair(P, Q)  # read-only views of tables their owner may still write
    views.p = lambda prefix: np.lib.stride_tricks.as_strided(P[prefix[-1]], writeable=False)
    first = narrated_round(views, 0, 4, rng=np.random.default_rng(0)).positions[0]
    want = first.p_row.copy()
    P[:] = 0.0
    np.testing.assert_array_equal(first.p_row, want)
    pair = _ReadOnlyRows(T.P, T.Q)
    rows = {}
    pair.p = lambda prefix, f=pair.p: rows.setdefault(("p", tuple(prefix)), f(prefix))
    tr = narrated_round(pair, 0, 4, rng=np.random.default_rng(0))
    assert any(tr.positions[0].p_row is row for row in rows.values())


def test_transcript_chains_contexts():
    trs = play_rounds(Scenario.on(TablePair(T.P, T.Q), 0, k=3, seed=2), n_rounds=10)
    assert trs[0].ctx == 0
    for a, b in zip(trs, trs[1:], strict=False):
        assert b.ctx == a.next_ctx
    assert play_rounds(Scenario.on(TablePair(T.P, T.Q), 0, k=3, seed=2),
                       n_rounds=10)[-1].tokens == trs[-1].tokens


def test_row_a_walkthrough_numbers_in_the_trace():
    """Find rounds whose first draft is 'e' and check the published 0.8532."""
    for seed in range(200):
        tr = _round(seed)
        first = tr.positions[0]
        if first.token == 4:
            assert first.threshold == pytest.approx(T.P[0, 4] / T.Q[0, 4])
            assert first.threshold == pytest.approx(0.8532, abs=5e-5)
            return
    pytest.fail("no round drafted 'e' first in 200 seeds")


@pytest.mark.parametrize("rule", ["correct", "continue", "multi_draft", "sampler_match"])
def test_digests_replay_the_same_draws(rule):
    full = play_rounds(Scenario.on(TablePair(T.P, T.Q), 0, k=4, rule=rule, seed=8), n_rounds=40)
    light = play_rounds(Scenario.on(TablePair(T.P, T.Q), 0, k=4, rule=rule, seed=8),
                        n_rounds=40, traced=3)
    assert [t.emitted for t in full] == [t.emitted for t in light]
    assert [t.accepted for t in full] == [t.accepted for t in light]
    assert all(isinstance(t, RoundTrace) for t in light[-3:])
    assert not any(isinstance(t, RoundTrace) for t in light[:-3])
