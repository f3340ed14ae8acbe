"""What drafts, priced: heads on the target, n-gram lookup, SGLang trees, fixed overheads and
measured pass times, each against a computation written here from the configs' numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specviz.analysis import drafting, modelcfg, planner
from specviz.analysis.acceptance import analyse
from specviz.analysis.record import from_histogram
from specviz.analysis.roofline import ACCELERATORS
from specviz.views.plan import PlanSettings, example_text, plan_page

H100 = ACCELERATORS["H100 SXM"]
BW = 3.35e12  # H100 SXM bytes/s
T = modelcfg.preset("Llama-3.1-8B")
CFG = json.loads(modelcfg.preset_text("Llama-3.1-8B"))
D, L, V, FFN = CFG["hidden_size"], CFG["num_hidden_layers"], CFG["vocab_size"], \
    CFG["intermediate_size"]
KV_DIM = CFG["num_key_value_heads"] * D // CFG["num_attention_heads"]
LAYER = 2 * D * D + 2 * D * KV_DIM + 3 * D * FFN + 2 * D  # q, o, k, v, SwiGLU, two norms
CTX = 4096


def _report():
    return analyse(from_histogram([10_000, 20_000, 30_000, 20_000, 20_000], source="test"))


def _target_step(tokens: int = 1) -> float:
    read = (L * LAYER + 2 * V * D + D - (V - tokens) * D) * 2
    return (read + 2 * L * KV_DIM * 2 * CTX) / BW


def test_eagle_head_from_the_target_by_hand():
    d = drafting.head_from_target(T, kind="eagle", layers=1)
    assert d.shared_head and "target's width" in d.source
    assert d.resident_params == LAYER + 2 * D * D + D  # a layer, the 2d -> d fc, a norm
    p = planner.plan(planner.Setup(T, d, H100, CTX), _report(), k_max=4)
    # a head step reads its layer, fc and norm, the (shared) LM head, its own KV cache
    step = ((LAYER + 2 * D * D + D + V * D) * 2 + 2 * KV_DIM * 2 * CTX) / BW
    assert p.cost[0] == pytest.approx(step / _target_step(), rel=1e-12)
    E = _report().tokens_per_call(4)
    want = E * _target_step() / (4 * step + _target_step(5))
    assert p.speedup[3, 0] == pytest.approx(want, rel=1e-12)
    eagle3 = drafting.head_from_target(T, kind="eagle3", layers=1)
    # without its config: EAGLE-3's own LM head over its 32,000-token draft vocabulary (the
    # draft_vocab_size of its published configs), not the target's 128,256
    assert not eagle3.shared_head and eagle3.shape.vocab == 32_000 < V
    assert eagle3.resident_params == LAYER + 3 * D * D + D + 32_000 * D  # + its own head
    assert "32,000" in eagle3.source
    p3 = planner.plan(planner.Setup(T, eagle3, H100, CTX), _report(), k_max=4)
    step3 = ((LAYER + 3 * D * D + D + 32_000 * D) * 2 + 2 * KV_DIM * 2 * CTX) / BW
    assert p3.cost[0] == pytest.approx(step3 / _target_step(), rel=1e-12)


def test_an_mtp_head_on_deepseek_v3_is_its_routed_mtp_layer():
    """DeepSeek-V3 ships one MTP layer (num_nextn_predict_layers = 1) after its routed
    layers: an MoE layer with MLA, priced by hand here from the config's numbers."""
    from test_pricing import DEEPSEEK_V3

    target = modelcfg.shape_from_config({**DEEPSEEK_V3, "num_nextn_predict_layers": 1})
    head = drafting.head_from_target(target, kind="mtp", layers=4)  # the config's 1 wins
    d, h = 7168, 128
    attn = (d * 1536 + 1536 + 1536 * h * (128 + 64) + d * (512 + 64) + 512
            + 512 * h * (128 + 128) + h * 128 * d)  # q_a, norm, q_b, kv_a, norm, kv_b, o
    moe = 256 * 3 * d * 2048 + 3 * d * 2048 + 256 * d  # routed, one shared, the router
    own = attn + moe + 2 * d + 2 * d * d + 3 * d  # norms; eh_proj 2d -> d and its norms
    assert head.resident_params == pytest.approx(own, rel=1e-5)
    assert head.shape.layers == 1 and "num_nextn_predict_layers = 1" in head.source
    # DeepSeek-V3's report: 14 B of MTP weights beside the 671 B, its stored copies of the
    # embedding and the LM head (129,280 x 7,168 each) among them
    assert head.resident_params == pytest.approx(14e9 - 2 * 129_280 * d, rel=0.05)


def test_head_from_its_own_config():
    cfg = {**CFG, "num_hidden_layers": 1, "draft_vocab_size": 32_000}
    shape, vocab = modelcfg.parse_head(json.dumps(cfg), name="eagle3-head")
    d = drafting.head_from_config(shape, T, kind="eagle3", draft_vocab=vocab)
    assert vocab == 32_000 and "own config.json" in d.source
    assert not d.shared_head  # its own 32k-row LM head, in memory
    assert d.resident_params == LAYER + 3 * D * D + D + 32_000 * D
    narrow = modelcfg.shape_from_config({**cfg, "hidden_size": 2048, "num_attention_heads": 16})
    with pytest.raises(drafting.DraftError, match="hidden_size"):
        drafting.head_from_config(narrow, T, kind="eagle")


