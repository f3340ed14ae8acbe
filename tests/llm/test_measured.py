"""/measured on the real model: the measurements, greedy with and without speculation against
transformers' greedy continuation, exact real rows with a broken rule flagged, the page
under AppTest (a tiny run) and /plan taking what it measured."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support import app_test

from specviz.analysis.audit import CAUGHT, CONSISTENT
from specviz.core.rule import overlap, residual
from specviz.llm import drafts
from specviz.views import llmpage
from specviz.views import measured as mv
from specviz.views import plan as pv
from specviz.views import realrows as rr
from specviz.web import measuredhere

ROOT = Path(__file__).resolve().parents[2]
NEW = 4  # tokens per decode: the loaded CPU takes ~0.2 s a position


@pytest.fixture(scope="module")
def fact(model, reference):
    ref = reference["prompts"]["fact"]
    m = mv.measure(model, ref["text"], ["early-exit:12", "lookup"], k=2, max_new=NEW)
    return ref, m


def test_measurements_are_consistent(fact):
    """Each repetition's figures from its own runs (c = t_draft / t(1), speedup = its
    tokens/s over the same repetition's plain ones); each shown figure the median of the
    repetitions, inside their range; the counts the same in every repetition."""
    _, m = fact
    assert [d.label for d in m.drafts] == ["early-exit:12", "lookup"] and not m.stopped
    assert m.reps == mv.REPS and m.load is not None and m.modes == mv.MODES
    for row in mv.summary_rows(m):
        d = next(d for d in m.drafts if d.label == row["draft"])
        runs = d.runs[row["mode"]]
        assert row["t1_ms"] > 0 and row["reps"] == len(runs) == mv.REPS
        assert len({(s.tokens_per_call, s.accepted_at, s.tokens) for s in runs}) == 1
        for s in runs:
            assert s.speedup == pytest.approx(s.spec_tps / s.plain_tps)
            assert s.tokens == NEW and s.made[1] == NEW  # equal lengths
            if row["draft"] == "lookup":
                assert s.c is None
            else:
                assert s.c == pytest.approx(s.draft_s / s.target_1_s)
        if runs[0].drafted_at[-1] == 0:  # no round drafted k (lookup without a match)
            assert row["tk1_ms"] is None and row["verify_ratio"] is None
        else:
            ratios = sorted(mv.verify_ratio(s) for s in runs)
            assert row["verify_ratio"] == pytest.approx(ratios[len(ratios) // 2])
        ups = sorted(s.speedup for s in runs)
        assert row["speedup"] is None or row["speedup"] == pytest.approx(ups[len(ups) // 2])
        assert row["t1"].startswith(f"{row['t1_ms']:.1f}")
    for d in m.drafts:
        for mode in d.modes:
            s = d.summary(mode)
            for r in mv.acceptance_rows(s):
                assert r["kept"] <= r["drafted"]
                if r["drafted"]:
                    assert r["lo"] <= r["rate"] <= r["hi"]
            assert mv.why(mv.figures(d, mode)).startswith(f"{d.label}, {mode}: ")


def test_greedy_with_and_without_speculation_against_transformers(fact):
    ref, m = fact
    for d in m.drafts:
        ag = d.agreement
        assert list(ag.plain) == ref["greedy"][:NEW]  # plain greedy = transformers' greedy
        # lossless: speculative greedy is the same text, unless a rounding-sized margin
        # flipped an argmax (then both passes' margins are shown)
        assert ag.spec == ag.plain or ag.one_pass.margin < 1e-3, ag
        if ag.spec == ag.plain:
            assert ag.smallest is not None and ag.largest_shift < 1e-2


def test_measured_here_feeds_plan(fact):
    _, m = fact
    here = mv.plan_source(m.drafts[0], "sampled")
    page = pv.plan_page(pv.PlanSettings(target_preset="Qwen3-0.6B", draft_preset="Qwen3-0.6B",
                                        gpu="H100"), here=here)
    assert not page.errors and page.report.k == 2
    s = m.drafts[0].sampled
    t = {r["quantity"]: r["measured"] for r in page.tables["measured"]}
    assert t["target pass, 1 token (ms)"] == pytest.approx(1e3 * s.target_1_s)
    assert t["verify pass (ms)"] == pytest.approx(1e3 * s.target_k1_s)


def test_exact_on_real_rows_flags_the_broken_rule(model):
    r = rr.real_rows(model, llmpage.PRESETS["story"][1], "early-exit:12", k=2, n=20_000)
    assert r.beta_lumped == pytest.approx(r.beta_full, abs=1e-12)
    checks = {row["rule"]: row for row in rr.check_rows(r)}
    assert checks["correct"]["verdict"] == CONSISTENT and checks["correct"]["consistent"]
    assert checks["correct"]["exact_tv"] < 1e-12
    assert checks[rr.BROKEN]["verdict"] == CAUGHT  # the negative control
    assert not checks[rr.BROKEN]["consistent"]
    assert checks[rr.BROKEN]["exact_tv"] > checks[rr.BROKEN]["threshold"]
    # the positions' laws from the rows themselves (oracle: sum min, max(0, p - q))
    pair = drafts.draft_pair(model, drafts.parse_draft("early-exit:12", cfg=model.cfg))
    ids = model.tokenizer.encode(llmpage.PRESETS["story"][1])
    p, q = pair.p(ids), pair.q(ids)
    # p and q here come from a prefill of the prompt alone; the round read them from its
    # block pass over the prompt and its drafts: the same sums in another order (~1e-7)
    assert r.positions[0]["beta"] == pytest.approx(np.minimum(p, q).sum(), abs=1e-5)
    assert r.positions[0]["beta"] == pytest.approx(float(overlap(p, q)), abs=1e-5)
    top = np.maximum(p - q, 0)
    assert r.positions[0]["residual"].startswith(f"'{pair.name(int(np.argmax(top)))}'")
    assert float(residual(p, q).max()) == pytest.approx(top.max() / top.sum())


@pytest.mark.model  # the page loads the real model itself (no `model` fixture asks for it)
def test_the_page_measures_on_the_button_and_plan_lists_it():
    at = app_test(ROOT / "pages" / "12_measured.py", timeout=600)
    for key, value in dict(m_preset="fact", m_draft="lookup", m_k="1", m_new="2").items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.dataframe  # nothing runs before the button
    assert not at.code and any("sv-prompt" in h.proto.body for h in at.html)
    at.button(key="m_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # the button, after its run: greyed and saying so (it stayed the red "Measure" one)
    assert not [b for b in at.button if b.key == "m_go"]
    done = at.button(key="m_done")
    assert done.disabled and done.label.startswith("Measured") and done.proto.type != "primary"
    assert not [c for t in at.dataframe for c in t.value.astype(str).values.ravel()
                if c == "None"]  # a draft with no pass of its own has no c: a dash
    assert any("lookup, greedy:" in x.value for x in [*at.warning, *at.success])
    assert any("Greedy with speculation" in m.value or "first differ" in m.value
               for m in at.markdown)
    at.button(key="m_rows").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(x.value.startswith("no\\_resample") and "caught" in x.value
               for x in at.error)  # flagged, in red
    assert any(x.value.startswith("correct") and "consistent" in x.value for x in at.success)
    label = next(iter(measuredhere.sources()))
    plan = app_test(ROOT / "pages" / "10_plan.py", timeout=120)
    plan.query_params["plan_here"] = label
    plan.run()
    assert not plan.exception
    assert any("measured here on this machine" in i.value for i in plan.info)
