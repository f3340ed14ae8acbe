"""/plan under AppTest: the shipped example, pasted text, bad input, the URL."""

from __future__ import annotations

import re
from pathlib import Path

from support import run_page

from specviz.web import urlcodec

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "10_plan.py")
FX = Path(__file__).resolve().parents[1] / "fixtures" / "plan"


def test_default_example_gives_a_verdict():
    at = run_page(PAGE, timeout=60)
    assert at.success and "use k = 3" in at.success[0].value
    assert not at.error


def test_pasted_metrics_from_the_url_and_bad_paste():
    text = (FX / "vllm_iid.prom").read_text()
    at = run_page(PAGE, timeout=60, plan_metrics=urlcodec.encode_blob(text), plan_gpu="H200 SXM")
    assert "use k =" in at.success[0].value  # the decision first, the reasons as a list
    assert any("100,000 rounds of k = 5" in m.value for m in at.markdown)
    bad = run_page(PAGE, timeout=60,
                   plan_metrics=urlcodec.encode_blob((FX / "vllm_decreasing.prom").read_text()))
    assert any("decreased between scrapes" in e.value for e in bad.error)
    assert not bad.success


def test_config_too_big_for_memory_and_bad_url():
    at = run_page(PAGE, timeout=60, plan_target="Llama-3.1-70B", plan_ctx="zzz")
    assert any("fits with fp8" in e.value for e in at.error)
    assert any("plan_ctx" in w.value for w in at.warning)


def test_edits_reach_the_url():
    at = run_page(PAGE, timeout=60)
    at.selectbox(key="w_plan_gpu").set_value("B200").run()
    assert at.query_params["plan_gpu"] == ["B200"] or at.query_params["plan_gpu"] == "B200"
    assert "B200" in at.success[0].value


def test_pasted_text_cannot_inject_markdown():
    """A label or name from a paste that reaches a message is shown as text: no image or
    link syntax survives into the rendered Markdown."""
    hostile = "![x](//evil.example/i) 1\n"  # the parser's error quotes the line
    at = run_page(PAGE, timeout=60, plan_metrics=urlcodec.url_blob(hostile, "metrics paste")[0])
    shown = [m.value for m in (*at.error, *at.info, *at.warning, *at.success)]
    assert shown, "the bad paste gets a message"
    for text in shown:
        assert "evil.example" in text or "not Prometheus" not in text
        assert not re.search(r"(?<!\\)\]\(", text), text  # "](" only escaped, as "\\]("


def test_heads_trees_ngram_and_measured_costs_from_the_url():
    tree = run_page(PAGE, timeout=60, plan_dkind="eagle", plan_topk="4", plan_steps="3",
                    plan_dtokens="16")
    assert not tree.exception and not tree.error
    assert any("priced as that tree" in i.value for i in tree.info)
    assert "EAGLE head (1 layer" in tree.success[0].value
    assert any("the LM head is the target's" in m.value for m in tree.markdown)
    ngram = run_page(PAGE, timeout=60, plan_dkind="ngram", plan_m_target_ms="20",
                     plan_m_c="0.01")
    assert not ngram.exception and "n-gram" in ngram.success[0].value
    assert len(ngram.dataframe) >= 1  # the measured-beside-roofline table
    bad = run_page(PAGE, timeout=60, plan_dkind="eagle", plan_topk="2", plan_steps="2",
                   plan_dtokens="500", plan_hlayers="1e9", plan_lookup_ms="nan")
    assert not bad.exception
    assert any("exceed" in e.value for e in bad.error)
    assert any("plan_hlayers" in w.value for w in bad.warning)
