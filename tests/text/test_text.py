"""Speculative decoding on n-gram text models: rounds, prompt lookup, long decodes, and the
Monte Carlo check that the output follows the target's own law (row by row)."""

from __future__ import annotations

import html

import numpy as np
import pytest
from support import narrated_round

from specviz.analysis.audit import CAUGHT, CONSISTENT
from specviz.core.lookup import lookup_draft
from specviz.core.pair import TablePair  # noqa: F401
from specviz.core.round import play_rounds
from specviz.core.sampling import draw_row
from specviz.core.scenario import Scenario
from specviz.core.tables import temper_rows
from specviz.core.trace import RoundDigest, RoundTrace
from specviz.figures import animation, export, textfigs
from specviz.text import ngram
from specviz.text import pair as tp
from specviz.views import pagedata, stepping, textpage, transcript
from specviz.views import textmeasure as measure


def play_text_round(dec, context, k, rng, rule="correct", drafter="ngram"):
    return narrated_round(dec.pair(drafter), list(context), k, rng=rng, rule=rule)


def text_transcript(dec, prompt, k, rnd, seed=0, drafter="ngram", shown=12):
    pair = dec.pair(drafter)
    return transcript.round_transcript(Scenario.on(pair, prompt, k=k, seed=seed),
                                       rnd=rnd, shown=shown, traced=2)


def play_text_rounds(dec, prompt, k, n_rounds, seed=0, rule="correct", drafter="ngram",
                     traced=None):
    return play_rounds(Scenario.on(dec.pair(drafter), list(prompt), k=k, rule=rule, seed=seed),
                       n_rounds=n_rounds, traced=traced)

@pytest.fixture(scope="module")
def text(stdlib_text) -> str:
    return stdlib_text


@pytest.fixture(scope="module")
def chars(text) -> ngram.NGramCounts:
    return ngram.train(text, "char", 5)


@pytest.fixture(scope="module")
def words(text) -> ngram.NGramCounts:
    return ngram.train(text, "word", 3)


# ----------------------------------------------------------------------------- pieces
def test_temper_rows_is_the_formula():
    """p^(1/T) / sum p^(1/T) row by row, zeros staying zero."""
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(7), size=7)
    P[0, 3] = 0.0
    P /= P.sum(axis=1, keepdims=True)
    for T in (0.3, 1.0, 2.5):
        W = P ** (1.0 / T)
        np.testing.assert_allclose(temper_rows(P, T), W / W.sum(axis=1, keepdims=True),
                                   rtol=1e-12)
        assert temper_rows(P, T)[0, 3] == 0.0
    row = P[0]
    assert temper_rows(row, 1.0) is row  # T = 1 leaves the row as it is


@pytest.mark.parametrize("tokens, k, hi, lo, want", [
    ([1, 2, 3, 4, 1, 2], 3, 3, 1, (3, 4, 1)),  # "1 2" seen at 0: copy what followed
    ([1, 2, 3, 4, 1, 2], 9, 3, 1, (3, 4, 1, 2)),  # cut at the end of the text
    ([1, 5, 1, 6, 1], 1, 3, 1, (6,)),  # last occurrence wins...
    ([5, 1, 2, 7, 3, 1, 2, 8, 0, 1, 2], 2, 3, 1, (8, 0)),  # ... longest match first
    ([7, 1, 2, 3, 9, 2, 3], 2, 3, 2, (9, 2)),  # "2 3" at 2..3
    ([1, 2, 3, 4], 3, 3, 1, ()),  # no earlier 4
    ([1, 2, 3, 2], 3, 3, 2, ()),  # "3 2" never seen before; n = 1 not allowed
    ([4], 3, 3, 1, ()),
])
def test_prompt_lookup(tokens, k, hi, lo, want):
    assert lookup_draft(tokens, k, hi, lo) == want


