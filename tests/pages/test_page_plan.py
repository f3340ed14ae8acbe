"""/plan under AppTest: the shipped example, pasted text, bad input, the URL."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from support import bound_undeclared, run_page

from specviz.web import urlcodec

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "10_plan.py")
FX = Path(__file__).resolve().parents[1] / "fixtures" / "plan"
EX = Path(__file__).resolve().parents[2] / "specviz" / "analysis" / "examples"


def test_default_example_gives_a_verdict():
    at = run_page(PAGE, timeout=60)
    assert at.success and "use k = 3" in at.success[0].value
    assert not at.error
    assert not bound_undeclared(at, "plan")  # every field it draws is declared for /plan


def test_pasted_metrics_from_the_url_and_bad_paste():
    text = (FX / "vllm_iid.prom").read_text()
    at = run_page(PAGE, timeout=60, plan_metrics=urlcodec.encode_blob(text), plan_gpu="H200 SXM")
    assert "use k =" in at.success[0].value  # the decision first, the reasons as a list
    assert any("100,000 rounds of k = 5" in m.value for m in at.markdown)
    bad = run_page(PAGE, timeout=60,
                   plan_metrics=urlcodec.encode_blob((FX / "vllm_decreasing.prom").read_text()))
    assert any("decreased between scrapes" in e.value for e in bad.error)
    assert not bad.success


def test_sglang_gauges_pasted_show_an_average_without_interval():
    text = (FX / "sglang_gauges.prom").read_text()
    at = run_page(PAGE, timeout=60, plan_metrics=urlcodec.encode_blob(text))
    assert not at.error and "use k =" in at.success[0].value
    assert any("An average from SGLang /metrics gauges" in m.value for m in at.markdown)
    assert any("last log interval" in i.value for i in at.info)
    assert [m.delta for m in at.metric][0] == "no interval: an average"


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


HOSTILE = {  # URL parameter: (pasted text, the field's own message on the page)
    "plan_metrics": [
        ("vllm:spec_decode_num_drafts_total +Inf\n", "num_drafts must be a whole number"),
        ('vllm:spec_decode_num_accepted_tokens_per_pos_total{position="60000000"} 1\n',
         "position '60000000'"),
        ("[" * 1000 + "]" * 1000, "nested too deeply"),
        ('{"acceptance_histogram": [1e300, 1]}', "histogram count must be a whole number"),
        ("draft acceptance = 0.5 (1 accepted / 2 generated)\n#gen drafts = 0\n",
         "#gen drafts = 0"),
        ("draft acceptance = " + "1" * 20_000 + "x accepted", "the cap is 4,096"),
    ],
    "plan_target_cfg": [
        ('{"hidden_size": Infinity}', "'hidden_size' must be a whole number; got inf"),
        ('{"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, '
         '"vocab_size": 128256, "intermediate_size": 14336, "num_local_experts": 8, '
         '"num_experts_per_tok": 2, "n_shared_experts": [1]}', "'n_shared_experts' must be"),
    ],
}
CASES = [(key, text, msg) for key, cases in HOSTILE.items() for text, msg in cases]


@pytest.mark.parametrize(("key", "text", "message"), CASES, ids=[c[2][:24] for c in CASES])
def test_hostile_pastes_get_the_message_and_the_page_goes_on(key, text, message):
    """No exception: the field's message in an error box, the rest of the page drawn."""
    at = run_page(PAGE, timeout=60, **{key: urlcodec.url_blob(text, "paste")[0]})
    errors = [e.value for e in at.error]
    assert any(message.replace("\\", "") in e.replace("\\", "") for e in errors), errors
    assert not any("OverflowError" in e or "RecursionError" in e for e in errors)
    assert at.selectbox(key="w_plan_gpu").value  # the widgets after the paste were drawn
    if key == "plan_target_cfg":  # the measurements were still read
        assert any(m.label == "alpha (95% CI)" for m in at.metric)


def test_the_parse_runs_in_a_heavy_worker(monkeypatch):
    """/plan's parse holds one of guard's HEAVY_WORKERS slots (and so its wait and stop)."""
    from contextlib import contextmanager

    from specviz.web import guard

    held = []

    @contextmanager
    def recording():
        held.append(True)
        yield

    monkeypatch.setattr(guard, "worker", recording)
    text = (FX / "vllm_iid.prom").read_text() + f"# {uuid.uuid4()}\n"  # not in the cache
    at = run_page(PAGE, timeout=60, plan_metrics=urlcodec.encode_blob(text))
    assert at.success and held


def test_a_scrape_of_two_models_offers_a_choice():
    """Before, the page said 'choose one' with no way to: now a model box lists them."""
    text = (FX / "vllm_two_models.prom").read_text()
    at = run_page(PAGE, timeout=60, plan_metrics=urlcodec.encode_blob(text))
    box = at.selectbox(key="w_plan_model")
    assert list(box.options) == ["a", "b"] and not at.error
    assert any("holds 2 models (a, b): shown is a" in i.value for i in at.info)
    first = at.metric[0].value
    box.set_value("b").run()
    assert not at.exception and not at.error
    assert at.metric[0].value != first  # alpha of model b
    assert at.query_params["plan_model"] in ("b", ["b"])


