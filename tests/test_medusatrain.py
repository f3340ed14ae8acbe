"""medusatrain --eval on the tiny Gemma 3 of tests/llm/test_llm_tiny: heads already trained,
scored on a data folder's held-out prompts, against held-out top-1 computed here from its
description (head k at position t: the heads' row argmax E (SiLU(W1_k h_t) + h_t) against the
token the target wrote at t + k + 1; a prompt is held out when the first 8 hex digits of the
sha256 of its ids as int64 are 0 mod 5). The data's tokens are made so that head 1 is often
right and head 2 about never, so a wrong offset or the wrong split changes the numbers. Fast:
no real model."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "llm"))
from test_llm_tiny import write_tiny  # noqa: E402

from specviz import medusatrain  # noqa: E402
from specviz.llm import medusa, store  # noqa: E402
from specviz.llm.forward import KVCache, hidden  # noqa: E402
from specviz.medusagen import write_batch  # noqa: E402

K = 2
ROWS = np.arange(4, 264)  # the byte pieces and the words: every token but the specials


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return store.read_model(write_tiny(tmp_path_factory.mktemp("tiny") / "t.gguf"))


def states(tiny, toks):
    w = tiny.weights
    return hidden(w, toks, KVCache(w, range(tiny.cfg.n_layers))).astype(np.float64)


def guess(tiny, W1, h):
    """The head's token at state h: the heads' row of largest E (SiLU(W1 h) + h)."""
    a = h @ W1.astype(np.float64)
    u = a / (1.0 + np.exp(-a)) + h
    return int(ROWS[np.argmax(tiny.weights.embed.rows(ROWS).astype(np.float64) @ u)])


def is_held_out(prompt):
    digest = hashlib.sha256(np.asarray(prompt, dtype=np.int64).tobytes()).hexdigest()
    return int(digest[:8], 16) % 5 == 0


def sequences(tiny, W1, rng, n):
    """n sequences of a random prompt and 12 tokens after it, most of them what head 1 says
    at the state two back; with the hidden states at the continuation's positions (f16)."""
    out = []
    while len(out) < n:
        prompt = [2] + [int(x) for x in rng.integers(4, 264, size=int(rng.integers(3, 8)))]
        if sum(is_held_out(s[0][: s[1]]) for s in out) < n // 3 and not is_held_out(prompt):
            continue
        toks = list(prompt)
        while len(toks) < len(prompt) + 12:
            toks.append(guess(tiny, W1[0], states(tiny, toks)[-2]) if rng.random() < 0.7
                        else int(rng.integers(4, 264)))
        h = states(tiny, toks)[len(prompt) - 1: len(toks) - 1].astype(np.float16)
        out.append((toks, len(prompt), h))
    return out


def oracle(tiny, W1, seqs):
    """Held-out top-1 per head, position by position."""
    hit, n = np.zeros(K), np.zeros(K)
    for toks, start, h in seqs:
        if not is_held_out(toks[:start]):
            continue
        for i, row in enumerate(h.astype(np.float64)):
            t = start - 1 + i  # the position whose state this is
            for k in range(1, K + 1):
                if t + k + 1 < len(toks):
                    hit[k - 1] += guess(tiny, W1[k - 1], row) == toks[t + k + 1]
                    n[k - 1] += 1
    return hit / n


def test_eval_scores_given_heads_on_the_data_folders_held_out_prompts(
        tiny, tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(3)
    W1 = (rng.standard_normal((K, tiny.cfg.d, tiny.cfg.d)) * 0.7).astype(np.float16)
    other = (rng.standard_normal((K, tiny.cfg.d, tiny.cfg.d)) * 0.7).astype(np.float16)
    seqs = sequences(tiny, W1.astype(np.float32), rng, 12)
    for a in range(0, len(seqs), 4):  # three batch files
        write_batch(tmp_path / "data", seqs[a: a + 4])
    medusa.save_heads(tmp_path / "h.npz", W1.astype(np.float32), ROWS, {"data": "elsewhere"})
    medusa.save_heads(tmp_path / "o.npz", other.astype(np.float32), ROWS, {})
    monkeypatch.setattr(medusatrain.store, "load", lambda: tiny)
    assert medusatrain.main(["--eval", str(tmp_path / "h.npz"), str(tmp_path / "o.npz"),
                             "--data", str(tmp_path / "data")]) == 0
    got, got_other = json.loads(capsys.readouterr().out)
    want, want_other = oracle(tiny, W1, seqs), oracle(tiny, other, seqs)
    assert want[0] > 0.5 > want[1]  # the data tells a wrong offset from the right one
    assert want_other[0] < 0.5
    assert [r["rate"] for r in got["top1"]] == [round(float(x), 4) for x in want]
    assert [r["rate"] for r in got_other["top1"]] == [round(float(x), 4) for x in want_other]
    assert [r["rate"] for r in got_other["minus_first"]] == pytest.approx(
        want_other - want, abs=1e-4)  # the same positions, paired
    assert all(r["rate"] == r["lo"] == r["hi"] == 0 for r in got["minus_first"])
    assert all(r["lo"] <= r["rate"] <= r["hi"] for r in got["top1"] + got_other["minus_first"])
    held = [s for s in seqs if is_held_out(s[0][: s[1]])]
    assert got["held_out_sequences"] == len(held)
    assert got["held_out_positions"] == sum(len(s[2]) for s in held)
    assert (got["trained_on"], got["data"], got["batches"]) == ("elsewhere", "data", 3)


def test_eval_refuses_heads_that_do_not_match_their_checksum(tiny, tmp_path, monkeypatch):
    path = tmp_path / "h.npz"
    medusa.save_heads(path, np.zeros((K, tiny.cfg.d, tiny.cfg.d)), ROWS, {})
    path.write_bytes(path.read_bytes() + b"x")
    monkeypatch.setattr(medusatrain.store, "load", lambda: tiny)
    with pytest.raises(medusa.DraftError, match="checksum"):
        medusatrain.main(["--eval", str(path), "--data", str(tmp_path)])