def test_row_source_caches_by_state_and_draws_like_sampling_draw(chars):
    from specviz.core.sampling import draw

    src = tp.RowSource(chars.model(3), T=0.8)
    ids = chars.tokenizer.encode("Return the value")
    a = src(ids)
    assert src(np.concatenate([[0, 1], ids])) is a  # same last two tokens: cached row
    assert not a.flags.writeable
    np.testing.assert_allclose(a, temper_rows(chars.model(3).row(ids), 0.8))
    for u in np.random.default_rng(1).random(200):
        assert src.draw(ids, u) == draw(a, u)


def test_draw_row_by_blocks_agrees_with_the_flat_inverse_cdf():
    from specviz.core.sampling import draw

    rng = np.random.default_rng(5)
    for V in (10, 5_000, 50_001):
        w = rng.dirichlet(np.full(V, 0.3))
        w[rng.random(V) < 0.3] = 0.0  # zeros in random places, never drawn
        w /= w.sum()
        us = np.concatenate([rng.random(300), [0.0, np.nextafter(1.0, 0.0)]])
        got = [draw_row(w, u) for u in us]
        assert got == [draw(w, u) for u in us]
        assert all(w[x] > 0 for x in got)


# ----------------------------------------------------------------------------- rounds
def test_a_traced_round_holds_the_computed_rows(chars):
    dec = tp.TextDecoder(chars, 5, 2, T_p=0.9, T_q=1.3)
    ctx = dec.encode("Return the ")
    tr = play_text_round(dec, ctx, 4, np.random.default_rng(3))
    assert isinstance(tr, RoundTrace) and tr.k == 4 and len(tr.positions) == 4
    assert tr.ctx == ctx[-1] and tr.vocab == dec.names
    assert 1 <= len(tr.emitted) <= 5
    prefix = list(ctx)
    for pos in tr.positions:
        np.testing.assert_array_equal(pos.p_row, dec.target(prefix))
        np.testing.assert_array_equal(pos.q_row, dec.draft(prefix))
        np.testing.assert_allclose(pos.p_row, temper_rows(chars.model(5).row(prefix), 0.9))
        assert pos.threshold == pytest.approx(min(1.0, pos.p / pos.q))
        assert pos.p_row.shape == (dec.V,)
        prefix.append(pos.token)
    kinds = [s.kind for s in tr.steps]
    assert kinds[0] == "start" and kinds[-1] == "done" and kinds.count("draft") == 4
    if tr.rejected_at is not None:
        np.testing.assert_allclose(tr.rejection_row.sum(), 1.0)
        i = tr.rejected_at - 1
        res = np.maximum(tr.positions[i].p_row - tr.positions[i].q_row, 0)
        np.testing.assert_allclose(tr.rejection_row, res / res.sum())


def test_the_same_seed_replays_the_same_rounds(chars):
    dec = tp.TextDecoder(chars, 5, 2)
    ctx = dec.encode("If the file")
    a = play_text_rounds(dec, ctx, 3, 20, seed=4)
    b = play_text_rounds(tp.TextDecoder(chars, 5, 2), ctx, 3, 20, seed=4, traced=3)
    assert [r.tokens for r in a] == [r.tokens for r in b]
    assert isinstance(b[-1], RoundTrace) and isinstance(b[0], RoundDigest)
    c = play_text_rounds(dec, ctx, 3, 20, seed=5)
    assert [r.tokens for r in a] != [r.tokens for r in c]