def test_an_earlier_scrape_is_differenced():
    """Two scrapes as two pastes: later minus earlier (120,000 rounds), not the later alone
    (170,000)."""
    text = (EX / "vllm_metrics.prom").read_text()
    earlier, later = text.split("\n\n", 1)
    at = run_page(PAGE, timeout=60, plan_metrics=urlcodec.encode_blob(later),
                  plan_before=urlcodec.encode_blob(earlier))
    assert any("2 scrapes differenced" in i.value for i in at.info)
    assert any("120,000 rounds" in m.value for m in at.markdown)  # the verdict's reasons
    bad = run_page(PAGE, timeout=60, plan_metrics=urlcodec.encode_blob(later),
                   plan_before=urlcodec.encode_blob('{"a": 1}'))
    assert any("not Prometheus text" in e.value for e in bad.error)


def test_tensor_parallelism_from_the_url_and_the_same_verdict_as_the_cli():
    """70B at TP 4 on 4 x H100: the page's decision is the CLI's with the same settings (the
    defaults are one declaration), and says where each model runs."""
    import io

    from specviz.cli import main

    at = run_page(PAGE, timeout=60, plan_target="Llama-3.1-70B", plan_tp="4",
                  plan_devices="4")
    assert not at.error and "on 4 x H100 SXM (tensor parallelism 4)" in at.success[0].value
    shown = " ".join(m.value for m in at.markdown)
    assert "all-reduces" in shown and "on the first device" in shown
    assert "Fixed costs assumed" in shown and "CUDA.jl" in shown
    captions = [c.value.replace("\\", "") for c in at.caption]  # Markdown's escapes off
    assert any("Interconnect source: NVLink 4" in c and "SGLang PR #2904" in c
               for c in captions)
    out = io.StringIO()
    assert main(["plan", "--target-config", "Llama-3.1-70B", "--tp", "4", "--devices", "4"],
                out=out) == 0
    assert at.success[0].value.replace("\\", "") in out.getvalue()


@pytest.mark.parametrize(("params", "message"), [
    ({"plan_target": "Llama-3.1-70B", "plan_tp": "3", "plan_devices": "4"},
     "tensor parallelism 3 does not divide its 64 attention heads"),
    ({"plan_tp": "8", "plan_devices": "4"}, "tensor parallelism 8 needs 8 devices"),
    ({"plan_tp": "2", "plan_link": "ICI"}, "H100 SXM has no interconnect 'ICI'"),
])
def test_a_split_that_cannot_run_is_its_own_message(params, message):
    at = run_page(PAGE, timeout=60, **params)
    assert any(message in e.value.replace("\\", "") for e in at.error), [e.value for e in
                                                                           at.error]
    assert not at.success


def test_execution_mode_and_costs_from_the_url():
    at = run_page(PAGE, timeout=60, plan_exec="eager", plan_layer_us="100")
    shown = " ".join(m.value for m in at.markdown)
    assert not at.error and "layer 100 us" in shown and "eager PyTorch" in shown
    plain = run_page(PAGE, timeout=60, plan_exec="none")
    assert "No fixed cost a pass" in " ".join(m.value for m in plain.markdown)
    assert at.selectbox(key="w_plan_exec").value == "eager"


@pytest.mark.slow
@pytest.mark.parametrize("box", ["plan_metrics", "plan_before", "plan_target_cfg",
                                 "plan_draft_cfg"])
def test_a_paste_over_the_cap_that_compresses_well_gets_a_message_not_a_crash(box):
    """"a" * 2,000,001 compresses to a short blob, which the link took; the next run read
    it back past what a blob may expand to and raised, on every rerun (issue 40 item 5)."""
    at = run_page(PAGE, timeout=60)
    at.text_area(key=f"w_{box}").set_value("a" * 2_000_001).run(timeout=120)
    for _ in range(2):  # the run it was pasted in, and the next
        assert not at.exception, at.exception[0].value if at.exception else ""
        assert any("2,000,001 characters" in e.value for e in at.error)
        assert not at.query_params.get(box)  # it stays out of the link
        at.run(timeout=120)


def test_a_text_longer_than_a_blob_expands_to_stays_out_of_the_link():
    text = "a" * (urlcodec.BLOB_TEXT_MAX_CHARS + 1)
    blob, note = urlcodec.url_blob(text, "metrics paste")
    assert blob == "" and "too long for a link" in note and "2,000,001 characters" in note
    ok = "a" * urlcodec.BLOB_TEXT_MAX_CHARS
    assert urlcodec.decode_blob(urlcodec.url_blob(ok, "metrics paste")[0]) == ok


def test_medusa_heads_from_the_url_and_the_same_verdict_as_the_cli():
    """Medusa's heads on /plan: its own tree by default (the note says what is priced), the
    same decision as the CLI's; a tree from the URL's steps and tokens."""
    import io

    from specviz.cli import main

    at = run_page(PAGE, timeout=60, plan_dkind="medusa")
    assert not at.exception and not at.error
    assert "Medusa heads (4 at d 4,096) (bf16) drafting" in at.success[0].value
    assert any("Medusa's 4 heads (Cai et al. 2024) run once a round" in i.value for i in at.info)
    out = io.StringIO()
    assert main(["plan", "--draft-kind", "medusa"], out=out) == 0
    assert at.success[0].value.replace("\\", "") in out.getvalue()
    three = run_page(PAGE, timeout=60, plan_dkind="medusa", plan_steps="3", plan_dtokens="32")
    assert "Medusa heads (3 at d 4,096)" in three.success[0].value
    assert any("fixed tree of 31 candidates" in i.value for i in three.info)
