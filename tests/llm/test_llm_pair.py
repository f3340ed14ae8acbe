"""The real pair through the one round engine: its rows, the engine's invariants on a real
round, one verification pass per round, and a Monte Carlo check on a real row that the
first emitted token follows p (with a broken rule as the negative control)."""

from __future__ import annotations

import numpy as np
import pytest

from specviz.analysis.stats import tv, tv_threshold
from specviz.core.draws import RngDraws
from specviz.core.pair import ModelPair
from specviz.core.round import play, play_round
from specviz.core.rules import get_rule
from specviz.core.sampling import block_cdf, draw_row
from specviz.core.scenario import Scenario
from specviz.llm.draftkind import DraftError
from specviz.llm.drafts import parse_draft
from specviz.llm.forward import KVCache, forward
from specviz.llm.pair import LLMPair, token_counts
from specviz.llm.pair import softmax as pair_softmax

PROMPT = "The capital of France is Paris. The capital of Italy is"


def spec(model, text):
    return parse_draft(text, cfg=model.cfg)


@pytest.fixture(scope="module")
def ids(model):
    return model.tokenizer.encode(PROMPT)


def softmax(z):
    e = np.exp(z.astype(np.float64) - z.max())
    return e / e.sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_pairs_softmax_is_exp_of_z_over_T_normalised_and_leaves_z_alone(dtype):
    """softmax(z, T) = e / sum(e), e = exp(z / T - max(z / T)), in float64, bit for bit as
    written out here; -inf gets 0; z itself is not written."""
    z = np.random.default_rng(1).standard_normal(262_144).astype(dtype) * 4
    z[[3, 77]] = -np.inf
    before = z.copy()
    for T in (0.25, 1.0, 3.0):
        x = z.astype(np.float64) / T
        e = np.exp(x - x.max())
        np.testing.assert_array_equal(pair_softmax(z, T), e / e.sum())
    assert pair_softmax(z, 1.0)[[3, 77]].tolist() == [0.0, 0.0]
    np.testing.assert_array_equal(z, before)


def test_parse_draft_names_each_draft_and_refuses_bad_ones(model):
    assert spec(model, "early-exit:6").layers == tuple(range(6))
    assert spec(model, "skip:3,7").layers == tuple(i for i in range(18) if i not in (3, 7))
    assert spec(model, "trimmed:4096:9") .head == 4096
    assert spec(model, "lookup").layers == ()
    for bad in ("early-exit:0", "early-exit:18", "early-exit:x", "skip:18",
                "skip:" + ",".join(map(str, range(18))), "trimmed:0", "medusa"):
        with pytest.raises(DraftError):
            spec(model, bad)


def test_p_and_q_are_the_softmax_of_the_passes(model, ids):
    w = model.weights
    pair = LLMPair(model, spec(model, "early-exit:4"), T=0.7)
    z_p = forward(w, ids, KVCache(w, range(18)))[0]
    z_q = forward(w, ids, KVCache(w, range(4)))[0]
    assert np.max(np.abs(pair.p(ids) - softmax(z_p / 0.7))) < 1e-6
    assert np.max(np.abs(pair.q(ids) - softmax(z_q / 0.7))) < 1e-6


def test_a_trimmed_head_puts_q_on_the_frequent_tokens_only(model, ids):
    counts = token_counts(model.tokenizer.encode(PROMPT * 3 + " Rome Milan Naples", bos=False),
                          V=model.cfg.V)
    pair = LLMPair(model, spec(model, "trimmed:64"), counts=counts)
    q = pair.q(ids)
    assert np.count_nonzero(q) == 64 and abs(q.sum() - 1) < 1e-12
    assert set(np.flatnonzero(counts)) <= set(np.flatnonzero(q))  # seen tokens rank first


@pytest.mark.parametrize("draft, rule", [("early-exit:3", "correct"), ("lookup", "correct"),
                                         ("skip:1,2", "block")])
