from __future__ import annotations

import pytest

from specviz.analysis.modelcfg import PRESETS, preset
from specviz.analysis.roofline import (
    ACCELERATORS,
    compute_type,
    free_tokens,
    pass_cost,
    pass_time,
    pass_times,
    verify_cost_ratio,
)
from specviz.analysis.shape import DTYPE_BYTES, ModelShape

L7 = PRESETS["Llama-2-7B"]
H100 = ACCELERATORS["H100 SXM"]


def test_params() -> None:
    assert L7.params == 6_738_415_616
    assert PRESETS["Llama-2-13B"].params == 13_015_864_320
    assert PRESETS["Llama-2-70B"].params == 68_976_648_192  # GQA: 8 KV heads


def test_shape_properties() -> None:
    l70 = PRESETS["Llama-2-70B"]
    assert L7.head_dim == 128 and L7.kv_dim == 4096
    assert l70.head_dim == 128 and l70.kv_dim == 1024


def test_weight_bytes_in_gib() -> None:
    held = pass_cost(L7, dtype="fp16", count="tutorial").weight_bytes  # every weight
    assert held == 2 * 6_738_415_616
    assert round(held / 2**30, 2) == 12.55
    assert round(held / 1e9, 2) == 13.48
    # a one-token pass gathers one row of the untied 32000 x 4096 input embedding
    assert pass_cost(L7, dtype="fp16").weight_bytes == 2 * (6_738_415_616 - 31_999 * 4096)


def test_tutorial_count() -> None:
    c = pass_cost(L7, tokens=1, context_len=512, dtype="fp16", count="tutorial")
    assert round(c.macs / 1e9, 3) == 5.167
    assert c.kv_bytes == 0.0
    assert c.label == "tutorial count (no 3rd SwiGLU matrix, no LM head, no KV read)"
    got = [
        round(pass_cost(L7, tokens=t, count="tutorial").macs_per_byte, 2) for t in (1, 2, 4, 8, 16)
    ]
    assert got == [0.38, 0.77, 1.53, 3.07, 6.13]


def test_full_count() -> None:
    c = pass_cost(L7, tokens=1, context_len=512, dtype="fp16", count="full", kv_cache=False)
    assert round(c.macs / 1e9, 3) == 6.741
    assert round(c.macs_per_byte, 2) == 0.51  # over the bytes read (0.50 over every weight)
    assert c.label == "full count"
    kv = pass_cost(L7, tokens=1, context_len=512, dtype="fp16", count="full", kv_cache=True)
    assert kv.kv_bytes == 2 * 32 * 512 * 4096 * 2
    assert kv.bytes == kv.weight_bytes + kv.kv_bytes
    assert round(kv.macs_per_byte, 2) == 0.50  # 0.49 over every weight


def test_scaling_with_tokens_and_batch() -> None:
    one = pass_cost(L7)
    many = pass_cost(L7, tokens=5, batch=8)
    assert many.macs == pytest.approx(40 * one.macs)
    row = 4096 * 2  # one embedding row in fp16
    assert many.weight_bytes == one.weight_bytes + 39 * row  # read once, 40 rows gathered
    assert many.kv_bytes == 8 * one.kv_bytes  # one KV cache per sequence
    assert pass_cost(L7, dtype="int4").weight_bytes == (L7.params - 31_999 * 4096) * 0.5


def test_accelerator_ridges() -> None:
    assert round(ACCELERATORS["A100 SXM 80GB"].ridge) == 77  # 76.5
    assert round(H100.ridge) == 148
    assert round(ACCELERATORS["H200 SXM"].ridge) == 103
    for a in ACCELERATORS.values():
        assert a.source


def test_pass_time_is_roofline() -> None:
    c = pass_cost(L7)
    assert pass_time(c, H100) == pytest.approx(c.bytes / H100.bandwidth_bytes_per_s)
    big = pass_cost(L7, tokens=4096)
    assert pass_time(big, H100) == pytest.approx(big.macs / H100.peak_macs_per_s)


def test_free_tokens() -> None:
    t = free_tokens(L7, H100, context_len=512, dtype="fp16", batch=1)
    base = pass_time(pass_cost(L7), H100)
    assert pass_time(pass_cost(L7, tokens=t), H100) <= 1.01 * base
    assert pass_time(pass_cost(L7, tokens=t + 1), H100) > 1.01 * base
    assert 100 < t < 1000  # far more than any k a draft would use


def test_free_tokens_decreases_with_batch() -> None:
    for accel in ACCELERATORS.values():
        free = [free_tokens(L7, accel, batch=b) for b in (1, 2, 4, 8, 16, 32, 64, 128, 512)]
        assert all(a >= b for a, b in zip(free, free[1:], strict=False))
        assert free[0] > free[-1]


