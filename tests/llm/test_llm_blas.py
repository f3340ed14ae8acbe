"""blas.rows_by, the pass's products: x @ W^T to f32 rounding at every row count, and the
shapes it hands BLAS (one vector per row for a few rows, else a multiple of ROW_BLOCK
rows), which are the fast ones on this machine (benchmarks/bench_llm.py measures them).
Fast: small random matrices and the tiny model of test_llm_tiny."""

from __future__ import annotations

import numpy as np
import pytest
from test_llm_tiny import write_tiny

from specviz.llm import blas
from specviz.llm.forward import KVCache, forward

EPS32 = float(np.finfo(np.float32).eps)


def bound(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A dot product of length d summed in f32 in any order is off from the exact value by
    at most d * eps * sum_k |x_k w_k| (the standard error bound, to first order)."""
    d = x.shape[1]
    return d * EPS32 * (np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T)


@pytest.mark.parametrize("n", range(1, 10))
def test_rows_by_is_x_times_w_transposed(n, monkeypatch):
    monkeypatch.setattr(blas, "CHUNK_BYTES", 16 * 40 * 4)  # 16-row chunks, a ragged last one
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 40), dtype=np.float32)
    w = rng.standard_normal((37, 40), dtype=np.float32)
    got = blas.rows_by(x, w)
    exact = x.astype(np.float64) @ w.astype(np.float64).T
    assert got.shape == (n, 37) and got.dtype == np.float32 and got.flags.c_contiguous
    assert np.all(np.abs(got - exact) <= bound(x, w))


def test_a_pass_hands_blas_vectors_or_whole_row_blocks(tmp_path, monkeypatch):
    """Every product of a pass with a weight matrix goes through rows_by, and BLAS sees a
    vector or a multiple of ROW_BLOCK rows: never the 2, 3, 5 .. 9-row products that its
    kernels run 2-4x slower."""
    from specviz.llm import store
    m = store.read_model(write_tiny(tmp_path / "t.gguf"))
    w = m.weights
    seen: list[tuple[int, int]] = []  # (rows of the left operand, 0 for a vector; id of W)

    def record(a, b, **kw):
        if b.ndim == 1:
            seen.append((0, id(a.base if a.base is not None else a)))
        else:
            seen.append((a.shape[0], id(b.base if b.base is not None else b)))
        return np.matmul(a, b, **kw)

    monkeypatch.setattr(blas, "matmul", record)
    ids = [2] + [260 + i % 4 for i in range(20)]
    weights = {id(getattr(lay, n)) for lay in w.layers for n in (
        "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")}
    for n in range(1, 10):
        seen.clear()
        cache = KVCache(w, range(2))
        forward(w, ids[:5], cache)
        seen.clear()
        z = forward(w, ids[5:5 + n], cache, rows=range(n))
        assert z.shape == (n, w.cfg.V)
        assert {i for _, i in seen} == weights | {id(w.embed)}, n
        assert all(r == 0 for r, _ in seen) if n <= blas.GEMV_ROWS else all(
            r % blas.ROW_BLOCK == 0 for r, _ in seen), (n, sorted({r for r, _ in seen}))
