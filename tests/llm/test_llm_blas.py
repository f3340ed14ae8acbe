"""blas: the Tiled layout and rows_by, the pass's products: x @ W^T to f32 rounding at every
row count and shape (a ragged last tile too), W's rows and W itself read back exactly, the
layers' matrices in one block of memory, and the products a pass hands BLAS (one stacked
product over a matrix's tiles, an even number of rows), the fast ones on this machine
(benchmarks/bench_llm.py measures them). Fast: small random matrices and the tiny model of
test_llm_tiny."""

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


@pytest.mark.parametrize("m, d", [(37, 40), (128, 8), (200, 640), (70, 1024)])
@pytest.mark.parametrize("n", range(1, 10))
def test_rows_by_is_x_times_w_transposed(n, m, d):
    rng = np.random.default_rng(n * m + d)
    x = rng.standard_normal((n, d), dtype=np.float32)
    w = rng.standard_normal((m, d), dtype=np.float32)
    got = blas.rows_by(x, blas.Tiled.of(w))
    exact = x.astype(np.float64) @ w.astype(np.float64).T
    assert got.shape == (n, m) and got.dtype == np.float32 and got.flags.c_contiguous
    assert np.all(np.abs(got - exact) <= bound(x, w))


def test_tiles_hold_w_exactly_and_read_only():
    rng = np.random.default_rng(0)
    for m, d in ((37, 40), (64, 8), (130, 2048)):
        w = rng.standard_normal((m, d), dtype=np.float32)
        t = blas.Tiled.of(w)
        r = blas.tile_rows(d)
        assert t.shape == (m, d) and t.tiles.shape == (-(-m // r), d, r)
        assert np.array_equal(t.rows(np.arange(t.m)), w)
        ids = [m - 1, 0, r - 1 if r < m else 0, m // 2]
        assert np.array_equal(t.rows(ids), w[ids])
        assert np.array_equal(t.tiles[0, :, 1], w[1])  # tile b holds rows b R .. as columns
        assert not t.tiles.flags.writeable
        with pytest.raises(IndexError):
            t.rows([m])
    assert blas.tile_rows(640) == blas.TILE and blas.tile_rows(2048) == blas.TILE // 2


def test_many_matrices_share_one_block_of_memory_in_order():
    shapes = [(128, 640), (64, 640), (640, 2048)]
    ts = blas.Tiled.many(shapes)
    base = ts[0].tiles.base
    assert all(t.tiles.base is base for t in ts)
    starts = [t.tiles.__array_interface__["data"][0] for t in ts]
    assert starts == sorted(starts)
    assert [t.shape for t in ts] == shapes and not np.any(base)


def test_rows_by_each_is_one_product_where_the_tiles_lie_in_order(monkeypatch):
    """The parts' products, bit for bit, from one stacked product over their tiles when they
    lie one after another in one block (Tiled.many), else one product each."""
    rng = np.random.default_rng(1)
    calls = []
    monkeypatch.setattr(blas, "matmul", lambda a, b, **kw: calls.append(b.shape) or np.matmul(
        a, b, **kw))
    for shapes in ([(128, 40), (64, 40), (64, 40)], [(8, 8), (4, 8), (4, 8)]):
        ws = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
        block = blas.Tiled.many(shapes)
        for t, w in zip(block, ws, strict=True):
            t.put(0, w)
        apart = [blas.Tiled.of(w) for w in ws]
        for n in (1, 2, 5):
            x = rng.standard_normal((n, shapes[0][1]), dtype=np.float32)
            calls.clear()
            together = blas.rows_by_each(x, block)
            assert len(calls) == 1 and calls[0][0] == sum(len(t.tiles) for t in block)
            alone = [blas.rows_by(x, w) for w in apart]
            calls.clear()
            assert all(np.array_equal(a, b) for a, b in zip(
                blas.rows_by_each(x, apart), alone, strict=True)) and len(calls) == 3
            for got, want, w in zip(together, alone, ws, strict=True):
                assert got.shape == (n, len(w)) and np.array_equal(got, want)
            calls.clear()  # the first and the last do not lie one after the other
            ends = blas.rows_by_each(x, [block[0], block[2]])
            assert len(calls) == 2 and all(np.array_equal(a, b) for a, b in zip(
                ends, [alone[0], alone[2]], strict=True))


def span(a: np.ndarray) -> tuple[int, int]:
    start = a.__array_interface__["data"][0]
    return start, start + a.nbytes


def test_a_pass_hands_blas_stacked_tile_products_of_even_rows(tmp_path, monkeypatch):
    """Every product of a pass with a weight matrix goes through rows_by, and BLAS sees one
    stacked product over the matrix's tiles (q, k, v and gate, up as one) with an even
    number of rows: never the W @ x or x @ W^T that ran 2-4x slower."""
    from specviz.llm import store
    m = store.read_model(write_tiny(tmp_path / "t.gguf"))
    w = m.weights
    seen: list[tuple[int, tuple[int, int]]] = []  # (rows of the left operand, tiles' bytes)

    def record(a, b, **kw):
        seen.append((a.shape[0], span(b)))
        assert b.ndim == 3 and a.ndim == 2 and a.shape[1] == b.shape[1], (a.shape, b.shape)
        return np.matmul(a, b, **kw)

    monkeypatch.setattr(blas, "matmul", record)
    ids = [2] + [260 + i % 4 for i in range(20)]
    names = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
    weights = [span(getattr(lay, n).tiles) for lay in w.layers for n in names]
    for n in range(1, 10):
        cache = KVCache(w, range(2))
        forward(w, ids[:5], cache)
        seen.clear()
        z = forward(w, ids[5:5 + n], cache, rows=range(n))
        assert z.shape == (n, w.cfg.V)
        read = {s for _, s in seen}
        assert span(w.embed.tiles) in read and len(seen) == 1 + 4 * len(w.layers), n
        assert all(any(a <= lo and hi <= b for a, b in read) for lo, hi in weights), n
        assert all(r % 2 == 0 and r - n in (0, 1) for r, _ in seen), (n, seen)


def ragged(m: int, d: int, seed: int) -> tuple[np.ndarray, blas.Tiled]:
    """A random W (m, d) f32 and its Tiled copy."""
    w = np.random.default_rng(seed).standard_normal((m, d), dtype=np.float32)
    return w, blas.Tiled.of(w)


@pytest.mark.parametrize("m, d", [(37, 40), (200, 640), (450, 24), (70, 1024)])
def test_a_split_product_equals_the_unsplit_one_bit_for_bit(m, d):
    """Each output is the same dot product by the same kernel on the same tile, whichever
    part multiplies it: the tile ranges (a ragged last tile too) multiplied at once give
    exactly the one-part product, at odd and even row counts, however many parts (more
    parts than tiles too)."""
    w, t = ragged(m, d, m + d)
    rng = np.random.default_rng(d)
    with blas.blas_limit():
        for n in range(1, 10):
            x = rng.standard_normal((n, d), dtype=np.float32)
            one = blas.rows_by(x, t, parts=1)
            assert np.all(np.abs(one - x.astype(np.float64) @ w.astype(np.float64).T)
                          <= bound(x, w))
            for parts in (2, 3, len(t.tiles) + 2):
                got = blas.rows_by(x, t, parts=parts)
                assert got.shape == (n, m) and got.flags.c_contiguous
                assert np.array_equal(got, one), (n, parts)


def test_a_matrix_is_split_from_split_from_on(monkeypatch):
    """At split_from bytes and above, rows_by hands BLAS PASS_THREADS products over contiguous
    tile ranges that cover W once, each in its own thread at once (the first in the caller's);
    below, one product in the caller's thread. The result is the same either way."""
    import threading
    w, t = ragged(450, 24, 3)  # 8 tiles, the last partial
    calls: list[tuple[int, int, int]] = []  # (first tile's address, tiles, thread)
    monkeypatch.setattr(blas, "matmul", lambda a, b, **kw: calls.append(
        (b.__array_interface__["data"][0], len(b), threading.get_ident()))
        or np.matmul(a, b, **kw))
    monkeypatch.setattr(blas, "PASS_THREADS", 2)
    x = np.random.default_rng(4).standard_normal((5, 24), dtype=np.float32)
    base, size = t.tiles.__array_interface__["data"][0], t.tiles[0].nbytes
    with blas.blas_limit():
        got = {}
        for limit, parts in ((t.nbytes + 1, 1), (t.nbytes, 2), (t.nbytes - 1, 2)):
            monkeypatch.setattr(blas, "split_from", limit)
            calls.clear()
            got[limit] = blas.rows_by(x, t)
            assert len(calls) == parts, limit
            ranges = sorted(((a - base) // size, n) for a, n, _ in calls)
            assert ranges == {1: [(0, 8)], 2: [(0, 4), (4, 4)]}[parts]
            assert len({who for *_, who in calls}) == parts
            assert threading.get_ident() in {who for *_, who in calls}
    assert all(np.array_equal(g, got[t.nbytes]) for g in got.values())
    assert np.array_equal(got[t.nbytes], blas.rows_by(x, t, parts=1))


def test_the_blas_limit_holds_in_the_pools_threads():
    """threadpoolctl's limit is OpenBLAS's one setting for the process: a range multiplied on
    the pool runs under the same BLAS_THREADS as the caller, whether the caller is the main
    thread or another (a server's session)."""
    import threading

    from threadpoolctl import threadpool_info

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    def both():
        with blas.blas_limit():
            return blas.concurrently([blas_threads, blas_threads])

    seen = [both()]
    other = threading.Thread(target=lambda: seen.append(both()))
    other.start()
    other.join()
    assert seen == [[{blas.BLAS_THREADS}] * 2] * 2


@pytest.mark.parametrize("layers_split", [True, False])
def test_a_real_pass_splits_the_head_and_the_layers_as_chosen(model, monkeypatch, layers_split):
    """On Gemma 3 270M each product of a pass (q, k, v; the output; gate, up; down; the head)
    holds at least SPLIT_BYTES, so with two pass threads and split_from at SPLIT_BYTES each is
    two products at once, one in each thread: 2 x (4 x 18 + 1) a pass; with split_from above
    the layers' products (as tune_split may choose) only the head is: 4 x 18 + 2. At one
    position and at five; the logits the same bit for bit either way."""
    import threading
    w = model.weights
    calls: list[int] = []  # the thread of each product
    monkeypatch.setattr(blas, "matmul", lambda a, b, **kw: calls.append(
        threading.get_ident()) or np.matmul(a, b, **kw))
    monkeypatch.setattr(blas, "PASS_THREADS", 2)
    largest = max(lw.ffn_gate.nbytes + lw.ffn_up.nbytes for lw in w.layers)
    chosen = blas.SPLIT_BYTES if layers_split else largest + 1
    per_layer = 4 * w.cfg.n_layers
    for n in (1, 5):
        logits = []
        for split_from in (chosen, blas.SPLIT_BYTES):
            monkeypatch.setattr(blas, "split_from", split_from)
            cache = KVCache(w, range(w.cfg.n_layers))
            forward(w, [w.cfg.bos, 1000, 2000], cache)
            calls.clear()
            logits.append(forward(w, list(range(3000, 3000 + n)), cache, rows=range(n)))
            if len(logits) == 1:
                assert len(calls) == (2 * (per_layer + 1) if layers_split else per_layer + 2)
                assert calls.count(threading.get_ident()) == per_layer + 1, n
        assert np.array_equal(*logits), n


def test_choose_split_keeps_the_faster_way(monkeypatch):
    """choose_split times run() with every matrix from SPLIT_BYTES on split and with only
    those over `above` split, and keeps the faster as split_from: a run made slow while the
    layers are split leaves them whole, and the other way round."""
    import time
    monkeypatch.setattr(blas, "PASS_THREADS", 2)
    above = 10 * blas.SPLIT_BYTES
    for slow_when_split, want in ((True, above + 1), (False, blas.SPLIT_BYTES)):
        seen = []

        def run(slow_when_split=slow_when_split, seen=seen):
            seen.append(blas.split_from)
            if (blas.split_from == blas.SPLIT_BYTES) == slow_when_split:
                time.sleep(0.02)

        assert blas.choose_split(run, above=above, reps=3) == want == blas.split_from
        assert sorted(set(seen)) == [blas.SPLIT_BYTES, above + 1] and len(seen) == 6
    monkeypatch.setattr(blas, "PASS_THREADS", 1)  # nothing to split: nothing timed
    assert blas.choose_split(lambda: 1 / 0, above=above) == blas.SPLIT_BYTES


def test_tune_split_times_every_product_of_the_layers_and_not_the_head(model, monkeypatch):
    """tune_split runs one row through each layer's products as a pass multiplies them
    (q, k, v as one; the output; gate, up as one; down), never the head, and chooses between
    SPLIT_BYTES and just above the largest of those products."""
    from specviz.llm.forward import tune_split
    w = model.weights
    monkeypatch.setattr(blas, "PASS_THREADS", 2)
    shapes: list[tuple[int, ...]] = []
    monkeypatch.setattr(blas, "matmul", lambda a, b, **kw: shapes.append(b.shape) or np.matmul(
        a, b, **kw))
    before = blas.split_from
    try:
        chosen = tune_split(w)
    finally:
        blas.split_from = before
    largest = max(lw.ffn_gate.nbytes + lw.ffn_up.nbytes for lw in w.layers)
    assert chosen in (blas.SPLIT_BYTES, largest + 1)
    head_tiles = len(w.embed.tiles)
    assert all(s[0] < head_tiles for s in shapes)
    tiles = sum(sum(len(t.tiles) for t in (lw.attn_q, lw.attn_k, lw.attn_v, lw.attn_output,
                                           lw.ffn_gate, lw.ffn_up, lw.ffn_down))
                for lw in w.layers)
    assert sum(s[0] for s in shapes) == 2 * blas.CHOOSE_REPS * tiles
