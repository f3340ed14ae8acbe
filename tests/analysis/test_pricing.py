"""The planner's pricing held against published parameter counts and against per-pass figures
computed here from the configs' numbers alone (not with the planner's functions)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specviz.analysis import modelcfg, planner, plantables
from specviz.analysis.acceptance import analyse
from specviz.analysis.drafting import model_draft
from specviz.analysis.record import from_histogram
from specviz.analysis.roofline import ACCELERATORS, pass_times

DEEPSEEK_V3 = {  # deepseek-ai/DeepSeek-V3 config.json (without the MTP module)
    "model_type": "deepseek_v3", "vocab_size": 129280, "hidden_size": 7168,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
    "num_attention_heads": 128, "num_key_value_heads": 128, "n_shared_experts": 1,
    "n_routed_experts": 256, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
    "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "tie_word_embeddings": False}
QWEN25_7B = {"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28,
             "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944,
             "vocab_size": 152064, "tie_word_embeddings": False}
QWEN25_05B = {"model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24,
              "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
              "vocab_size": 151936, "tie_word_embeddings": True}
GEMMA3_270M = {"model_type": "gemma3_text", "hidden_size": 640, "num_hidden_layers": 18,
               "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
               "intermediate_size": 2048, "vocab_size": 262144, "tie_word_embeddings": True}


@pytest.mark.parametrize(("cfg", "published"), [
    (QWEN25_7B, 7_615_616_512),  # Qwen2.5-7B's safetensors total (q, k, v biases)
    (QWEN25_05B, 494_032_768),  # Qwen2.5-0.5B, tied
    (GEMMA3_270M, 268_098_176),  # Gemma 3 270M: q/k norms, four norms a layer, tied
])
def test_exact_published_counts(cfg, published):
    assert modelcfg.shape_from_config(cfg).params == published


def test_qwen2_biases_and_qwen3_norms_by_hand():
    llama = modelcfg.shape_from_config({**QWEN25_7B, "model_type": "llama"})
    qwen2 = modelcfg.shape_from_config(QWEN25_7B)
    q_dim, kv_dim = 28 * 128, 4 * 128
    assert qwen2.params - llama.params == 28 * (q_dim + 2 * kv_dim)
    qwen3 = modelcfg.shape_from_config({**QWEN25_7B, "model_type": "qwen3"})
    assert qwen3.params - llama.params == 28 * 2 * 128  # q and k norms of one head's width


def test_mla_deepseek_v3():
    s = modelcfg.shape_from_config(DEEPSEEK_V3)
    assert s.mla and s.dense_layers == 3
    assert s.params == pytest.approx(671e9, rel=0.001)  # DeepSeek-V3 report: 671 B total
    assert s.active_params == pytest.approx(37e9, rel=0.02)  # and 37 B activated per token
    # one 512-wide latent and one 64-wide RoPE key per layer and token, bf16
    assert s.kv_bytes_per_token("bf16") == 61 * (512 + 64) * 2
    gqa = modelcfg.shape_from_config({k: v for k, v in DEEPSEEK_V3.items()
                                      if k != "kv_lora_rank"})
    assert gqa.kv_bytes_per_token("bf16") > 10 * s.kv_bytes_per_token("bf16")


def test_mla_needs_its_widths():
    with pytest.raises(modelcfg.ConfigError, match="qk_rope_head_dim"):
        modelcfg.shape_from_config({**DEEPSEEK_V3, "qk_rope_head_dim": 0})


def _report():
    return analyse(from_histogram([20_000, 20_000, 20_000, 20_000, 20_000], source="test"))


def test_pass_time_against_a_hand_computation():
    """Llama-3.1-8B on an H100 at batch 1, context 4096, bf16: memory-bound, so a pass takes
    (weights read + KV read) / bandwidth, every number from the config and the datasheet."""
    cfg = json.loads(modelcfg.preset_text("Llama-3.1-8B"))
    d, L, v, ffn = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], \
        cfg["intermediate_size"]
    kv_dim = cfg["num_key_value_heads"] * d // cfg["num_attention_heads"]
    params = L * (2 * d * d + 2 * d * kv_dim + 3 * d * ffn + 2 * d) + 2 * v * d + d
    assert params == modelcfg.preset("Llama-3.1-8B").params
    for tokens in (1, 5):
        read = (params - (v - tokens) * d) * 2  # the embedding gathers `tokens` rows
        kv = 2 * L * kv_dim * 2 * 4096
        want = (read + kv) / 3.35e12
        got = pass_times(modelcfg.preset("Llama-3.1-8B"), ACCELERATORS["H100 SXM"], tokens, 1,
                         context_len=4096, dtype="bf16")
        assert float(got) == pytest.approx(want, rel=1e-12)


def test_capacity_in_gib_with_the_reserve():
    t, d = modelcfg.preset("Llama-3.1-8B"), modelcfg.preset("Llama-3.2-1B")
    h100 = ACCELERATORS["H100 SXM"]
    assert h100.memory_bytes == 81_559 * 2**20  # nvidia-smi's memory.total
    none = planner.capacity(planner.Setup(t, model_draft(d), h100, 4096, reserve_bytes=0))
    more = planner.capacity(planner.Setup(t, model_draft(d), h100, 4096, reserve_bytes=4 * 2**30))
    kv = t.kv_bytes_per_token("bf16") * 4096
    assert none.batch_target_only == int((81_559 * 2**20 * 0.9 - t.params * 2) // kv)
    assert more.batch_target_only == int((81_559 * 2**20 * 0.9 - 4 * 2**30 - t.params * 2)
                                         // kv)


def test_models_as_read_in_the_plan():
    t = modelcfg.shape_from_config(DEEPSEEK_V3, name="DeepSeek-V3", source="a test config")
    d = modelcfg.shape_from_config(QWEN25_05B, name="small")
    h200x8 = ACCELERATORS["H200 SXM"]
    from dataclasses import replace
    big = replace(h200x8, memory_bytes=8 * h200x8.memory_bytes)
    setup = planner.Setup(t, model_draft(d), big, 1024, "fp8", "bf16", "bf16")
    p = planner.plan(setup, _report(), k_max=2)
    rows = plantables.model_rows(p)
    assert [r["role"] for r in rows] == ["target", "draft (a draft model)"]
    assert rows[0]["attention"] == "MLA" and rows[0]["source"] == "a test config"
    assert rows[0]["weight_gib"] == pytest.approx(t.params / 2**30)  # fp8: a byte each
    assert rows[0]["kv_kib_per_token"] == pytest.approx(61 * 576 * 2 / 1024)
    line = plantables.model_line(rows[0])
    assert "671.026 B parameters" in line and "B active per token" in line and "MLA" in line
    assert np.isfinite(p.speedup[:, 0]).all()


@pytest.mark.parametrize(("dtype", "tflops"), [("fp8", 1979), ("int8", 1979), ("bf16", 989),
                                               ("int4", 989)])
def test_fp8_and_int8_weights_compute_at_the_fp8_peak(dtype, tflops):
    """At batch 1,024 and context 64 a one-token pass of Llama-3.1-8B is compute-bound on an
    H100: its time is the MACs over the datasheet's dense peak (FLOP/s / 2), fp8 for fp8 and
    int8 weights, bf16 for the rest (int4 widened before the matmul)."""
    t = modelcfg.preset("Llama-3.1-8B")
    setup = planner.Setup(t, model_draft(t), ACCELERATORS["H100 SXM"], 64, dtype, dtype, dtype)
    t1 = planner.round_times(setup, np.array([1]), np.array([1024]))[0]
    assert t1[0] == pytest.approx(t.macs_per_token(64) * 1024 / (tflops * 1e12 / 2))
