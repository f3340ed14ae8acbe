"""The measured-here pieces that need no model: the greedy comparison on synthetic logits
(a disagreement forced), the lossless lumping of real-sized rows, /plan and the CLI taking
measurements as a source."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

from specviz import cli
from specviz.llm.lossless import Top2, compare, top2
from specviz.views import measured as mv
from specviz.views import plan as pv
from specviz.views import realrows as rr


def _tok(n):
    return SimpleNamespace(tokenizer=SimpleNamespace(pieces=[f"t{i}" for i in range(n)]))


def test_top2_takes_the_two_largest_and_their_margin():
    z = np.array([0.5, 3.0, 2.75, -1.0], dtype=np.float32)
    t = top2(z, 5)
    assert t.ids == (1, 2) and t.logits == (3.0, 2.75) and t.margin == 0.25 and t.positions == 5


def test_a_forced_disagreement_shows_both_passes_margins():
    # two decodes agree on token 1, then the one-position pass has 7 over 8 by 2e-6 and the
    # verification pass has 8 over 7 by 1e-6: the argmax flips on a rounding-sized margin
    plain_rows = [Top2((3, 4), (10.0, 9.0), 1), Top2((7, 8), (5.000002, 5.0), 1)]
    spec_rows = [Top2((3, 4), (10.000004, 9.0), 5), Top2((8, 7), (5.000001, 5.0), 5)]
    ag = compare([3, 7, 9], [3, 8, 2], plain_rows, spec_rows)
    assert ag.agree == (True, False, False) and ag.first == 1
    assert ag.one_pass.ids == (7, 8) and ag.verify_pass.ids == (8, 7)
    assert ag.one_pass.margin == pytest.approx(2e-6, rel=1e-3)
    assert ag.largest_shift == pytest.approx(4e-6, rel=1e-3)  # token 1: both read 3 on top
    d = mv.DraftMeasure("early-exit:6", {}, ag)
    text = mv.agreement_text(_tok(10), d, 4)
    assert "first differ at token 2" in text and "'t7'" in text and "'t8'" in text
    assert "margin 2.00e-06" in text and "margin 1.00e-06" in text
    assert "5 positions" in text and "1 position)" in text
    rows = mv.agreement_rows(_tok(10), d)
    assert [r["agree"] for r in rows] == [True, False, False]


def test_agreement_throughout_names_the_closest_call():
    rows = [Top2((1, 2), (4.0, 3.0), 1), Top2((2, 1), (4.0, 3.9), 1)]
    ag = compare([1, 2], [1, 2], rows, rows)
    assert ag.first is None and ag.smallest == (1, pytest.approx(0.1))
    text = mv.agreement_text(_tok(3), mv.DraftMeasure("lookup", {}, ag), 2)
    assert "agree on all 2 tokens" in text and "token 2" in text and "1.00e-01" in text


def test_lumping_by_the_sign_of_p_minus_q_keeps_what_the_rule_reads():
    rng = np.random.default_rng(0)
    V = 262_144
    p, q = rng.dirichlet(np.full(V, 0.05)), rng.dirichlet(np.full(V, 0.05))
    pl, ql, members = rr.lump(p, q, top=30)
    assert len(pl) == 32 and sum(len(m) for m in members) == V
    assert np.array_equal(np.sort(np.concatenate(members)), np.arange(V))
    # oracle from the rule's description: kept mass sum min(p, q); on a rejection the
    # residual max(0, p - q), normalised; the first token's law min(p, q) + residual mass
    keep_full = np.minimum(p, q).sum()
    assert np.minimum(pl, ql).sum() == pytest.approx(keep_full, abs=1e-12)
    res = np.maximum(p - q, 0)
    first = np.minimum(p, q) + res  # = p
    for j, m in enumerate(members):
        assert max(pl[j] - ql[j], 0) == pytest.approx(res[m].sum(), abs=1e-12)
        assert pl[j] == pytest.approx(first[m].sum(), abs=1e-12)
    # a lump that mixed signs would not keep it: the control
    mixed = np.minimum(p[members[-2]].sum() + p[members[-1]].sum(),
                       q[members[-2]].sum() + q[members[-1]].sum())
    assert mixed > np.minimum(pl[-2], ql[-2]) + np.minimum(pl[-1], ql[-1]) + 1e-3


HERE = dict(label="early-exit:6", mode="greedy", k=3, rounds=40, accepted_at=[20, 10, 4],
            t1=0.05, tk1=0.15, draft_s=0.02, c=0.4)


def test_plan_takes_the_measured_here_source():
    here = mv.here(**HERE)
    page = pv.plan_page(pv.PlanSettings(metrics_text="not metrics at all",
                                        target_preset="Qwen3-0.6B", draft_preset="Qwen3-0.6B",
                                        gpu="H100"), here=here)
    assert not page.errors, page.errors
    assert page.report.k == 3 and page.report.record.rounds == 40
    assert page.report.record.accepted_at.tolist() == [20, 10, 4]
    assert any("measured here on this machine" in n for n in page.notes)
    m = {r["quantity"]: r for r in page.tables["measured"]}
    assert m["target pass, 1 token (ms)"]["measured"] == pytest.approx(50.0)
    assert m["verify pass (ms)"]["measured"] == pytest.approx(150.0)
    assert m["draft step (ms)"]["measured"] == pytest.approx(20.0)
    # speedup = E_3 t1 / (3 t_draft + t_verify), E_3 = 1 + (20 + 10 + 4) / 40
    e = 1 + 34 / 40
    assert m["speedup at batch 1"]["measured"] == pytest.approx(e * 0.05 / (3 * 0.02 + 0.15))
    without = pv.plan_page(pv.PlanSettings(metrics_text="not metrics at all", gpu="H100"))
    assert without.errors  # the control: the same metrics text alone is refused


def test_plan_cli_reads_llm_json(tmp_path, capsys):
    doc = {"draft": "early-exit:6", "summary": {
        "k": 3, "rounds": 40, "accepted_at": [20, 10, 4], "target_1_s": 0.05,
        "target_k1_s": 0.15, "draft_s": 0.02, "c": 0.4}}
    f = tmp_path / "m.json"
    f.write_text(json.dumps(doc))
    assert cli.main(["plan", "--measured-here", str(f), "--target-config", "Qwen3-0.6B",
                     "--draft-config", "Qwen3-0.6B"]) == 0
    out = capsys.readouterr().out
    assert "measured here on this machine" in out
    assert re.search(r"target pass, 1 token \(ms\)\s+\S+\s+50\s+measured", out), out
    f.write_text(json.dumps({"draft": "x"}))
    assert cli.main(["plan", "--measured-here", str(f)]) == 2
    assert "not the output of python -m specviz llm --json" in capsys.readouterr().err


def _why(label, mode, **kw) -> str:
    """mv.why of one run with these figures (the rest filled in)."""
    from specviz.llm.decode import Summary

    base = dict(k=4, rounds=10, tokens=30, target_1_s=0.1, target_k1_s=0.3, verify_rows=5.0,
                drafted_per_round=4.0, draft_s=0.08, c=0.8, tokens_per_call=1.2,
                accepted_at=(2, 0, 0, 0), drafted_at=(10,) * 4, spec_tps=1.5, plain_tps=10.0)
    run = Summary(**(base | kw))
    return mv.why(mv.figures(mv.DraftMeasure(label, {mode: (run,)}), mode))


def test_why_names_the_culprit():
    text = _why("early-exit:6", "sampled")
    assert "4 x 0.800 + 3.00 = 6.20" in text and "too dear" in text
    assert "only 0.81x" in text  # (k + 1) / cost: no acceptance can make it pay
    s2 = dict(c=0.01, draft_s=0.001, target_k1_s=0.4, tokens_per_call=2.0, spec_tps=4.5)
    assert "verification is not free" in _why("lookup", "greedy", **s2)
    tree = dict(drafted_per_round=21.0, verify_rows=20.0, spec_tps=0.5)
    assert "21 x 0.800 + 3.00 = 19.80" in _why("early-exit:6", "sampled", **tree)
    assert "20 positions cost 4.00 one-position passes" in _why(
        "x", "greedy", **(s2 | tree | {"spec_tps": 4.5}))


def test_summary_counts_the_rounds_it_was_given():
    """Per position i, the rounds whose draft i was kept and the rounds that drafted it;
    tokens per call = tokens the rounds emitted / rounds. Rounds played on the toy tables
    stand in for the real model's (the same RoundTrace)."""
    from specviz.core.pair import TablePair
    from specviz.core.round import play_round
    from specviz.core.scenario import Scenario
    from specviz.core.tables import default_tables
    from specviz.llm.decode import Run, Tally, summarise

    t, k, rng = default_tables(), 3, np.random.default_rng(5)
    pair = TablePair(t.P, t.Q)
    rounds = tuple(play_round(Scenario.on(pair, [0, i % 6], k=k), rng=rng) for i in range(300))
    kept = [sum(1 for tr in rounds if i < len(tr.positions) and all(
        p.accepted for p in tr.positions[:i + 1])) for i in range(k)]
    run = Run((1,) * 40, 2.0, ((1, 1, 0.1), (k + 1, k + 1, 0.2)), ((1, 1, 0.01),), rounds,
              tuple(Tally.of(tr) for tr in rounds), made=40)
    s = summarise(run, run, k=k)
    assert s.accepted_at == tuple(kept) and 0 < kept[-1] < kept[0] < len(rounds)
    assert s.drafted_at == (len(rounds),) * k and s.rounds == len(rounds)
    assert s.tokens_per_call == sum(len(e.emitted) for e in rounds) / len(rounds)
