"""Tensor parallelism priced against a computation written here from the config.json files and
the datasheets alone: Llama-3.1-70B at TP 4 on 4 x H100 SXM with Llama-3.2-1B at TP 1, its
memory per device, its pass times and its all-reduces; and each split that cannot run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specviz.analysis import drafting, modelcfg, overheads, parallel, planner
from specviz.analysis.accelerators import ACCELERATORS
from specviz.analysis.acceptance import analyse
from specviz.analysis.record import from_histogram

H100 = ACCELERATORS["H100 SXM"]
T70 = json.loads(modelcfg.preset_text("Llama-3.1-70B"))
D1 = json.loads(modelcfg.preset_text("Llama-3.2-1B"))
CTX = 4096
# the datasheets: NVIDIA H100 SXM, 3.35 TB/s, 80 GB (nvidia-smi 81,559 MiB), NVLink 900 GB/s
# bidirectional (450 a direction); an all-reduce's fixed 8.5 us (SGLang PR #2904, measured)
BW, MEMORY, NVLINK, AR_FIXED = 3.35e12, 81_559 * 2**20, 450e9, 8.5e-6
KERNEL = 2e-6  # CUDA graphs: 2 us a kernel (CUDA.jl "Graphs": 8 kernels in 16 us)


def llama(cfg: dict) -> dict:
    """The numbers a Llama config gives: per-layer weights, all weights, KV bytes a token."""
    d, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    kv_dim = cfg["num_key_value_heads"] * cfg["head_dim"]
    q_dim = cfg["num_attention_heads"] * cfg["head_dim"]
    layer = 2 * d * q_dim + 2 * d * kv_dim + 3 * d * cfg["intermediate_size"] + 2 * d
    heads = (1 if cfg["tie_word_embeddings"] else 2) * V * d
    return {"d": d, "L": L, "V": V, "params": L * layer + heads + d, "norms": L * 2 * d + d,
            "kv_token": 2 * L * kv_dim * 2, "tied": cfg["tie_word_embeddings"]}


T, D = llama(T70), llama(D1)


def setup(**over) -> planner.Setup:
    kw = dict(target=modelcfg.preset("Llama-3.1-70B"), accel=H100, context_len=CTX, tp=4,
              draft=drafting.model_draft(modelcfg.preset("Llama-3.2-1B")), devices=4,
              costs=overheads.overheads("graphs"))
    return planner.Setup(**{**kw, **over})


def report():
    return analyse(from_histogram([20_000, 20_000, 20_000, 20_000, 20_000], source="test"))


def test_memory_per_device_by_hand():
    """Each device holds a quarter of every matrix and every norm whole; device 0 also holds
    the whole draft; the batch is what fits on device 0."""
    cap = planner.capacity(setup())
    wt = (T["params"] / 4 + T["norms"] * 3 / 4) * 2  # bf16
    assert cap.target_weight_bytes == pytest.approx(wt, rel=1e-12)
    assert cap.draft_weight_bytes == pytest.approx(D["params"] * 2, rel=1e-12)
    kvt, kvd = T["kv_token"] * CTX / 4, D["kv_token"] * CTX  # 8 KV heads split 4 ways
    usable = MEMORY * 0.9 - 2**30
    assert cap.batch_with_draft == int((usable - wt - D["params"] * 2) // (kvt + kvd))
    assert cap.batch_target_only == int((usable - wt) // kvt)
    assert 50 < cap.batch_with_draft < cap.batch_target_only  # 70B fits 4 ways, not 1
    with pytest.raises(planner.PlanError, match="fits split 2 ways"):
        planner.plan(setup(tp=1, devices=1), report())


def all_reduce(nbytes: float) -> float:
    return AR_FIXED + 2 * 3 / 4 * nbytes / NVLINK  # a ring of 4


def test_pass_times_and_all_reduces_by_hand():
    """At batch 1 a target pass on one device reads its quarter of the weights read (the
    untied embedding: the pass's rows), its quarter of the KV cache; adds 80 layers of 10
    kernels and 6 more; and 161 all-reduces of its activations and a gather of its logits."""
    s = setup()
    for n in (1, 5):
        read = (T["params"] - (T["V"] - n) * T["d"]) / 4 + T["norms"] * 3 / 4
        roof = (read * 2 + T["kv_token"] * CTX / 4) / BW
        launch = T["L"] * 10 * KERNEL + 6 * KERNEL
        coll = (2 * T["L"] + 1) * all_reduce(n * T["d"] * 2) + (
            AR_FIXED + 3 / 4 * n * T["V"] * 2 / NVLINK)
        parts = planner.pass_parts(s, tokens=n)
        assert parts["roofline_s"] == pytest.approx(roof, rel=1e-12)
        assert parts["launch_s"] == pytest.approx(launch, rel=1e-9)
        assert parts["collectives_s"] == pytest.approx(coll, rel=1e-12)
        assert parts["total_s"] == pytest.approx(roof + launch + coll, rel=1e-12)
    # the draft at TP 1 on one device: all its weights (tied: no row skipped), its KV, no
    # collective
    step = (D["params"] * 2 + D["kv_token"] * CTX) / BW + D["L"] * 10 * KERNEL + 6 * KERNEL
    d = planner.pass_parts(s, draft=True)
    assert d["collectives_s"] == 0 and d["total_s"] == pytest.approx(step, rel=1e-9)
    p = planner.plan(s, report(), k_max=4)
    t1, t5 = planner.pass_parts(s)["total_s"], planner.pass_parts(s, tokens=5)["total_s"]
    assert p.cost[0] == pytest.approx(step / t1, rel=1e-9)
    E = report().tokens_per_call(4)
    round_s = 25 * KERNEL  # a round's verification, as kernels
    assert p.speedup[3, 0] == pytest.approx(E * t1 / (4 * step + round_s + t5), rel=1e-9)


def test_a_wider_split_is_faster_and_holds_more():
    p4 = planner.plan(setup(), report(), k_max=4)
    p8 = planner.plan(setup(tp=8, devices=8), report(), k_max=4)
    assert p8.plain_user[0] > p4.plain_user[0]  # each device reads half as much
    assert p8.capacity.batch_target_only > p4.capacity.batch_target_only
    # PCIe instead of NVLink: the same bytes, slower all-reduces
    slow = planner.pass_parts(setup(link=H100.link("PCIe")))["collectives_s"]
    assert slow > 4 * planner.pass_parts(setup())["collectives_s"]


def test_kv_heads_held_whole_past_their_count():
    """At TP 16 each device holds one of the 8 K and V heads and its projections whole."""
    m = modelcfg.preset("Llama-3.1-70B")
    assert parallel.kv_share(m, 16) == 1 / 8 and parallel.kv_share(m, 4) == 1 / 4
    extra = T["norms"] * 15 / 16 + T["L"] * 2 * T["d"] * 128 * (1 - 8 / 16)
    assert parallel.held_whole(m, 16) == pytest.approx(extra, rel=1e-12)


@pytest.mark.parametrize(("over", "message"), [
    ({"tp": 3, "devices": 4}, "tensor parallelism 3 does not divide its 64 attention heads"),
    ({"tp": 8, "devices": 4}, "tensor parallelism 8 needs 8 devices; the server has 4"),
    ({"draft_tp": 8, "tp": 4}, "its tensor parallelism 8 exceeds the target's 4"),
    ({"tp": 4, "draft_tp": 3}, "Llama-3.2-1B: tensor parallelism 3 does not divide"),
])
def test_a_split_that_cannot_run_gets_its_own_message(over, message):
    with pytest.raises(parallel.ParallelError, match=message):
        planner.plan(setup(**over), report())


def test_a_head_runs_where_the_target_runs():
    head = drafting.head_from_target(modelcfg.preset("Llama-3.1-70B"), kind="eagle")
    s = setup(draft=head)
    assert s.dtp == 4 and np.isfinite(planner.plan(s, report(), k_max=2).speedup[:, 0]).all()
    with pytest.raises(parallel.ParallelError, match="a head runs where the target runs"):
        planner.plan(setup(draft=head, draft_tp=1), report())


def test_an_interconnect_the_preset_lacks():
    with pytest.raises(ValueError, match="H100 SXM has no interconnect 'ICI'; it has NVLink 4"):
        H100.link("ICI")
    with pytest.raises(ValueError, match="has no interconnect 'NVLink'"):
        ACCELERATORS["TPU v5e"].link("NVLink")
    assert ACCELERATORS["L4"].link().name == "PCIe Gen4"


def test_tokens_per_gpu_divide_by_the_devices_a_copy_runs_on():
    from specviz.analysis import plantables

    p = planner.plan(setup(), report(), k_max=3)
    rows = plantables.batch_rows(p)
    for j in (0, 9):
        b = p.batches[j]
        assert rows[j]["gpu_tok_s_plain"] == pytest.approx(p.plain_user[j] * b / 4)
        assert rows[j]["gpu_tok_s_spec"] == pytest.approx(p.best_user()[j] * b / 4)
    front = {(r["k"], r["batch"]): r for r in plantables.frontier_rows(p)}
    assert front[(0, 10)]["gpu_tok_s"] == pytest.approx(p.plain_user[9] * 10 / 4)
    spec, _, plain, bp = plantables.peak_gpu(p)
    assert plain == pytest.approx(p.plain_user[bp - 1] * bp / 4)