def test_lookup_rounds_use_a_one_hot_q(chars):
    dec = tp.TextDecoder(chars, 5, 2)
    ctx = dec.encode("the cat sat on the mat and the cat sat on the ")
    tr = play_text_round(dec, ctx, 4, np.random.default_rng(0), drafter="lookup")
    assert [p.token for p in tr.positions] == dec.encode("mat ")
    for pos in tr.positions:
        assert pos.q == 1.0 and pos.q_row.sum() == 1.0
        assert pos.threshold == pytest.approx(pos.p)
    none = play_text_round(dec, dec.encode("xyz"), 4, np.random.default_rng(0),
                              drafter="lookup")
    assert none.k == 0 and [e.origin for e in none.emitted] == ["bonus"]
    assert "no earlier match" in none.steps[0].caption
    # nothing drafted: the one token is plain decoding, never "bonus, from p, free"
    last = stepping.last_step(none)
    chip = stepping.chips(none, last)[-1]
    assert chip.status == "plain" and "free" not in " ".join(chip.lines)
    assert "plain decoding" in animation.residual_figure(none, last).layout.title.text
    assert 'data-status="plain"' in animation.chips_html(none, last)
    # and the frame that shows it: the counter and the caption say plain decoding
    bonus = next(i for i, st in enumerate(none.steps) if st.kind == "bonus")
    box = animation.step_html(none, bonus, 0)
    assert "<i>plain decoding</i>" in box and "<i>bonus</i>" not in box
    assert "plain decoding" in none.steps[bonus].caption and "bonus" not in box
    assert "one target call" in none.steps[bonus].caption
    # its offline export draws it too (the bars' range read from the rows it has)
    fig = export.round_figure(none, 0)
    assert len(fig.frames) == len(none.steps) and fig.layout.yaxis2.range[1] > 0
    rounds = (play_text_round(dec, ctx, 1, np.random.default_rng(seed), drafter="lookup")
              for seed in range(200))
    kept = next(r for r in rounds if r.rejected_at is None)  # the draft kept: a real bonus
    bonus = next(i for i, st in enumerate(kept.steps) if st.kind == "bonus")
    assert kept.k == 1 and "<i>bonus</i>" in animation.step_html(kept, bonus, 0)


def test_broken_rules_play_their_own_way(chars):
    dec = tp.TextDecoder(chars, 5, 1)
    ctx = dec.encode("Return the ")
    for seed in range(30):
        tr = play_text_round(dec, ctx, 4, np.random.default_rng(seed), rule="continue")
        if tr.rejected_at is not None and tr.rejected_at < 4:
            assert tr.emitted[-1].origin == "unverified" and not tr.flushed
            break
    else:
        pytest.fail("no early rejection in 30 rounds")
    tr = play_text_round(dec, ctx, 4, np.random.default_rng(0), rule="greedy")
    for pos in tr.positions:
        if pos.verified:
            assert pos.threshold in (0.0, 1.0)


@pytest.mark.parametrize("kw, match", [
    (dict(rule="nope"), "unknown rule"),
    (dict(drafter="oracle"), "drafter"),
    (dict(k=0), r"k \(drafted tokens per round\) must be"),
    (dict(context=[]), "at least one token"),
    (dict(context=[10**6]), "ctx must be a token index"),
])
def test_bad_arguments_are_refused(chars, kw, match):
    dec = tp.TextDecoder(chars, 5, 2)
    args = dict(context=dec.encode("Return"), k=3, rule="correct", drafter="ngram")
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        play_text_round(dec, args["context"], args["k"], np.random.default_rng(0),
                           args["rule"], args["drafter"])


def test_multi_candidate_rules_play_on_text(chars):
    """SpecInfer's m candidates per position run on the n-gram pair too."""
    dec = tp.TextDecoder(chars, 5, 2)
    tr = play_text_round(dec, dec.encode("Return the"), 4, np.random.default_rng(1),
                         rule="multi_draft")
    assert all(1 <= len(pos.tries) <= 3 for pos in tr.positions)
    assert tr.steps[0].kind == "start" and tr.steps[-1].kind == "done"


def test_temperatures_are_checked(chars):
    with pytest.raises(ValueError, match="T_p"):
        tp.TextDecoder(chars, 5, 2, T_p=0.0)
    with pytest.raises(ValueError, match="T_q"):
        tp.TextDecoder(chars, 5, 2, T_q=float("nan"))


# ----------------------------------------------------------------------------- long decodes
def test_long_decode_counts(chars):
    dec = tp.TextDecoder(chars, 5, 2)
    st = measure.long_text_decode(Scenario.on(dec.pair(), dec.encode("Return the "), k=4, seed=1),
                                  length=1_000)
    assert st.tokens >= 1_000 and len(st.ids) == st.tokens
    assert 1.0 <= st.tokens_per_call <= 5.0 and 0.0 <= st.draft_acceptance_rate <= 1.0
    assert st.drafted == 4 * st.rounds and st.accepted <= st.drafted
    assert st.tokens == st.rounds + st.accepted  # each round: its kept drafts, then one more
    assert 0.0 < st.beta_mean < 1.0
    assert list(st.per_position) == sorted(st.per_position, reverse=True)
    assert st.speedup(0.1) == pytest.approx(st.tokens_per_call / 1.4)
    assert st.seconds > 0.0  # the wall time is recorded; its speed is benchmarks/bench_text's


