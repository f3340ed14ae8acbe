"""Model configs, the roofline's new counts, KV capacity and the planner, against hand counts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specviz.analysis import modelcfg, planner, plantables
from specviz.analysis.acceptance import analyse
from specviz.analysis.drafting import model_draft
from specviz.analysis.modelcfg import PRESETS
from specviz.analysis.record import from_histogram
from specviz.analysis.roofline import ACCELERATORS, pass_cost, pass_times
from specviz.analysis.shape import ModelShape
from specviz.views.plan import PlanSettings, accelerator, example_text, plan_page

H100 = ACCELERATORS["H100 SXM"]


def test_llama2_7b_figures_unchanged():
    s = PRESETS["Llama-2-7B"]
    held = pass_cost(s, context_len=512, count="tutorial").weight_bytes
    assert held == pytest.approx(13.48e9, rel=1e-3)
    # a decode step gathers one row of the untied embedding: 31,999 rows of 4096 fp16 unread
    assert held - pass_cost(s, context_len=512).weight_bytes == 31_999 * 4096 * 2
    assert pass_cost(s, context_len=512, count="tutorial").macs == pytest.approx(5.167e9, rel=1e-3)
    assert pass_cost(s, context_len=512).macs == pytest.approx(6.741e9, rel=1e-3)


def test_gqa_by_hand():
    cfg = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8,
           "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 100,
           "vocab_size": 1000, "tie_word_embeddings": True}
    s = modelcfg.shape_from_config(cfg)
    d, dkv = 64, 2 * 8
    per_layer = 2 * d * (d + dkv) + 3 * d * 100 + 2 * d  # attention, SwiGLU, two norms
    assert s.params == 2 * per_layer + 1000 * d + d  # tied: the embedding once
    untied = modelcfg.shape_from_config({**cfg, "tie_word_embeddings": False})
    assert untied.params == s.params + 1000 * d
    assert s.kv_bytes_per_token("bf16") == 2 * 2 * dkv * 2  # K and V, 2 layers, 2 bytes
    assert s.macs_per_token(10) == 2 * (2 * d * (d + dkv) + 3 * d * 100 + 2 * 10 * d) + 1000 * d


def test_moe_by_hand():
    cfg = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
           "num_key_value_heads": 4, "intermediate_size": 50, "vocab_size": 100,
           "num_local_experts": 4, "num_experts_per_tok": 2}
    s = modelcfg.shape_from_config(cfg)
    attn, expert = 2 * 32 * (32 + 32), 3 * 32 * 50
    assert s.params == attn + 4 * expert + 32 * 4 + 2 * 32 + 2 * 100 * 32 + 32
    assert s.experts_touched(1) == pytest.approx(2)  # one token: its top-2
    assert s.experts_touched(2) == pytest.approx(4 * (1 - 0.5**2))  # 3 expected of 4
    fixed = s.params - 4 * expert
    unread = (100 - 2) * 32  # untied: two tokens gather 2 of the 100 embedding rows
    assert s.weight_bytes(2, "bf16") == pytest.approx(2 * (fixed + 3 * expert - unread))
    assert s.weight_bytes(10**6, "bf16") == pytest.approx(2 * s.params)
    assert s.macs_per_token(0) == attn + 2 * expert + 32 * 4 + 100 * 32


def test_presets_match_published_sizes():
    want = {"Llama-3.1-8B": 8.03e9, "Llama-3.1-70B": 70.6e9, "Llama-3.2-1B": 1.24e9,
            "Mixtral-8x7B": 46.7e9, "Qwen3-30B-A3B": 30.5e9, "Qwen3-32B": 32.8e9}
    for name, n in want.items():
        s = modelcfg.preset(name)
        assert s.params == pytest.approx(n, rel=0.01), name
        assert s.source


@pytest.mark.parametrize(("change", "message"), [
    ({"hidden_size": None}, "no 'hidden_size'"), ({"num_hidden_layers": 0}, "plausible"),
    ({"vocab_size": 10**9}, "plausible"), ({"num_key_value_heads": 3}, "must divide"),
    ({"tie_word_embeddings": "yes"}, "true or false")])
def test_bad_configs_name_the_field(change, message):
    cfg = json.loads(modelcfg.preset_text("Llama-3.1-8B"))
    cfg.update(change)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    with pytest.raises(modelcfg.ConfigError, match=message):
        modelcfg.parse_config(json.dumps(cfg))


def test_kv_capacity_by_hand():
    t, d = modelcfg.preset("Llama-3.1-8B"), modelcfg.preset("Llama-3.2-1B")
    s = planner.Setup(t, model_draft(d), H100, 4096)
    cap = planner.capacity(s)
    usable = 81_559 * 2**20 * 0.9 - 2**30  # as the card reports it, 90 %, less 1 GiB reserve
    kv_t = 2 * 32 * 4096 * (8 * 128) * 2  # K and V x layers x ctx x kv_dim x bf16
    kv_d = 2 * 16 * 4096 * (8 * 64) * 2
    assert cap.batch_target_only == int((usable - t.params * 2) // kv_t)
    assert cap.batch_with_draft == int((usable - t.params * 2 - d.params * 2) // (kv_t + kv_d))


def report(cond=(0.8, 0.75, 0.7, 0.66), n=100_000):
    a, alive = [], n
    for c in cond:
        alive = round(alive * c)
        a.append(alive)
    h = [n - a[0]] + [a[i] - a[i + 1] for i in range(len(a) - 1)] + [a[-1]]
    return analyse(from_histogram(h, source="test"))


def test_plan_laws():
    t, d = modelcfg.preset("Llama-3.1-8B"), modelcfg.preset("Llama-3.2-1B")
    p = planner.plan(planner.Setup(t, model_draft(d), H100, 64), report(), k_max=8)
    j = 0  # batch 1: hand check of one cell against pass_cost
    t1 = pass_times(t, H100, 1, 1, context_len=64)
    td = pass_times(d, H100, 1, 1, context_len=64)
    t4 = pass_times(t, H100, 4, 1, context_len=64)
    e3 = 1 + 0.8 + 0.6 + 0.42
    assert p.speedup[2, j] == pytest.approx(e3 / (3 * td + t4) * t1)
    assert p.cost[j] == pytest.approx(td / t1)
    assert p.break_even_alpha[0] == pytest.approx(p.cost[0], rel=1e-3)  # Cor 3.9, k = 1
    assert p.loses_from is not None  # short context: large batches turn compute-bound
    assert (p.best_speedup[: p.loses_from - 1] >= 1).all()
    assert p.best_speedup[p.loses_from - 1] < 1
    v = plantables.verdict(p)
    assert f"above {p.loses_from - 1} turn speculation off" in v
    # a perfect draft never breaks even later than a bad one
    bad = planner.plan(planner.Setup(t, model_draft(d), H100, 64), report((0.3,) * 4), k_max=8)
    assert bad.loses_from is not None and bad.loses_from <= p.loses_from


def test_does_not_fit_says_what_does():
    t, d = modelcfg.preset("Llama-3.1-70B"), modelcfg.preset("Llama-3.2-1B")
    with pytest.raises(planner.PlanError, match="fits with fp8"):
        planner.plan(planner.Setup(t, model_draft(d), H100, 4096), report())
    page = plan_page(PlanSettings(metrics_text=example_text("vllm_metrics.prom"), gpu="H100",
                                  batch=4000))
    assert "does not fit" in page.batch_note and "at most" in page.batch_note


def test_gpu_aliases_and_edits():
    assert accelerator("H100").name == "H100 SXM"
    a = accelerator("H100", mem_gb=40)
    assert a.memory_bytes == 40e9 and a.bandwidth_bytes_per_s == H100.bandwidth_bytes_per_s
    with pytest.raises(ValueError, match="unknown accelerator"):
        accelerator("Z9")
    for acc in ACCELERATORS.values():
        assert acc.memory_bytes > 0 and acc.source


def test_tables_are_json():
    t, d = modelcfg.preset("Qwen3-30B-A3B"), modelcfg.preset("Qwen3-0.6B")
    setup = planner.Setup(t, model_draft(d), ACCELERATORS["H200 SXM"], 2048)
    p = planner.plan(setup, report(), k_max=6)
    doc = json.loads(json.dumps(plantables.to_json(p)))
    assert len(doc["by_batch"]) == len(p.batches) and doc["verdict"]
    assert isinstance(ModelShape, type) and np.isfinite(p.plain_user).all()
