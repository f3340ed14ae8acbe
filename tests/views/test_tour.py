"""The guided tour's chapters: order, links, and every number an answer quotes, recomputed
from the engine at the state the answer links to."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scenarios import sc
from tourtext import num as _num
from tourtext import state as _state

from specviz.analysis import theory
from specviz.core.pair import TablePair
from specviz.core.scenario import Scenario
from specviz.core.tables import default_tables
from specviz.text.ngram import train
from specviz.views import demos, gallery, pagedata, site, tour, transcript
from specviz.web import settings


def _transcript(pair, prefix, k, *, rule="correct", seed=0, tree=(), **kw):
    sc = Scenario.on(pair, prefix, k=k, rule=rule, seed=seed, tree=tree)
    return transcript.round_transcript(sc, **kw)

ORDER = ["one-token", "exactness", "acceptance", "draft-length", "cost", "roofline", "rules",
         "text", "real-model", "medusa"]  # real-model's numbers: tests/llm/test_llm_tour.py


@pytest.fixture(scope="module")
def tables():
    return default_tables()


# ----------------------------------------------------------------------------- structure
def test_chapters_come_in_the_issue_order():
    assert [c.slug for c in tour.CHAPTERS] == ORDER
    assert len(tour.CHAPTERS) == settings.CHAPTER_MAX + 1


@pytest.mark.parametrize("ch", tour.CHAPTERS, ids=lambda c: c.slug)
def test_every_link_is_a_known_page_with_clean_parameters(ch):
    for url in (ch.preset, ch.answer_url):
        path, params = tour.split(url)
        assert path in site.LINKABLE, url
        assert set(params) <= set(settings.KEYS), url
        s, notes = settings.parse_query(params)
        assert notes == [], (url, notes)
        # the URL is already minimal: it round-trips through to_query unchanged
        assert settings.to_query(s, tuple(params)) == params, url
    assert ch.preset != ch.answer_url
    assert ch.question.strip() and ch.answer.strip() and ch.title.strip()
    assert re.search(r"\((?:Leviathan|Chen|Miao)[^)]*\d{4}", ch.answer), "answer cites a paper"


def test_href_is_relative_and_keeps_presenter_mode():
    assert tour.href("/cost?c=0.6") == "cost?c=0.6"
    assert tour.href("/cost") == "cost"
    assert tour.href("/cost?c=0.6", present=True) == "cost?c=0.6&present=1"
    assert tour.href("/tour", present=True) == "tour?present=1"


def test_labels_and_neighbours():
    assert tour.label(0) == "1 · One token"
    assert tour.neighbours(0) == (None, 1)
    assert tour.neighbours(3) == (2, 4)
    last = len(tour.CHAPTERS) - 1
    assert tour.neighbours(last) == (last - 1, None)
    rows = tour.outline()
    assert [r["page"] for r in rows] == [tour.split(c.preset)[0] for c in tour.CHAPTERS]


# ----------------------------------------------------------------------------- the answers
def test_one_token_answer(tables):
    ch = tour.CHAPTERS[0]
    s, a = _state(ch.preset), _state(ch.answer_url)
    tr = _transcript(TablePair(tables.P, tables.Q, tables.vocab), 0, s.k, rnd=s.rnd,
                     seed=s.seed, rule=s.rule).current
    pos = tr.positions[0]
    assert tr.name(tr.ctx) == "a" and tr.name(pos.token) == "e"
    assert tr.steps[s.step].kind == "draft"  # the question: q shown, p not yet
    assert tr.steps[a.step].kind == "residual"  # the answer: the redraw
    assert pos.q == pytest.approx(_num(ch.question, r"q = ([\d.]+)"), abs=5e-4)
    assert pos.p == pytest.approx(_num(ch.question, r"p = ([\d.]+)"), abs=5e-4)
    assert pos.threshold == pytest.approx(_num(ch.answer, r"min\(1, p/q\) = ([\d.]+)"),
                                          abs=5e-4)
    assert pos.u == pytest.approx(_num(ch.answer, r"u = ([\d.]+)"), abs=5e-4)
    assert not pos.accepted
    shown = [float(x) for x in re.search(r"= \[([^\]]+)\] over", ch.answer)[1].split(",")]
    np.testing.assert_allclose(tr.rejection_row, shown, atol=5e-4)
    redrawn = next(e for e in tr.emitted if e.origin == "resampled")
    assert f"the draw is **{tr.name(redrawn.token)}**" in ch.answer


def test_exactness_answer(tables):
    ch = tour.CHAPTERS[1]
    few, many = _state(ch.preset), _state(ch.answer_url)
    rules = pagedata.page_rules(few.rule)
    lo_ex = demos.exactness(sc(tables.P, tables.Q, 0, few.k, seed=few.seed), n=few.n, rules=rules)
    hi_ex = demos.exactness(sc(tables.P, tables.Q, 0, many.k, seed=many.seed),
                            n=many.n, rules=rules)
    lo = {r["rule"]: r for r in pagedata.exactness_rows(lo_ex)}
    hi = {r["rule"]: r for r in pagedata.exactness_rows(hi_ex)}
    lo_v = {a.rule: a.audit.test for a in lo_ex.audits}
    hi_v = {a.rule: a.audit.test for a in hi_ex.audits}
    assert lo["correct"]["floor"] == pytest.approx(
        _num(ch.answer, r"floor \(([\d.]+)\)"), abs=5e-4)
    for rule in ("no_resample", "continue"):
        assert lo[rule]["at_floor"], rule  # both under the TV threshold at 2,000
        assert not hi_v[rule].consistent and hi_v[rule].tv_above, rule  # caught at 300,000
        assert lo[rule]["exact_tv"] == pytest.approx(
            _num(ch.answer, rf"{rule}\*\* \((?:exact TV )?([\d.]+)\)"), abs=5e-4)
    assert lo_v["continue"].consistent  # hidden at 2,000
    assert lo_v["no_resample"].p_below and not lo_v["no_resample"].tv_above
    assert "p around 1e-10" in ch.answer and 1e-11 < lo["no_resample"]["p_value"] < 1e-9
    assert lo_v["correct"].consistent and hi_v["correct"].consistent
    assert hi["correct"]["floor"] == pytest.approx(
        _num(ch.answer, r"1/sqrt\(n\) to ([\d.]+)"), abs=5e-5)


def test_acceptance_answer(tables):
    ch = tour.CHAPTERS[2]
    s4, s8 = _state(ch.preset), _state(ch.answer_url)
    assert (s4.k, s4.c, s8.k, s8.c) == (4, 0.1, 8, 0.1)
    at = {k: {r["alpha"]: r["speedup_exact"]
              for r in pagedata.draft_curve(sc(tables.P, tables.Q, 0, k), "alpha", (0.0, 1.0),
                                            c=0.1)} for k in (4, 8)}
    perfect = re.search(r"goes from ([\d.]+)x to ([\d.]+)x: every", ch.answer)
    junk = re.search(r"goes from ([\d.]+)x to ([\d.]+)x, slower", ch.answer)
    assert at[4][1.0] == pytest.approx(float(perfect[1]), abs=5e-3)
    assert at[8][1.0] == pytest.approx(float(perfect[2]), abs=5e-3)
    assert at[4][0.0] == pytest.approx(float(junk[1]), abs=5e-3)
    assert at[8][0.0] == pytest.approx(float(junk[2]), abs=5e-3)
    assert at[8][0.0] < 1.0 < at[4][0.0]


def test_draft_length_answer(tables):
    ch = tour.CHAPTERS[3]
    s = _state(ch.preset)
    curve = {r["k"]: r for r in pagedata.k_curve(sc(tables.P, tables.Q, 0),
                                                 c=s.c, ks=pagedata.K_GRID)}
    alpha = curve[1]["alpha_eff"]
    assert 1 / (1 - alpha) == pytest.approx(_num(ch.answer, r"1/\(1 − alpha\) = ([\d.]+)"),
                                            abs=5e-3)
    assert curve[4]["tokens_per_call_exact"] == pytest.approx(
        _num(ch.answer, r"([\d.]+) at k = 4"), abs=5e-3)
    assert curve[16]["tokens_per_call_exact"] == pytest.approx(
        _num(ch.answer, r"([\d.]+) at k = 16"), abs=5e-3)
    assert 1 + 4 * s.c == pytest.approx(_num(ch.answer, r"grows from ([\d.]+) to"))
    assert 1 + 16 * s.c == pytest.approx(_num(ch.answer, r"to ([\d.]+) target"))
    assert curve[4]["speedup_exact"] == pytest.approx(
        _num(ch.answer, r"falls from ([\d.]+)x"), abs=5e-3)
    assert curve[16]["speedup_exact"] == pytest.approx(
        _num(ch.answer, r"to ([\d.]+)x \(the best"), abs=5e-3)
    best = demos.best_row(list(curve.values()), "speedup_exact")
    assert best["k"] == _num(ch.answer, r"best is k = (\d+)")
    assert best["speedup_exact"] == pytest.approx(_num(ch.answer, r"k = \d+, ([\d.]+)x\)"),
                                                  abs=5e-3)
    # the answer's round: the first guess rejected, the rest flushed, at its last step
    a = _state(ch.answer_url)
    tr = _transcript(TablePair(tables.P, tables.Q, tables.vocab), 0, a.k, rnd=a.rnd,
                     seed=a.seed, rule=a.rule).current
    assert a.k == 16 and tr.rejected_at == 1
    assert len(tr.flushed) == _num(ch.answer, r"the (\d+) after it")
    assert a.step == len(tr.steps) - 1


def test_cost_answer(tables):
    ch = tour.CHAPTERS[4]
    s, a = _state(ch.preset), _state(ch.answer_url)
    cm = demos.cost_model(sc(tables.P, tables.Q, 0, s.k), costs=pagedata.COST_GRID)
    before, after = pagedata.slow_cases(cm, (s.c, a.c))
    assert before["speedup"] == pytest.approx(_num(ch.answer, r"fell from ([\d.]+)x"), abs=5e-3)
    assert after["speedup"] == pytest.approx(_num(ch.answer, r"to ([\d.]+)x"), abs=5e-3)
    assert after["slower"] and not before["slower"]
    assert cm.break_even == pytest.approx(_num(ch.answer, r"c\* = ([\d.]+)"), abs=5e-4)
    assert s.c < cm.break_even < a.c
    assert cm.tokens_per_call == pytest.approx(_num(ch.answer, r"per call \(([\d.]+)\)"),
                                               abs=5e-3)
    assert theory.speedup(cm.tokens_per_call, s.k, a.c) == pytest.approx(after["speedup"])


def test_roofline_answer():
    ch = tour.CHAPTERS[5]
    s, a = _state(ch.preset), _state(ch.answer_url)
    pre = pagedata.roofline_page(s.preset, s.accel, s.k, s.ctxlen, s.dtype, s.batch)
    ans = pagedata.roofline_page(a.preset, a.accel, a.k, a.ctxlen, a.dtype, a.batch)
    one = pagedata.roofline_page(a.preset, a.accel, a.k, a.ctxlen, a.dtype, 1)
    assert (s.batch, s.k, a.batch, a.k) == (64, 4, 64, 16)
    assert pre.free_for_k and not ans.free_for_k
    assert ans.verify_ratio == pytest.approx(_num(ch.answer, r"^([\d.]+)x"), abs=5e-3)
    assert ans.free_tokens == _num(ch.answer, r"beyond (\d+) tokens")
    assert one.free_tokens == _num(ch.answer, r"batch 1, (\d+) tokens")
    assert a.batch * (a.k + 1) == _num(ch.answer, r"= ([\d,]+) tokens")


def test_rules_answer(tables):
    ch = tour.CHAPTERS[6]
    g = gallery.gallery(sc(tables.P, tables.Q, 0, 4, seed=0), n=gallery.GALLERY_NS[0], params={})
    rows = {r["rule"]: r for r in gallery.gallery_rows(g)}
    assert rows["lenient"]["acceptance_long_run"] == pytest.approx(
        _num(ch.answer, r"lenient keeps (\d+)%") / 100, abs=5e-3)
    assert rows["correct"]["acceptance_long_run"] == pytest.approx(
        _num(ch.answer, r"standard rule's (\d+)%") / 100, abs=5e-3)
    assert rows["multi_draft"]["acceptance_long_run"] == pytest.approx(
        _num(ch.answer, r"keeps (\d+)% with no bias") / 100, abs=5e-3)
    assert rows["lenient"]["exact_tv"] == pytest.approx(
        _num(ch.answer, r"sits ([\d.]+) in TV"), abs=5e-3)
    assert rows["multi_draft"]["exact_tv"] < 1e-9 and rows["lenient"]["exact_tv"] > 0.1
    a = _state(ch.answer_url)
    assert a.rule == "lenient"


def test_real_text_answer_claims_acceptance_falls_with_a_hot_draft():
    """Heavier: trains the character models on the default corpus (cached on disk)."""
    from specviz.text import corpus
    from specviz.views import textpage

    ch = tour.CHAPTERS[7]
    s, a = _state(ch.preset), _state(ch.answer_url)
    assert (s.T, a.T) == (1.0, 2.0)
    target, _ = textpage.DEFAULT_ORDERS["char"]
    counts = train(corpus.default_corpus().text, "char", textpage.counts_max_order(target))
    from specviz.text.pair import TextDecoder

    dec = TextDecoder(counts, target, 1, 1.0, 1.0)
    ids, _ = textpage.encode_prompt(dec, textpage.DEFAULT_PROMPT)
    cool = textpage.page_order_sweep(counts, counts.fingerprint, target, ids, s.k, s.seed,
                                     1.0, s.T)
    hot = textpage.page_order_sweep(counts, counts.fingerprint, target, ids, a.k, a.seed,
                                    1.0, a.T)
    for c_row, h_row in zip(cool, hot, strict=True):
        assert h_row["acceptance"] < c_row["acceptance"], (c_row, h_row)


def test_medusa_answer_quotes_the_cost_model_and_the_shipped_heads():
    """Its c from the cost model at Gemma 3 270M's shape, its top-1 rates from the heads'
    own JSON (what the training script measured on held-out prompts)."""
    from specviz.llm import drafts, medusa
    from specviz.llm.gemma import Config

    ch = tour.CHAPTERS[ORDER.index("medusa")]
    a = ch.answer
    gemma = Config(n_layers=18, d=640, n_heads=4, n_kv=1, head_dim=256, ffn=2048, V=262_144,
                   eps=1e-6, rope_global=1e6, rope_local=1e4, window=512, context=32_768,
                   bos=2, eos=1)
    c = lambda d: drafts.kind_of(s := drafts.parse_draft(d, cfg=gemma)).c_macs(s, gemma)  # noqa: E731
    assert _num(a, r"c = (\d\.\d+) of a pass") == round(c("medusa:4"), 3)
    assert _num(a, r"draft: (\d\.\d+)\)") == round(c("trimmed:16384"), 2)
    rates = re.search(r"of the time", a) and re.findall(r"(0\.\d+)", a.split("top-1")[1])[:4]
    shipped = [t["rate"] for t in medusa.load_heads().meta["top1"]]
    assert [float(r) for r in rates] == [round(x, 2) for x in shipped]
    assert _state(ch.preset).llm_kind == "medusa" and _state(ch.answer_url).m_draft == "medusa:4"
    assert _num(a, r"top probability is under (\d\.\d+)") == medusa.SURE  # its stop
    assert _state(ch.preset).llm_arg == "4:0"  # every head drafts: the chips name them all
