"""The tour's real-model chapter on the real model: every number its question and answer
quote, recomputed from Gemma 3 270M's rows in the round the links open (played through the
engine as /llm plays it), and both links run under AppTest on the session's model."""

from __future__ import annotations

import html
from dataclasses import replace

import numpy as np
import pytest
from support import frame, run_page
from tourtext import num as _num
from tourtext import state as _state

from specviz.core.warp import Warp
from specviz.llm import store
from specviz.views import llmpage, tour
from specviz.web import llmstage, server, settings

PAGE = "pages/11_llm.py"
CHAPTER = next(ch for ch in tour.CHAPTERS if ch.slug == "real-model")


def _round(model: store.Model, s: settings.Settings):
    """Round s.rnd of /llm at the state s: the page's prompt, draft, k, T, seed, rule, warp."""
    ids = llmpage.encode_prompt(model, llmpage.prompt_text(s.llm_preset, s.llm_prompt),
                                max_chars=llmpage.PROMPT_CHARS_MAX,
                                max_tokens=llmpage.PROMPT_TOKENS_MAX)
    spec = llmpage.parse(model, s.llm_kind, s.llm_arg)
    warp = Warp(s.wT, s.wtopk, s.wtopp, s.wminp, bool(s.wdraft))
    stream = llmpage.stream(model, spec, ids, k=min(s.k, llmpage.K_MAX), T=s.llm_T,
                            seed=s.seed, rule=s.rule, warp=warp)
    assert stream.extend(s.rnd) == s.rnd
    return stream.transcript(s.rnd).current


@pytest.fixture(scope="module")
def played(model):
    """The round the chapter's links open, and round 0 of the page's default draft."""
    pre, ans = _state(CHAPTER.preset), _state(CHAPTER.answer_url)
    assert (pre.llm_preset, pre.llm_kind, pre.llm_arg, pre.k, pre.seed, pre.rnd, pre.rule) \
        == (ans.llm_preset, ans.llm_kind, ans.llm_arg, ans.k, ans.seed, ans.rnd, ans.rule)
    default = _round(model, settings.DEFAULTS)
    return pre, ans, _round(model, pre), default


def test_the_question_is_asked_at_the_first_draft(played):
    pre, ans, tr, _ = played
    assert (pre.llm_preset, pre.llm_kind, pre.llm_arg) == ("story", "early-exit", "12")
    assert "story preset" in CHAPTER.question and "12 of its 18 layers" in CHAPTER.question
    first = tr.positions[0]
    assert tr.steps[pre.step].kind == "draft" and tr.steps[pre.step].position == 1
    assert f"**{tr.name(first.token)}**, at q = " in CHAPTER.question
    assert first.q == pytest.approx(_num(CHAPTER.question, r"q = ([\d.]+)"), abs=5e-4)


def test_the_answer_is_the_rejection_and_its_residual(played):
    _, ans, tr, _ = played
    a = CHAPTER.answer
    first = tr.positions[0]
    p, q = first.p_row, first.q_row  # (V,) the full model's and the 12-layer draft's rows
    assert tr.steps[ans.step].kind == "residual" and tr.steps[ans.step].position == 1
    assert a.startswith("It falls.") and tr.rejected_at == 1 and not first.accepted
    assert f"**{tr.name(first.token)}** only p = " in a
    assert p[first.token] == pytest.approx(_num(a, r"only p = ([\d.]+)"), abs=5e-5)
    keep = min(1.0, p[first.token] / q[first.token])  # the standard rule's threshold
    assert keep == pytest.approx(_num(a, r"min\(1, p/q\) = ([\d.]+)"), abs=5e-5)
    assert first.u == pytest.approx(_num(a, r"u = ([\d.]+)"), abs=5e-5) and first.u >= keep
    assert len(tr.flushed) == tr.k - 1 == 3 and "the three guesses after it" in a
    beta = float(np.minimum(p, q).sum())  # the chance the first draft stands
    assert beta == pytest.approx(_num(a, r"sum_x min\(p, q\) = ([\d.]+)"), abs=5e-4)
    assert beta == pytest.approx(_num(a, r"1/\(1 − ([\d.]+)\)"), abs=5e-4)
    assert round(1 / beta) == 9 and "one round in nine" in a
    assert f"all {len(p):,} tokens" in a


def test_the_residual_and_the_redrawn_token(played):
    _, _, tr, _ = played
    a = CHAPTER.answer
    first = tr.positions[0]
    p, q = first.p_row, first.q_row
    residual = np.maximum(p - q, 0.0) / np.maximum(p - q, 0.0).sum()  # norm(max(0, p - q))
    np.testing.assert_allclose(tr.rejection_row, residual, atol=1e-12)
    top = int(np.argmax(p))  # the full model's favourite
    assert f"**{tr.name(top)}**, the full model's favourite" in a
    assert p[top] == pytest.approx(_num(a, r"from p = ([\d.]+) to"), abs=5e-4)
    assert residual[top] == pytest.approx(_num(a, r"from p = [\d.]+ to ([\d.]+)"), abs=5e-4)
    assert residual[top] == pytest.approx((p[top] - q[top]) / (1 - np.minimum(p, q).sum()))
    redrawn = next(e for e in tr.emitted if e.origin == "resampled")
    assert f"the draw is **{tr.name(redrawn.token)}**" in a
    assert len(tr.emitted) == 1 and "one target call, one token" in a


def test_the_default_draft_keeps_more(model, played):
    """skip:4,8's chance to keep its first guess, quoted; the default draft's, higher. (The
    default's own figure depends on the corpus its head is counted on, the running Python's
    standard library: the chapter does not quote it.)"""
    _, _, tr, default = played
    d = settings.DEFAULTS
    assert (d.llm_kind, d.llm_arg) == ("trimmed", "16384") and "the page's default draft, " \
        "every layer and a head over the 16,384 most frequent tokens, more still" in \
        CHAPTER.answer
    skip = _round(model, replace(d, llm_kind="skip", llm_arg="4,8"))
    first, own, sk = tr.positions[0], default.positions[0], skip.positions[0]
    for row in (own.p_row, sk.p_row):  # the same target, the same prefix
        np.testing.assert_array_equal(row, first.p_row)
    beta = lambda pos: float(np.minimum(pos.p_row, pos.q_row).sum())  # noqa: E731
    assert beta(sk) == pytest.approx(_num(CHAPTER.answer, r"reaches ([\d.]+)"), abs=5e-4)
    assert beta(own) > beta(sk)


@pytest.mark.parametrize("which", ["preset", "answer_url"])
def test_both_links_open_the_page_at_that_frame(model, played, which):
    """/llm at the chapter's two states, on the session's model (server.once pre-seeded)."""
    _, _, tr, _ = played
    assert server.once(llmstage.MODEL, lambda: model) is model
    url = getattr(CHAPTER, which)
    s, params = _state(url), tour.split(url)[1]
    at = run_page(PAGE, 300, **params)
    assert not at.error and not at.warning, [e.value for e in list(at.error) + list(at.warning)]
    for key, value in params.items():  # the page keeps the state in its URL
        assert at.query_params.get(key) == value, (key, at.query_params)
    shown = frame(at)
    assert f"step {s.step}" in shown and tr.steps[s.step].kind in shown
    first = tr.positions[0]
    if which == "preset":
        assert f"q = {first.q:.4f}" in shown
    else:
        assert html.escape(f"'{tr.name(tr.emitted[0].token)}' drawn from") in shown
        coin = at.get("plotly_chart")[1].proto.spec
        assert f"u = {first.u:.4f}" in coin and f"{first.threshold:.4f}" in coin