def test_a_draft_equal_to_the_target_is_always_kept(chars):
    dec = tp.TextDecoder(chars, 4, 4, 0.8, 0.8)
    st = measure.long_text_decode(Scenario.on(dec.pair(), dec.encode("Return "), k=3), length=200)
    assert st.draft_acceptance_rate == 1.0 and st.tokens_per_call == 4.0


def test_order_sweep_and_drafter_comparison(chars):
    prompt = chars.tokenizer.encode("Return the ").tolist()
    rows = measure.order_sweep(chars, 5, prompt, 3, 300, seed=2, c=0.1)
    assert [r["draft order"] for r in rows] == [1, 2, 3, 4, 5]
    assert rows[-1]["acceptance"] == 1.0 and not rows[-1]["smaller than target"]
    beta = [r["beta"] for r in rows]
    assert beta[0] < beta[2] < beta[4]  # a closer draft overlaps the target more
    dec = tp.TextDecoder(chars, 5, 2)
    cmp = measure.drafter_comparison(Scenario.on(dec.pair(), prompt, k=3, seed=2),
                                     length=300, c=0.2)
    assert [r["drafter"] for r in cmp] == ["ngram", "lookup"]
    assert cmp[1]["c"] == 0.0 and cmp[1]["speedup"] == pytest.approx(cmp[1]["tokens per call"])
    assert cmp[0]["speedup"] == pytest.approx(cmp[0]["tokens per call"] / 1.6)


# ----------------------------------------------------------------------------- exactness
def test_cells_hold_the_exact_law(chars, words):
    dec = tp.TextDecoder(chars, 5, 2, 0.7)
    ctx = dec.encode("Return ")
    full = measure.first_tokens_cells(dec, ctx, 2)
    assert full.law.shape == (dec.V**2,) and abs(full.law.sum() - 1) < 1e-12
    x = 5
    np.testing.assert_allclose(full.law[x * dec.V:(x + 1) * dec.V],
                               dec.target(ctx)[x] * dec.target(ctx + [x]))
    wdec = tp.TextDecoder(words, 3, 1)
    coarse = measure.first_tokens_cells(wdec, wdec.encode("Return the"), 2, top=8)
    assert len(coarse.law) == 8 * 9 + 1 and abs(coarse.law.sum() - 1) < 1e-12
    assert coarse.cell((10**6, 0)) == coarse.first[None]


@pytest.mark.parametrize("prompt, T_p, T_q", [("Return the ", 1.0, 1.0),
                                               ("If the file ", 0.7, 1.5)])
def test_char_models_are_exact_and_broken_rules_are_caught(chars, prompt, T_p, T_q):
    dec = tp.TextDecoder(chars, 5, 2, T_p, T_q)
    ctx = dec.encode(prompt)
    for n_tokens in (1, 2):
        ok = measure.text_exactness(Scenario.on(dec.pair("ngram"), ctx, k=3, seed=7), n=4_000,
                                    n_tokens=n_tokens)
        assert ok.at_floor and ok.test.consistent, ok
    no_resample = Scenario.on(dec.pair("ngram"), ctx, k=3, rule="no_resample", seed=7)
    bad = measure.text_exactness(no_resample, n=8_000, n_tokens=2)
    assert not bad.at_floor and bad.mc_tv > 1.4 * bad.threshold
    assert bad.verdict == CAUGHT and bad.p_value < 1e-6


