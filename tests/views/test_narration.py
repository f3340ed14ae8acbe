"""The round's frames and captions, composed above the core (views.narration): once per
played round, in the words of the pair it was played on (a warp changes rows, not words)."""

from __future__ import annotations

import numpy as np
from support import narrated_round

from specviz.core.pair import TablePair
from specviz.core.round import play_round
from specviz.core.rules import get_rule
from specviz.core.scenario import Scenario
from specviz.core.tables import default_tables
from specviz.core.warp import Warp, WarpedPair
from specviz.figures import animation
from specviz.text.ngram import train
from specviz.text.pair import TextDecoder
from specviz.views import narration, stepping, transcript

T = default_tables()
TEXT = "the cat sat on the mat. the dog sat on the log. the cat ran to the log.\n" * 3
WARP = Warp(0.5, 0, 0.9, 0.0)


def test_a_narrated_round_is_its_trace_with_frames():
    pair = TablePair(T.P, T.Q)
    tr = play_round(Scenario.on(pair, 0, k=4), rng=np.random.default_rng(2))
    told = narrated_round(pair, 0, 4, rng=np.random.default_rng(2))
    assert isinstance(told, narration.Narrated) and not hasattr(tr, "steps")
    assert told.tokens == tr.tokens and told.positions[2].u == tr.positions[2].u
    assert told.steps[0].caption == "Context 'a'. The draft will guess 4 tokens."
    drafted = [s for s in told.steps if s.kind == "draft"]
    assert [s.caption for s in drafted] == [
        f"Draft {p.i}: '{T.vocab[p.token]}' drawn from q(.|'{T.vocab[p.context]}'), "
        f"q = {T.Q[p.context, p.token]:.4f}." for p in tr.positions]


def test_each_pair_speaks_in_its_own_words_and_a_warp_keeps_them():
    table = TablePair(T.P, T.Q)
    assert type(narration.wording(table)) is narration.Wording
    assert type(narration.wording(WarpedPair(table, WARP))) is narration.Wording
    dec = TextDecoder(train(TEXT, "char", 4), 4, 2)
    prefix = dec.encode("the dog sat on the l")
    for drafter, proposed in (("ngram", False), ("lookup", True)):
        words = narration.wording(dec.pair(drafter))
        warped = narration.wording(WarpedPair(dec.pair(drafter), WARP))
        assert type(words) is type(warped) is narration.TextWording
        assert warped.start(prefix, 3, proposed) == words.start(prefix, 3, proposed)
        assert warped.draft(1, 5, 6, 0.5, proposed) == words.draft(1, 5, 6, 0.5, proposed)
    assert narration.wording(dec.pair("ngram")).start(prefix, 3, False) == (
        f"Context '{dec.tail(prefix)}'. The 2-gram draft will guess 3 tokens.")
    assert narration.wording(dec.pair("lookup")).start(prefix, 0, True) == (
        f"Context '{dec.tail(prefix)}'. Prompt lookup found no earlier match: nothing is "
        "drafted.")


def test_a_transcript_narrates_each_round_once_and_stepping_only_reads(monkeypatch):
    calls = []
    real = narration.narrate

    def counted(trace, **kw):
        calls.append(trace)
        return real(trace, **kw)

    monkeypatch.setattr(narration, "narrate", counted)
    pair = TablePair(T.P, T.Q)
    tr = transcript.round_transcript(Scenario.on(pair, 0, k=4, seed=1), rnd=6, shown=2)
    assert len(calls) == 3  # the rounds that keep their frames: the shown ones and this one
    assert isinstance(tr.current, narration.Narrated) and tr.current.steps
    for step in range(stepping.last_step(tr.current) + 1):
        stepping.view(tr.current, step)
        animation.step_html(tr.current, step, tr.rnd)
    assert len(calls) == 3


def test_a_lazily_drafted_tree_says_how_big_it_is_and_how_much_was_drawn():
    """Multi-draft (m i.i.d. candidates after every node, SpecInfer) draws only the nodes the
    coins reach: the caption names m and the depth, and counts the nodes drawn, not a tree
    of that many drafted tokens."""
    pair = TablePair(T.P, T.Q)
    for m, k, seed in ((8, 1, 0), (3, 4, 1), (2, 6, 5)):
        rule = get_rule("multi_draft").with_params(m=m)
        told = narrated_round(pair, 0, k, rng=np.random.default_rng(seed), rule=rule)
        drawn = len(dict(told.tree))
        assert 1 <= drawn <= m * k
        assert told.steps[0].caption == (
            f"Context 'a'. A tree of {m} candidates after every node, depth {k}: only the "
            f"nodes the coins reach can change the output, so only those are drawn ({drawn} "
            "this round), verified in one target pass.")
        assert not any("The -" in s.caption or "pruned" in s.caption for s in told.steps)


def test_a_probability_prints_so_that_p_over_q_can_be_read():
    """Four decimals from 0.01 up (the tutorial's 0.3100, 0.2638); under it three
    significant digits: a kept token at p = 8.5e-05, q = 0.000120 read as 'q=0.0000
    p=0.0000', whose ratio cannot be read; exactly 0 is 0."""
    assert [narration.prob(x) for x in (0.31, 0.2638, 1.0, 0.01)] == [
        "0.3100", "0.2638", "1.0000", "0.0100"]
    assert [narration.prob(x) for x in (0.0046, 0.004567, 1.234e-4, 8.5e-05, 0.0)] == [
        "0.0046", "0.00457", "0.000123", "8.5e-05", "0"]
    p, q = 8.5e-05, 1.2e-04  # the ratio from the printed numbers, to 3 digits
    assert float(narration.prob(p)) / float(narration.prob(q)) == np.float64(p / q)
    tr = _small_round()
    pos = next(p for p in tr.positions if p.verified)
    shown = " ".join(s.caption for s in tr.steps) + " ".join(
        line for c in stepping.chips(tr, stepping.last_step(tr)) for line in c.lines)
    assert "0.0000" not in shown and f"q={narration.prob(pos.q)}" in shown
    assert f"p = {narration.prob(pos.p)}, q = {narration.prob(pos.q)}" in shown


def _small_round() -> narration.Narrated:
    """A round whose first draft has p and q under 0.01 (a table with such a row)."""
    P = np.array([[8.5e-05, 1 - 8.5e-05], [0.5, 0.5]])
    Q = np.array([[0.009, 0.991], [0.5, 0.5]])
    pair = TablePair(P, Q)
    for seed in range(5000):
        tr = narrated_round(pair, 0, 1, rng=np.random.default_rng(seed))
        if tr.positions[0].token == 0:
            return tr
    raise AssertionError("no round drafted the rare token")


def test_a_round_that_drafted_nothing_is_plain_decoding_in_every_pairs_words():
    """Prompt lookup without a match drafts nothing: its one token is plain decoding, not
    'All 0 kept: bonus token' (the real model's words said so: they had no case for it)."""
    from types import SimpleNamespace

    table = narration.wording(TablePair(T.P, T.Q))
    llm = narration.LLMWording(SimpleNamespace(name=T.vocab.__getitem__,
                                               spec=SimpleNamespace(label="lookup")))
    dec = TextDecoder(train(TEXT, "char", 4), 4, 2)
    text = narration.wording(dec.pair("lookup"))
    for words in (table, llm, text):
        said = words.bonus(0, 1, 0)
        assert said.startswith("Nothing drafted, so this is plain decoding") and "bonus" not in said
        assert words.bonus(2, 1, 0).startswith("All 2 kept: bonus token")
