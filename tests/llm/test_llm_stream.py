"""/llm's stream of rounds on the real model (views.llmstream, views.llmpage): played a
round at a time, it makes the draws and the tokens of play_rounds from the seed in one
call; the export's small vocabulary keeps each row's mass; the prompt checks."""

from __future__ import annotations

import pytest

from specviz.core.round import play_rounds
from specviz.core.scenario import Scenario
from specviz.core.warp import Warp
from specviz.figures import export
from specviz.llm.pair import LLMPair
from specviz.views import llmpage, llmstream

PROMPT = "The capital of France is Paris. The capital of Italy is"


@pytest.fixture(scope="module")
def ids(model) -> list[int]:
    return llmpage.encode_prompt(model, PROMPT, max_chars=1000, max_tokens=256)


def _stream(model, ids, seed: int) -> llmstream.Stream:
    spec = llmpage.parse(model, "early-exit", "6")
    return llmpage.stream(model, spec, ids, k=2, T=1.0, seed=seed, rule="correct",
                          warp=Warp())


def test_a_stream_played_in_pieces_is_play_rounds_from_the_seed(model, ids):
    s = _stream(model, ids, seed=3)
    last = llmstream.KEPT_TRACES  # one round more than the stream keeps frames of
    assert s.extend(0) == 0 and s.extend(last) == last  # two requests: 1 round, then more
    pair = LLMPair(model, llmpage.parse(model, "early-exit", "6"), T=1.0)
    whole = play_rounds(Scenario.on(pair, ids, k=2, seed=3),
                        n_rounds=last + 1)  # one call, from the seed
    assert [r.tokens for r in s.rounds] == [r.tokens for r in whole]
    assert [r.accepted for r in s.rounds] == [r.accepted for r in whole]
    tr = s.transcript(last)
    assert tr.context == tuple(ids) + sum((r.tokens for r in whole[:-1]), ())
    assert s.kept(last) and s.kept(last - 1) and not s.kept(1)  # round 0 let its rows go
    with pytest.raises(ValueError, match="not kept"):
        s.transcript(0)
    other = _stream(model, ids, seed=4)  # the control: another seed draws otherwise
    other.extend(last)
    assert [r.tokens for r in other.rounds] != [r.tokens for r in s.rounds]


def test_the_export_vocabulary_keeps_each_rows_mass(model, ids):
    s = _stream(model, ids, seed=3)
    s.extend(0)
    tr = s.rounds[0]
    small = llmpage.export_trace(tr, llmpage.TOP_BARS)
    assert len(small.vocab) < 200 and small.vocab[-1].startswith("the other 262,")
    for big, lit in zip(tr.positions, small.positions, strict=True):
        assert small.vocab[lit.token] == tr.vocab[big.token]
        for a, b in ((big.p_row, lit.p_row), (big.q_row, lit.q_row)):
            assert b.sum() == pytest.approx(a.sum(), abs=1e-9)
            assert b[lit.token] == a[big.token]
    assert [small.vocab[e.token] for e in small.emitted] == [tr.vocab[e.token]
                                                            for e in tr.emitted]
    html = export.round_html(small, 0)
    assert len(html) < 8_000_000 and "the other 262," in html


@pytest.mark.parametrize("text, said", [
    ("", "empty"), ("   \n", "empty"), ("a\x1bb", "control character (U+001B)"),
    ("a\ud800b", "unpaired surrogate"), ("x" * 1001, "1,001 characters"),
    ("😀" * 300, "the cap is 256"),
])
def test_a_prompt_the_page_does_not_run(model, text, said):
    with pytest.raises(llmpage.PromptError) as err:
        llmpage.encode_prompt(model, text, max_chars=1000, max_tokens=256)
    assert said in str(err.value)


def test_the_rounds_note():
    assert llmstream.rounds_note(3, 3) is None
    assert "held at round 40" in llmstream.rounds_note(999, 40)
    assert "not reached in the time" in llmstream.rounds_note(12, 7)
