"""The forward pass against itself: cached = uncached, block = one position at a time,
rollback then re-extend = fresh, the sliding window, early exit = a shorter model.

Each comparison is of two f32 computations of the same numbers in a different order (a
block's matrix products sum in another order than one row's), so they agree to float
rounding, not bit for bit: TOL below is ~100 times f32's relative epsilon (1.2e-7) times
the size of a logit (|z| <= ~40), far under any real difference (a changed token or layer
moves logits by whole units).
"""

from __future__ import annotations

import numpy as np
import pytest

from specviz.llm.forward import KVCache, forward, hidden, rms_norm
from specviz.llm.runner import Runner

TOL = 5e-4  # abs. logit difference allowed between two summation orders



@pytest.fixture(scope="module")
def ids(model):
    return model.tokenizer.encode("The quick brown fox jumps over the lazy dog. It was")


def fresh(model, tokens, layers=None):
    """Logits at the last position from an empty cache, one block."""
    w = model.weights
    return forward(w, tokens, KVCache(w, range(w.cfg.n_layers) if layers is None else layers))[0]


def test_cached_decoding_equals_uncached(model, ids):
    w = model.weights
    cache = KVCache(w, range(w.cfg.n_layers))
    forward(w, ids[:-3], cache)
    for i in range(len(ids) - 3, len(ids)):
        step = forward(w, ids[i:i + 1], cache)[0]
        assert np.max(np.abs(step - fresh(model, ids[:i + 1]))) < TOL


def test_a_block_pass_equals_one_position_at_a_time(model, ids):
    w = model.weights
    a, b = KVCache(w, range(w.cfg.n_layers)), KVCache(w, range(w.cfg.n_layers))
    forward(w, ids[:6], a)
    forward(w, ids[:6], b)
    block = forward(w, ids[6:], a, rows=range(len(ids) - 6))
    ones = np.stack([forward(w, [t], b)[0] for t in ids[6:]])
    assert block.shape == ones.shape == (len(ids) - 6, w.cfg.V)
    assert np.max(np.abs(block - ones)) < TOL


def test_rollback_then_reextend_equals_fresh(model, ids):
    r = Runner(model.weights)
    other = ids[:8] + [model.tokenizer.encode(" cat", bos=False)[0]] * 3
    r.logits(other, [len(other)])  # drafts that will be rejected
    z = r.logits(ids, [len(ids)])[0]  # rolls back to the 8 shared tokens, then extends
    assert r.cache.n == len(ids)
    assert np.max(np.abs(z - fresh(model, ids))) < TOL


def test_runner_rows_at_many_prefixes_come_from_one_pass(model, ids):
    r = Runner(model.weights)
    r.logits(ids[:5], [5])
    rows = r.logits(ids, range(5, len(ids) + 1))
    assert len(r.passes) == 2 and r.passes[-1][:2] == (len(ids) - 5, len(ids) - 5)  # 5 kept
    for j, z in zip(range(5, len(ids) + 1), rows, strict=True):
        assert np.max(np.abs(z - fresh(model, ids[:j]))) < TOL


def test_a_kept_row_asked_beside_one_before_it_comes_back(tmp_path):
    """The tiny Gemma: the row at the end is kept, the one before it is not; asking for
    both rolls the cache back to run the earlier one, and the kept row past it is run
    again (the rollback lets it go), each equal to a fresh pass."""
    from test_llm_tiny import write_tiny

    from specviz.llm import store
    m = store.read_model(write_tiny(tmp_path / "t.gguf"))
    ids = m.tokenizer.encode("ab a ba ab")
    r = Runner(m.weights)
    r.logits(ids, [len(ids)])
    rows = r.logits(ids, [len(ids) - 1, len(ids)])
    assert r.passes[-1][:2] == (2, 2) and r.cache.n == len(ids)
    for j, z in zip((len(ids) - 1, len(ids)), rows, strict=True):
        want = forward(m.weights, ids[:j], KVCache(m.weights, range(m.cfg.n_layers)))[0]
        assert np.max(np.abs(z - want)) < 1e-5, j


def test_a_local_layer_ignores_a_token_600_back(model):
    """Change the token 600 positions back: a sliding-window layer (window 512) gives the
    same output at the last position, a global layer does not."""
    w, cfg = model.weights, model.cfg
    rng = np.random.default_rng(0)
    base = [cfg.bos] + rng.integers(1000, 20000, 620).tolist()
    other = list(base)
    other[-601] = other[-601] + 1  # 600 tokens before the last
    local, glob = 0, 5
    assert not cfg.is_global(local) and cfg.is_global(glob)
    for layer, same in ((local, True), (glob, False)):
        h = [hidden1(w, layer, seq) for seq in (base, other)]
        diff = float(np.max(np.abs(h[0] - h[1])))
        assert (diff == 0.0) if same else (diff > 1e-3), (layer, diff)


def hidden1(w, layer, tokens):
    """The output of one layer alone at the last position, for a sequence of embeddings."""
    from specviz.llm.forward import _block
    h = w.embed.rows(tokens) * np.float32(np.sqrt(w.cfg.d))
    cache = KVCache(w, [layer])
    cache.reserve(len(tokens))
    return _block(w, layer, 0, h, 0, cache)[-1]


def test_early_exit_draft_equals_a_forward_pass_with_that_many_layers(model, ids):
    """The draft's logits = the head after the final norm of the first L layers' output,
    written out layer by layer here."""
    from specviz.llm.forward import _block
    w, L = model.weights, 6
    draft = Runner(w, range(L)).logits(ids, [len(ids)])[0]
    h = w.embed.rows(ids) * np.float32(np.sqrt(w.cfg.d))
    cache = KVCache(w, range(L))
    cache.reserve(len(ids))
    for layer in range(L):
        h = _block(w, layer, layer, h, 0, cache)
    want = w.embed.rows(np.arange(w.embed.m)) @ rms_norm(h[-1], w.output_norm, w.cfg.eps)
    assert np.max(np.abs(draft - want)) < TOL
    full = fresh(model, ids)
    assert np.max(np.abs(draft - full)) > 1.0  # and it is not the target


def test_hidden_only_runs_the_cache_layers(model, ids):
    w = model.weights
    cache = KVCache(w, (0, 2))
    hidden(w, ids, cache)
    assert cache.n == len(ids) and cache.layers == (0, 2)