def test_ngram_lookup_costs_its_lookup():
    d = drafting.ngram_draft(2e-4)
    assert d.resident_params == 0
    p = planner.plan(planner.Setup(T, d, H100, CTX), _report(), k_max=4)
    assert p.cost[0] == pytest.approx(2e-4 / _target_step(), rel=1e-12)
    E = _report().tokens_per_call(3)
    assert p.speedup[2, 0] == pytest.approx(E * _target_step() / (2e-4 + _target_step(4)),
                                            rel=1e-12)
    assert p.capacity.batch_with_draft == p.capacity.batch_target_only  # no weights, no KV


def test_a_tree_is_priced_as_the_tree():
    head = drafting.head_from_target(T, kind="eagle")
    tree = drafting.with_tree(head, topk=8, steps=4, verify_tokens=64)
    p = planner.plan(planner.Setup(T, tree, H100, CTX), _report(), k_max=8)
    assert list(p.ks) == [4]  # the tree's depth alone: no other k was measured
    step8 = ((LAYER + 2 * D * D + D + V * D) * 2 + 8 * 2 * KV_DIM * 2 * CTX / 8) / BW
    assert p.cost[0] == pytest.approx(step8 / _target_step(), rel=1e-6)
    E = _report().tokens_per_call(4)
    want = E * _target_step() / (4 * p.cost[0] * _target_step() + _target_step(64))
    assert p.speedup[0, 0] == pytest.approx(want, rel=1e-9)
    chain = planner.plan(planner.Setup(T, head, H100, CTX), _report(), k_max=8)
    assert p.speedup[0, 0] < chain.speedup[3, 0]  # 64 verified tokens cost more than 5
    note = drafting.tree_note(tree)
    assert "priced as that tree" in note and "64" in note
    assert drafting.tree_note(drafting.with_tree(head, topk=1, steps=4, verify_tokens=5)) is None
    with pytest.raises(drafting.DraftError, match="exceed"):
        drafting.with_tree(head, topk=2, steps=2, verify_tokens=64)
    with pytest.raises(drafting.DraftError, match="not prompt lookup"):
        drafting.with_tree(drafting.ngram_draft(), topk=2, steps=2, verify_tokens=4)


def test_fixed_overheads_are_added_to_every_pass():
    d = drafting.model_draft(modelcfg.preset("Llama-3.2-1B"))
    base = planner.plan(planner.Setup(T, d, H100, CTX), _report(), k_max=4)
    slow = planner.plan(planner.Setup(T, d, H100, CTX, target_overhead_s=2e-3,
                                      draft_overhead_s=1e-3), _report(), k_max=4)
    t1, td = 1 / base.plain_user[0], base.cost[0] / base.plain_user[0]
    assert 1 / slow.plain_user[0] == pytest.approx(t1 + 2e-3, rel=1e-12)
    tv = base.tokens_per_call[3] / base.per_user[3, 0] - 4 * td
    want = base.tokens_per_call[3] / (4 * (td + 1e-3) + tv + 2e-3)
    assert slow.per_user[3, 0] == pytest.approx(want, rel=1e-12)


def test_measured_times_beside_the_roofline():
    d = drafting.model_draft(modelcfg.preset("Llama-3.2-1B"))
    p = planner.plan(planner.Setup(T, d, H100, CTX), _report(), k_max=4)
    m = planner.Measured(target_s=0.020, verify_s=0.024, draft_s=0.006)
    rows = {r["quantity"]: r for r in planner.measured_rows(p, m, 3)}
    E = _report().tokens_per_call(3)
    assert rows["speedup at batch 1"]["measured"] == pytest.approx(E * 0.020 / (3 * 0.006
                                                                                + 0.024))
    assert rows["speedup at batch 1"]["roofline"] == pytest.approx(p.speedup[2, 0])
    assert rows["c = draft step / target pass"]["measured"] == pytest.approx(0.3)
    by_c = {r["quantity"]: r for r in planner.measured_rows(p, planner.Measured(0.02, c=0.1), 3)}
    assert by_c["draft step (ms)"]["measured"] == pytest.approx(2.0)
    assert by_c["verify pass (ms)"]["how"] == "roofline ratio x measured step"


def test_page_paths_name_what_drafts():
    common = dict(metrics_text=example_text("vllm_metrics.prom"), gpu="H100")
    eagle = plan_page(PlanSettings(**common, draft_kind="eagle", head_layers=1))
    assert not eagle.errors and "the LM head is the target's" in " ".join(eagle.model_lines)
    assert "EAGLE head (1 layer" in eagle.verdict
    tree = plan_page(PlanSettings(**common, draft_kind="eagle", tree_topk=4, tree_steps=3,
                                 tree_tokens=16))
    assert any("priced as that tree" in n for n in tree.notes)
    assert "priced as that tree" in tree.verdict and "use the tree" in tree.verdict
    ngram = plan_page(PlanSettings(**common, draft_kind="lookup", lookup_ms=0.05))
    assert not ngram.errors and "lookup of 0.05 ms per round" in " ".join(ngram.model_lines)
    bad = plan_page(PlanSettings(**common, draft_kind="eagle", head_layers=99))
    assert bad.plan is None and any("1..8 layers" in e for e in bad.errors)
    measured = plan_page(PlanSettings(**common, measured_target_ms=20.0))
    assert [r["quantity"] for r in measured.tables["measured"]][-1] == "speedup at batch 1"
    assert np.isfinite([r["measured"] for r in measured.tables["measured"]]).all()