def test_verify_cost_ratio() -> None:
    # memory-bound: the 5-token pass reads only 4 more embedding rows (5e-6 of the bytes)
    assert verify_cost_ratio(L7, H100, k=4, batch=1) == pytest.approx(1.0, rel=1e-5)
    batches = (1, 16, 64, 256, 1024, 4096)
    ratios = [verify_cost_ratio(L7, H100, k=4, context_len=64, batch=b) for b in batches]
    assert all(a <= b + 1e-12 for a, b in zip(ratios, ratios[1:], strict=False))
    assert 1.0 < ratios[-1] <= 5.0
    assert verify_cost_ratio(L7, H100, k=4, batch=4096, kv_cache=False) == pytest.approx(5.0)


def test_kv_read_keeps_long_context_memory_bound() -> None:
    # Llama-2-7B has 32 KV heads: at ctx 512 each sequence's KV read (268 MB) outweighs the
    # MACs of 5 tokens on an H100, so batching never makes verification compute-bound.
    ratio = verify_cost_ratio(L7, H100, k=4, context_len=512, batch=4096)
    assert ratio == pytest.approx(1.0, rel=1e-3)  # 16,384 more embedding rows: 1.2e-4


def test_accelerator_and_preset_by_name() -> None:
    assert preset("Llama-2-13B") is PRESETS["Llama-2-13B"]
    assert pass_cost("Llama-2-7B") == pass_cost(L7)
    assert free_tokens("Llama-2-7B", "H100 SXM") == free_tokens(L7, H100)
    assert free_tokens(L7, "h100") == free_tokens(L7, H100)  # views.plan's lookup: a part will do


def test_custom_shape() -> None:
    tiny = ModelShape("tiny", layers=2, d_model=8, ffn=16, heads=2, kv_heads=1, vocab=10)
    d, kv = 8, 4
    assert tiny.params == 2 * (2 * d * d + 2 * d * kv + 3 * d * 16 + 2 * d) + 2 * 10 * d + d
    c = pass_cost(tiny, context_len=3, kv_cache=False)
    assert c.macs == 2 * (2 * d * d + 2 * d * kv + 3 * d * 16 + 2 * 3 * d) + 10 * d


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(tokens=0), "tokens"),
        (dict(tokens=1.5), "tokens"),
        (dict(context_len=-1), "context_len"),
        (dict(batch=0), "batch"),
        (dict(dtype="fp64"), "unknown dtype 'fp64'; choose one of"),
        (dict(count="half"), "unknown count"),
    ],
)
def test_bad_inputs_raise(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        pass_cost(L7, **kwargs)


def test_unknown_names_raise() -> None:
    with pytest.raises(ValueError, match="unknown preset 'Llama-3'"):
        pass_cost("Llama-3")
    with pytest.raises(ValueError, match="unknown accelerator"):
        free_tokens(L7, "TPU")
    with pytest.raises(ValueError, match="k"):
        verify_cost_ratio(L7, H100, k=0)


@pytest.mark.parametrize(("accel", "dtype", "tflops"), [
    ("H100 SXM", "fp8", 1979), ("H100 SXM", "int8", 1979), ("H100 SXM", "fp16", 989),
    ("H100 SXM", "int4", 989), ("A100 SXM 80GB", "int8", 312)])  # the A100 has no fp8 cores
def test_fp8_and_int8_compute_at_the_fp8_peak(accel: str, dtype: str, tflops: float) -> None:
    """A compute-bound pass (4,096 tokens) takes its MACs over the datasheet's dense peak."""
    cost = pass_cost(L7, 1, 64, dtype, batch=4096)
    t = pass_times(L7, ACCELERATORS[accel], 1, 4096, context_len=64, dtype=dtype,
                   compute=compute_type(dtype))
    assert t == pytest.approx(cost.macs / (tflops * 1e12 / 2))


def test_dtype_table() -> None:
    assert DTYPE_BYTES == {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5}


def test_bench_llm_prices_its_passes_by_the_roofline():
    import importlib.util
    from pathlib import Path
    from types import SimpleNamespace

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_llm.py"
    spec = importlib.util.spec_from_file_location("bench_llm", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    # Gemma 3 270M: 18 layers, d 640, 4 query heads and 1 KV head of 256, MLP 2048, tied head
    L, d, hq, hk, hd, ffn, V = 18, 640, 4 * 256, 256, 256, 2048, 262_144
    cfg = SimpleNamespace(n_layers=L, d=d, n_heads=4, n_kv=1, head_dim=hd, ffn=ffn, V=V)
    n, ctx = 3, 256
    per_layer = d * hq + 2 * d * hk + hq * d + 3 * d * ffn  # q, k, v, o; gate, up, down
    params = L * (per_layer + 2 * hd + 4 * d) + V * d + d  # q/k norms, 4 norms; final norm
    kv = L * 2 * hk * (ctx + n)  # K and V of every position attended
    macs = n * (L * (per_layer + 2 * hd + 2 * (ctx + n) * hq) + V * d)
    assert bench.pass_cost(cfg, n, ctx) == (4.0 * (params + kv), 2.0 * macs)
