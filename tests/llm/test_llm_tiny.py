"""The loader on a tiny Gemma 3 written here with gguf's own writer (2 layers, width 8, a
264-piece vocabulary): metadata read, the shape checks, the progress callback, per-layer
sliding flags and the local RoPE base when a file carries them, and refusals that name
what is wrong. Fast: it needs no real model."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGUFReader, GGUFWriter

from specviz.core.scenario import Scenario
from specviz.llm import store
from specviz.llm.forward import KVCache, forward
from specviz.llm.gemma import LAYER_TENSORS, ModelFileError, read_config

D, HD, FFN = 8, 4, 16  # width, head size, FFN width (2 query heads, 1 KV head)
PIECES = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)] + [
    "▁", "a", "b", "▁a"]
TYPES = [3, 3, 3, 2] + [6] * 256 + [1, 1, 1, 1]


def write_tiny(path, *, arch="gemma3", drop=None, extra=None):
    rng = np.random.default_rng(0)
    w = GGUFWriter(str(path), arch)
    w.add_block_count(2)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FFN)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_key_length(HD)
    w.add_value_length(HD)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e6)
    w.add_sliding_window(4)
    w.add_context_length(64)
    for key, value in (extra or {}).items():
        getattr(w, key)(value)
    w.add_tokenizer_model("llama")
    w.add_token_list(PIECES)
    w.add_token_scores([-float(i) for i in range(len(PIECES))])
    w.add_token_types(TYPES)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    if drop != "tokenizer.ggml.padding_token_id":
        w.add_pad_token_id(0)
    shapes = {"attn_norm": (D,), "attn_q": (2 * HD, D), "attn_k": (HD, D), "attn_v": (HD, D),
              "attn_q_norm": (HD,), "attn_k_norm": (HD,), "attn_output": (D, 2 * HD),
              "post_attention_norm": (D,), "ffn_norm": (D,), "ffn_gate": (FFN, D),
              "ffn_up": (FFN, D), "ffn_down": (D, FFN), "post_ffw_norm": (D,)}
    names = {"token_embd.weight": (len(PIECES), D), "output_norm.weight": (D,)}
    names |= {f"blk.{i}.{n}.weight": shapes[n] for i in range(2) for n in LAYER_TENSORS}
    for name, shape in names.items():
        if name != drop:
            w.add_tensor(name, rng.standard_normal(shape).astype(np.float32) * 0.3)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_a_tiny_model_loads_with_progress_and_runs(tmp_path):
    seen = []
    m = store.read_model(write_tiny(tmp_path / "t.gguf"),
                         progress=lambda f, what: seen.append((f, what)))
    cfg = m.cfg
    assert (cfg.n_layers, cfg.d, cfg.n_heads, cfg.n_kv, cfg.head_dim, cfg.ffn, cfg.V) == (
        2, D, 2, 1, HD, FFN, len(PIECES))
    assert (cfg.window, cfg.rope_global, cfg.rope_local, cfg.bos) == (4, 1e6, 1e4, 2)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert seen[0] == (0.0, "reading the file's index (the vocabulary, the tensors' places)")
    assert len(seen) == 1 + 2 + 2 * len(LAYER_TENSORS)  # the index, then each tensor
    ids = m.tokenizer.encode("ab a\x07")
    assert ids[0] == 2 and m.tokenizer.decode(ids) == "ab a\x07"
    z = forward(m.weights, ids, KVCache(m.weights, range(2)), rows=range(len(ids)))
    assert z.shape == (len(ids), len(PIECES)) and np.all(np.isfinite(z))


def test_sliding_flags_and_the_local_base_come_from_the_file_when_there(tmp_path):
    path = write_tiny(tmp_path / "t.gguf", extra={
        "add_sliding_window_pattern": [False, True], "add_rope_freq_base_swa": 5e4})
    cfg = read_config(GGUFReader(str(path)))
    assert cfg.is_global(0) and not cfg.is_global(1)
    assert cfg.rope_base(0) == 1e6 and cfg.rope_base(1) == 5e4


def test_the_loaders_reader_reads_what_ggufs_own_reader_reads(tmp_path):
    """store.open_gguf slices the map as a plain array: every field's value, every
    tensor's name, type, shape and bytes as GGUFReader itself gives them."""
    path = write_tiny(tmp_path / "t.gguf", extra={"add_sliding_window_pattern": [False, True]})
    ours, theirs = store.open_gguf(path), GGUFReader(str(path))
    assert type(ours.data) is np.ndarray and type(theirs.data) is np.memmap
    assert list(ours.fields) == list(theirs.fields) and len(ours.fields) > 20
    for name, field in theirs.fields.items():
        assert ours.fields[name].contents() == field.contents(), name
    assert len(ours.tensors) == len(theirs.tensors) == 2 + 2 * len(LAYER_TENSORS)
    for a, b in zip(ours.tensors, theirs.tensors, strict=True):
        assert (a.name, a.tensor_type, list(a.shape), a.data_offset) == (
            b.name, b.tensor_type, list(b.shape), b.data_offset)
        assert np.array_equal(a.data, b.data), a.name


