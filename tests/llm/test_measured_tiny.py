"""Greedy with and without speculation, stopping, and the length asked for, on the tiny
Gemma 3 of test_llm_tiny (no real model needed: fast)."""

from __future__ import annotations

import numpy as np
import pytest
from test_llm_tiny import write_tiny

from specviz.core import interrupt
from specviz.llm import store
from specviz.llm.decode import NEW_MAX, check_new, plain, speculate
from specviz.llm.drafts import parse_draft
from specviz.llm.forward import KVCache, forward
from specviz.llm.lossless import GreedyPair, compare, greedy_plain, rows_along
from specviz.llm.runner import CONTEXT_MAX, KEPT_LOGITS, Runner


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return store.read_model(write_tiny(tmp_path_factory.mktemp("tiny") / "t.gguf"))


def test_speculative_greedy_is_plain_greedy_on_the_tiny_model(tiny):
    ids = tiny.tokenizer.encode("ab a")
    seen = {}
    alone = greedy_plain(Runner(tiny.weights), ids, max_new=12, seen=seen)
    # oracle: argmax of an uncached forward pass over the whole sequence at each position
    seq = list(ids)
    for x in alone.tokens:
        z = forward(tiny.weights, seq, KVCache(tiny.weights, range(2)))[0]
        assert x == int(np.argmax(z))
        seq.append(x)
    spec = parse_draft("early-exit:1", cfg=tiny.cfg)
    pair = GreedyPair(tiny, spec)
    run = speculate(pair, ids, k=3, max_new=12)
    ag = compare(alone.tokens, run.tokens, rows_along(seen, ids, alone.tokens),
                 rows_along(pair.seen, ids, run.tokens))
    assert ag.spec == ag.plain or ag.one_pass.margin < 1e-4, ag
    widths = {t.positions for t in pair.seen.values()}
    assert max(widths) > 1  # the speculative rows came from block passes


@pytest.mark.parametrize("which", ["speculate", "plain", "greedy"])
def test_decoding_stops_when_the_session_goes(tiny, which):
    ids = tiny.tokenizer.encode("ab a")
    spec = parse_draft("early-exit:1", cfg=tiny.cfg)
    calls = {
        "speculate": lambda: speculate(GreedyPair(tiny, spec), ids, k=2, max_new=8),
        "plain": lambda: plain(Runner(tiny.weights), ids, T=1.0, max_new=8),
        "greedy": lambda: greedy_plain(Runner(tiny.weights), ids, max_new=8),
    }
    interrupt.install(lambda: True)
    try:
        with pytest.raises(interrupt.Interrupted):
            calls[which]()
    finally:
        interrupt.install(None)


def test_max_new_is_refused_outside_1_to_new_max_or_past_the_context(tiny):
    assert check_new(NEW_MAX, 1) == NEW_MAX
    for bad in (0, NEW_MAX + 1, True, 2.0, "8"):
        with pytest.raises(ValueError, match=f"max_new must be an integer 1..{NEW_MAX}; got"):
            check_new(bad, 1)
    with pytest.raises(ValueError, match="leave no room in the"):
        check_new(1, CONTEXT_MAX)
    with pytest.raises(ValueError, match="max_new must be an integer"):
        plain(Runner(tiny.weights), tiny.tokenizer.encode("ab"), T=1.0, max_new=0)


def test_logits_at_more_prefixes_than_a_runner_keeps(tiny):
    """A runner keeps the newest KEPT_LOGITS rows; asked for more in one call it returns
    every one asked for (it used to drop the oldest, then look them all up: KeyError), each
    the row of an uncached pass over the whole sequence, and still keeps at most that many."""
    n = KEPT_LOGITS + 20
    ids = [2] + [int(x) for x in np.random.default_rng(0).integers(4, tiny.cfg.V, n - 1)]
    runner = Runner(tiny.weights)
    rows = runner.logits(ids, range(1, n + 1))
    want = forward(tiny.weights, ids, KVCache(tiny.weights, range(2)), rows=list(range(n)))
    assert len(rows) == n
    assert max(float(np.abs(a - b).max()) for a, b in zip(rows, want, strict=True)) < 1e-5
    again = runner.logits(ids, [n])[0]  # the newest is kept: no new pass
    assert again is rows[-1] and len(runner.passes) == 1
