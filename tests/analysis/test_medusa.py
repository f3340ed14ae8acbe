"""Medusa's heads in the planner, against a count written here from the description (Cai et
al. 2024, arXiv 2401.10774; Spec-Bench's evaluation/inference_medusa.py) and the datasheet,
not from the code: K heads on the target's last hidden state, each one d x d layer and its
own LM head of V x d, all run once a round in one pass of one token a sequence, where the
target runs; a fixed tree of N nodes verified with the target's own next token in one target
pass of N + 1 tokens."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specviz.analysis import drafting, modelcfg, overheads, planner
from specviz.analysis.acceptance import analyse
from specviz.analysis.parallel import ParallelError
from specviz.analysis.record import from_histogram
from specviz.analysis.roofline import ACCELERATORS

CFG = json.loads(modelcfg.preset_text("Llama-3.1-8B"))
D, L, V, FFN = CFG["hidden_size"], CFG["num_hidden_layers"], CFG["vocab_size"], \
    CFG["intermediate_size"]
KV_DIM = CFG["num_key_value_heads"] * D // CFG["num_attention_heads"]
LAYER = 2 * D * D + 2 * D * KV_DIM + 3 * D * FFN + 2 * D  # q, o, k, v, SwiGLU, two norms
BW = 3.35e12  # H100 SXM, bytes/s (its datasheet: 3.35 TB/s)
CTX, K, N = 4096, 4, 63  # context; Medusa's heads and nodes (mc_sim_7b_63: depth 4)
# the heads' weights by hand; the shape also counts one norm vector of d, and Medusa's
# residual blocks have a bias of d each: (K + 1) d of 2.2 G, under 1e-5 of the whole
HEADS = K * (D * D + V * D)
REL = 1e-5
OP_S = (1 / 25.5) / 2588  # eager: one op dispatched from Python (gpt-fast's A100 run)


def _setup(mode: str = "none", **kw) -> planner.Setup:
    t = modelcfg.preset("Llama-3.1-8B")
    return planner.Setup(t, drafting.medusa_heads(t, depth=K, nodes=N),
                         ACCELERATORS["H100 SXM"], CTX, costs=overheads.overheads(mode), **kw)


def _target(tokens: int) -> float:
    """A bf16 target pass over `tokens` at batch 1: every weight once (the input embedding
    only its `tokens` rows), the KV cache of CTX tokens; memory-bound at these sizes."""
    read = (L * LAYER + 2 * V * D + D - (V - tokens) * D) * 2
    return (read + 2 * L * KV_DIM * 2 * CTX) / BW


def test_the_heads_weights_and_memory_by_hand():
    s = _setup()
    d = s.draft
    assert d.kind == "medusa" and not d.shared_head and d.tree.verify_tokens == N + 1
    assert d.resident_params == pytest.approx(HEADS, rel=REL)
    assert planner.capacity(s).draft_weight_bytes == pytest.approx(2 * HEADS, rel=REL)
    assert planner.capacity(s).kv_per_seq_draft == 0  # no attention: no KV cache


def test_a_round_by_hand_on_the_roofline():
    """One pass of the heads (2 HEADS bytes), one target pass of N + 1 tokens; at a mean of
    2.2 accepted of 4 (the histogram below) the round gives 3.2 tokens."""
    s = _setup()
    t1, step, drafts, tk = planner.round_times(s, np.array([K]), np.array([1]))
    assert float(step[0]) == pytest.approx(2 * HEADS / BW, rel=REL)
    assert float(drafts[0, 0]) == pytest.approx(2 * HEADS / BW, rel=REL)  # no levels
    assert float(tk[0, 0]) == pytest.approx(_target(N + 1), rel=1e-9)
    assert float(t1[0]) == pytest.approx(_target(1), rel=1e-9)
    rep = analyse(from_histogram([10_000, 20_000, 30_000, 20_000, 20_000], source="test"))
    p = planner.plan(s, rep, k_max=1)
    want = 3.2 * _target(1) / (2 * HEADS / BW + _target(N + 1))
    assert p.ks.tolist() == [K] and float(p.speedup[0, 0]) == pytest.approx(want, rel=REL)


def test_eager_prices_one_pass_of_launches_and_a_trees_round():
    """Eager: the heads' pass is max(its bytes' time, 28 ops); the round adds the tree's 40
    ops (Medusa's generate_candidates .. update_inference_inputs), and no level's."""
    s = _setup("eager")
    _, step, drafts, _ = planner.round_times(s, np.array([K]), np.array([1]))
    heads = max(2 * HEADS / BW, 28 * OP_S)
    assert float(step[0]) == pytest.approx(heads, rel=REL)
    assert float(drafts[0, 0]) == pytest.approx(heads + 40 * OP_S, rel=REL)


def test_the_heads_run_where_the_target_runs():
    s = _setup(tp=2)
    assert s.head and s.dtp == 2
    with pytest.raises(ParallelError, match="a head runs where the target runs"):
        planner.plan(_setup(tp=2, draft_tp=1), analyse(from_histogram([1, 1, 1, 1, 1],
                                                                      source="test")))


@pytest.mark.parametrize(("kw", "message"), [
    ({"depth": 0}, "Medusa has 1..8 heads"), ({"depth": 9}, "Medusa has 1..8 heads"),
    ({"depth": 4, "nodes": 3}, "a Medusa tree of depth 4 has 4..511 nodes"),
    ({"vocab": 10**9}, "the heads' vocabulary is 1..128,256")])
def test_bad_heads_get_their_own_message(kw, message):
    with pytest.raises(drafting.DraftError, match=message):
        drafting.medusa_heads(modelcfg.preset("Llama-3.1-8B"), **kw)


def test_a_trimmed_lm_head_reads_fewer_rows():
    t = modelcfg.preset("Llama-3.1-8B")
    d = drafting.medusa_heads(t, depth=K, nodes=N, vocab=32_000)
    assert d.resident_params == pytest.approx(K * (D * D + 32_000 * D), rel=REL)
    assert "trimmed to 32,000 rows" in d.source