@pytest.mark.parametrize("kwargs, words", [
    ({"arch": "llama"}, "'llama' model, not 'gemma3'"),
    ({"drop": "blk.1.ffn_up.weight"}, "no tensor 'blk.1.ffn_up.weight'"),
    ({"drop": "tokenizer.ggml.padding_token_id"},
     "no metadata key 'tokenizer.ggml.padding_token_id'"),
])
def test_a_wrong_file_is_refused_by_name(tmp_path, kwargs, words):
    with pytest.raises(ModelFileError, match=words):
        store.read_model(write_tiny(tmp_path / "t.gguf", **kwargs))


def test_the_real_pair_captions_its_rounds_in_its_own_words(tmp_path):
    """The real pair's words (views.narration.LLMWording): the context as text, the draft
    by its label, prompt lookup's copy; a warped real pair keeps them."""
    from specviz.core.warp import Warp, WarpedPair
    from specviz.llm.drafts import parse_draft
    from specviz.llm.pair import LLMPair
    from specviz.views.narration import play_narrated, prob

    m = store.read_model(write_tiny(tmp_path / "t.gguf"))
    real = LLMPair(m, parse_draft("early-exit:1", cfg=m.cfg))
    for pair in (real, WarpedPair(real, Warp(0.7, 5, 1.0, 0.0))):
        (tr,) = play_narrated(Scenario.on(pair, [5, 9, 70], k=2, seed=0), n_rounds=1)
        assert tr.steps[0].caption == (f"Context '{real.tail([5, 9, 70])}'. The early-exit:1 "
                                       "draft will guess 2 tokens.")
        assert tr.steps[1].caption == (
            f"Draft 1: '{m.tokenizer.shown[tr.positions[0].token]}' from q of the "
            f"early-exit:1 draft, q = {prob(tr.positions[0].q)}.")
    lookup = LLMPair(m, parse_draft("lookup", cfg=m.cfg))
    (tr,) = play_narrated(Scenario.on(lookup, [5, 6, 7, 5, 6, 7, 5, 6], k=2, seed=0), n_rounds=1)
    assert tr.steps[0].caption.endswith(": prompt lookup copies the 2 token(s) that followed "
                                        "an earlier match.")
    assert "' from the text after the match, q = 1.0000." in tr.steps[1].caption


def test_the_llm_page_plays_a_round_on_a_tiny_model(tmp_path, monkeypatch,
                                                     small_default_corpus):
    """/llm's page, stage and stream on the tiny model (the development tier's cover of
    pages/11_llm.py, web.llmstage, views.llmpage and views.llmstream without the real
    model; tests/llm/test_llm_page runs them on it): a round drawn, a step taken."""
    from support import run_page

    from specviz.web import llmstage, server

    m = store.read_model(write_tiny(tmp_path / "t.gguf"))
    monkeypatch.setitem(server._made, llmstage.MODEL, m)  # the page's model, this test only
    at = run_page("pages/11_llm.py", 120, llm_kind="lookup", llm_k="2")
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert len(at.get("plotly_chart")) == 3 and "Round 0" in " ".join(
        h.proto.body for h in at.html)
    at.button(key="llm_next").click().run()
    assert not at.exception and at.query_params["step"] == "1"


def test_rows_the_pair_holds_are_not_scored_again(tmp_path):
    """A round at a prefix whose k + 1 rows the pair still holds runs no pass of the
    target (a server asked one prompt many times); the rows are those the pass gave, and
    a prefix the pair does not hold is scored as before."""
    from specviz.llm.drafts import parse_draft
    from specviz.llm.pair import LLMPair

    m = store.read_model(write_tiny(tmp_path / "t.gguf"))
    pair = LLMPair(m, parse_draft("early-exit:1", cfg=m.cfg))
    prefix, tails = [5, 9, 70], [(), (11,), (11, 12)]
    pair.score(prefix, tails)
    rows = [pair.p(prefix + list(t)) for t in tails]
    pair.score([5, 9, 71], tails)  # the runner now holds another sequence
    passes = len(pair.target.passes)
    pair.score(prefix, tails)
    assert len(pair.target.passes) == passes
    assert all(a is b for a, b in zip(rows, [pair.p(prefix + list(t)) for t in tails], strict=True))
    fresh = LLMPair(m, parse_draft("early-exit:1", cfg=m.cfg))
    fresh.score(prefix, tails)
    assert all(np.array_equal(a, fresh.p(prefix + list(t)))
               for a, t in zip(rows, tails, strict=True))
    pair.score(prefix, [(), (13,)])
    assert len(pair.target.passes) == passes + 1