def test_prompt_lookup_is_exact(chars):
    dec = tp.TextDecoder(chars, 5, 2)
    ctx = dec.encode("Return the value. Return the ")
    ex = measure.text_exactness(Scenario.on(dec.pair("lookup"), ctx, k=3, rule="correct", seed=3),
                                n=3_000, n_tokens=2, top=16)
    assert ex.at_floor and ex.verdict == CONSISTENT, ex


def test_word_models_are_exact_and_greedy_is_caught(words):
    dec = tp.TextDecoder(words, 3, 1)
    ctx = dec.encode("Return the")
    ok = measure.text_exactness(Scenario.on(dec.pair("ngram"), ctx, k=3, rule="correct", seed=1),
                                n=3_000, n_tokens=2, top=12)
    assert ok.at_floor and ok.test.consistent, ok
    bad = measure.text_exactness(Scenario.on(dec.pair("ngram"), ctx, k=3, rule="greedy", seed=1),
                                 n=3_000, n_tokens=2, top=12)
    assert not bad.at_floor and bad.verdict == CAUGHT


# ----------------------------------------------------------------------------- page data
def test_page_builders_draw_every_frame(words):
    dec = tp.TextDecoder(words, 3, 1)
    prompt = tuple(dec.encode("Return the"))
    for drafter in tp.DRAFTERS:
        tr = text_transcript(dec, prompt, 4, 3, seed=2, drafter=drafter)
        assert tr.rnd == 3 and tr.before.rounds == 3 and tr.through.rounds == 4
        assert tr.previous is not None and isinstance(tr.previous, RoundTrace)
        trace = tr.current
        for step in range(stepping.last_step(trace) + 1):
            animation.chips_html(trace, step)
            animation.coin_figure(trace, step)
            fig = animation.bars_figure(trace, step, top=textpage.TOP_BARS)
            for b in fig.data:  # the top tokens, the marked one if not among them, the rest
                assert len(b.x) <= textpage.TOP_BARS + 2 and b.x[-1] == animation.REST_LABEL
                assert sum(b.y) == pytest.approx(1.0, abs=1e-4)  # the whole row's mass
            animation.residual_figure(trace, step, top=textpage.TOP_BARS)
            textfigs.tokens_html(dec.counts.tokenizer, tr, step)
        labels = dict(textpage.running_metrics(tr.through, 4, 0.1, drafter))
        assert labels["rounds (target calls)"] == "4"
    late = text_transcript(dec, prompt, 4, 20, seed=2, shown=3)
    assert late.first == 17 and len(late.earlier) == 3 and late.through.rounds == 21
    out = textfigs.tokens_html(dec.counts.tokenizer, late, stepping.last_step(late.current))
    assert 'title="earlier rounds"' in out and out.count("data-origin=") >= 4
    assert late.through.tokens == len(late.context) - len(prompt) + len(late.current.emitted)


def test_text_html_escapes_the_text():
    cs = ngram.train("<b>bold</b> & <script>alert(1)</script> " * 20, "char", 3)
    dec = tp.TextDecoder(cs, 3, 1)
    prompt = tuple(dec.encode("<script>"))
    tr = text_transcript(dec, prompt, 3, 2, seed=0)
    out = textfigs.tokens_html(dec.counts.tokenizer, tr, stepping.last_step(tr.current))
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "<script" not in animation.chips_html(tr.current, stepping.last_step(tr.current))


def test_a_prompt_is_shown_escaped_with_its_lines_and_indents():
    text = 'def f(n):\n    """<b>x</b> & y"""\n    return n'
    out = textfigs.prompt_html(text)
    assert out.startswith(f'<pre class="{textfigs.PROMPT_CLASS}"') and "pre-wrap" in out
    assert "<b>" not in out and "&lt;b&gt;" in out
    assert html.unescape(out.split(">", 1)[1].rsplit("<", 1)[0]) == text


def test_reprice_keeps_lookup_free():
    rows = [{"drafter": "ngram", "tokens per call": 2.0},
            {"drafter": "lookup", "tokens per call": 1.5}]
    out = pagedata.reprice(rows, 0.25, 4)
    assert out[0]["speedup"] == pytest.approx(1.0) and out[1]["speedup"] == pytest.approx(1.5)