def test_a_real_round_keeps_the_engines_invariants(model, ids, draft, rule):
    pair = LLMPair(model, spec(model, draft), T=1.0)
    k = 3
    for seed in range(2):
        before = len(pair.target.passes)
        tr = play_round(Scenario.on(pair, ids, k=k, rule=rule), rng=np.random.default_rng(seed))
        n = tr.k
        assert 1 <= len(tr.tokens) <= n + 1 <= k + 1
        kept = [e for e in tr.emitted if e.origin == "accepted"]
        assert [e.token for e in kept] == [p.token for p in tr.positions[:len(kept)]]
        assert tr.emitted[-1].origin in ("bonus", "resampled")
        assert (tr.emitted[-1].origin == "bonus") == (tr.rejected_at is None)
        if tr.rejected_at is not None:
            assert tr.rejection_row is not None and tr.rejection_row[tr.emitted[-1].token] > 0
        for p in tr.positions:
            assert abs(p.p_row.sum() - 1) < 1e-9 and abs(p.q_row.sum() - 1) < 1e-9
        # step 2 was one target pass over the new positions, scoring all n + 1 prefixes
        # (a later round from the same prefix finds some, or all, rows already made)
        assert len(pair.target.passes) - before <= 1
        if seed == 0:
            assert pair.target.passes[-1][1] == n + 1
        ids_next = ids + list(tr.tokens)
        assert all(0 <= t < model.cfg.V for t in ids_next)


class RealRow(ModelPair):
    """The real p and q at one context, as the rows at every prefix: a round then reads
    nothing but these two rows at its first position. Draws keep the rows' block sums."""

    def __init__(self, p, q):
        self.V, self.names = len(p), ()
        self._p, self._q = p, q
        self._blocks = {"p": block_cdf(p), "q": block_cdf(q)}

    def p(self, prefix):
        return self._p

    def q(self, prefix):
        return self._q

    def draw_p(self, prefix, u):
        return draw_row(self._p, u, self._blocks["p"])

    def draw_q(self, prefix, u):
        return draw_row(self._q, u, self._blocks["q"])

    def key(self, prefix):
        return ()


def first_tokens(pair, ids, rule, n, seed):
    draws, r = RngDraws(np.random.default_rng(seed)), get_rule(rule)
    return np.array([play(pair, ids, 1, r, draws, light=True).emitted[0].token
                     for _ in range(n)])


def test_the_first_emitted_token_follows_p_on_a_real_row(model):
    """n rounds (k = 1) on the real rows p, q of the story prompt (early exit at 12 of 18
    layers, T = 1; its beta = sum min(p, q) is about 0.75 there); the empirical law of the
    first token against p: within tv_threshold (the sampling floor plus McDiarmid's term,
    delta 1e-6) for the correct rule. The negative control, no_resample, has the law
    min(p, q) + (1 - beta) p (written here from the rule's description), whose TV to p
    exceeds the threshold by more than McDiarmid's term, so it fails but for odds of 1e-6.
    (Drafts with a small beta hide every broken rule at the first token: each moves the law
    by O(beta).)"""
    ids = model.tokenizer.encode("Once upon a time, in a small village by the sea, there lived")
    pair = LLMPair(model, spec(model, "early-exit:12"), T=1.0)
    p, q = pair.p(ids), pair.q(ids)
    n = 20_000
    thr = tv_threshold(p, n)
    beta = np.minimum(p, q).sum()
    broken_law = np.minimum(p, q) + (1 - beta) * p
    assert tv(broken_law, p) > thr + np.sqrt(np.log(1e6) / (2 * n))  # the control can fail
    row = RealRow(p, q)
    for rule, ok in (("correct", True), ("no_resample", False)):
        x = first_tokens(row, ids, rule, n, seed=1)
        got = tv(np.bincount(x, minlength=len(p)) / n, p)
        assert (got < thr) == ok, (rule, got, thr)


def test_an_ngram_draft_over_gemma_ids(model, ids):
    """q is the n-gram's own row (at the pair's T), read at the context's newest n - 1
    tokens; its cost is timed like a pass; a round runs on it."""
    from specviz.core.tables import temper_rows
    from specviz.text.ngram import NGramCounts, Tokenizer

    text = PROMPT + " The capital of Spain is Madrid. The capital of Italy is Rome. " * 3
    corpus = np.asarray(model.tokenizer.encode(text, bos=False))
    ngram = NGramCounts(Tokenizer("word", model.tokenizer.pieces), corpus, 3).model(3)
    pair = LLMPair(model, spec(model, "ngram:3"), T=0.8, ngram=ngram)
    assert np.array_equal(pair.q(ids), temper_rows(ngram.row(ids), 0.8))
    assert len(pair.draft_passes) == 1
    tr = play_round(Scenario.on(pair, ids, k=3), rng=np.random.default_rng(0))
    assert 1 <= len(tr.tokens) <= 4 and len(pair.draft_passes) >= 2
    with pytest.raises(DraftError, match="n-gram order"):
        spec(model, "ngram:0")
    with pytest.raises(DraftError, match="needs an n-gram model"):
        LLMPair(model, spec(model, "ngram:2"))
