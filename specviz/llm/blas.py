"""The pass's matrix products, y = x W^T over n rows, in the layout BLAS runs them fast.

A pass multiplies a few rows (n = 1..k + 1 positions) by large weight matrices W (m, d),
each read once, so it is bound by reading W and, at more rows, by the multiply-adds. Held
as the file has it (row-major, one output per row), NumPy's OpenBLAS runs these skinny
products far below both bounds: measured here (AMD EPYC with AVX-512, one thread, CPU
time) W @ x read the 671 MB head at ~14 GB/s where a plain read of it ran at ~30, and
x @ W^T packs W before multiplying, 14-25 GFLOP/s at 5-9 rows against ~90 on a large
product.

So every weight matrix is held Tiled: tiles[b] = W[bR: (b + 1)R]^T, (m / R, d, R) with
R = tile_rows(d), contiguous. x W^T is one stacked product x @ tiles (NumPy loops BLAS over the
tiles in C), each a row-major (n, d) x (d, R) product with alpha 1 and beta 0, which
OpenBLAS on an AVX-512 CPU runs by its direct kernel: no packing, each tile streamed from
memory once while every row multiplies it (in cache, 75-100 GFLOP/s at 4-12 rows for
R = 64 or 128; 40-60 at 7-12 rows for R = 256, ~27-50 for R = 512). Measured here on the
head: 2 rows in 21-27 ms (a plain read of it: 22-27 ms), 9 rows in 40-46 ms, where the old
layout took 47-53 ms for one row. The kernel walks x's rows in blocks of 4, then 2, then 1,
and each block reads the whole tile: only the first 4 rows ride on the stream from memory,
the others multiply the tile from cache after it, with the stream idle. So a product over
n > 4 rows (n made even) costs about bytes / bandwidth + (n - 4) rows' FLOPs / rate, not
the max of the two (measured here on the head, one thread, CPU time: 22-23 ms at 1-4
rows, a plain read 22; 29 at 5-6, 34-35 at 7-8, 41 at 9). A lone row is slower (3 rows
took 31-39 ms, 4 rows 23-27), so an odd count gets a zero row. Matrices of a layer lie in
one block (Tiled.many) and those a pass multiplies by the same rows are one product (rows_by_each).
Each output is one dot product of a row of x with a row of W in f32, so the result equals
x @ W.T to float rounding.

A pass holds BLAS to $SPECVIZ_BLAS_THREADS threads (default 1; threadpoolctl): on a
loaded 2-core machine a second BLAS thread made a pass 3-10x slower (waiting for a core),
and OpenBLAS leaves the direct kernel for the packing one when it may use more threads.
The controller is made once: building one scans the loaded libraries. Its limit is
OpenBLAS's own setting, one for the process, so it holds in every thread.

Instead, a matrix of at least split_from bytes (the head and a trimmed draft head; the
layers' products of 2.6-10.5 MB too where that is faster, below) is split: its tiles in
$SPECVIZ_PASS_THREADS contiguous ranges (default 2 where the process may run on 2 or more
cores, else 1), each multiplied into its own columns of the output at once, one in the
calling thread and the others on a pool kept by this module (NumPy's matmul releases the
GIL), each still one BLAS thread on the direct kernel. While one range's rows past the
fourth are multiplied from cache, the other's tiles stream, so the memory stream need not
wait for them. Each output is the same dot product, computed by the same kernel on the same
tile, so the result equals the unsplit product bit for bit. Measured here on a quiet machine
(2 cores, wall clock): a plain read of the 671 MB head ran at 24.5 GB/s by one thread and by
two (the threads share one memory stream), a large f32 product at 99 GFLOP/s on one thread
and 201 on two, and the head in two ranges took 19.8/20.3/20.9/23.0/25.4/30.0 ms at
1/2/4/5/7/9 rows, against 21.7/23.4/22.6/33.0/34.9/52.5 in one. The same machine on a day
its memory was slow read 512 MB at 8.6 GB/s by one thread and 16.7 by two: one thread no
longer filled the stream, and the layers' products, split too, made a pass (best of 7,
context 256) 117/168/200 ms -> 98/145/177 at 1/5/9 positions. On the quiet day splitting
them had cost 0.4-2 ms a pass at 1-5 rows and gained nothing at 9 (load 2.4-4); handing a
range to the pool and waiting for it costs 13-21 us, 72 times a pass. On another host
(AMD EPYC, a virtual machine, reading 512 MB at ~30 GB/s by one thread) that hand-off took
55-150 us (a sleeping thread woken), and the layers split made a decode step 49-56 ms
against 36-44 whole. So the head is split, and the layers' products from SPLIT_BYTES on
only where choose_split (forward.tune_split, once at load) timed them faster split: the
choice changes the time, not one bit of a result. On a loaded machine the product waits
for the slower range: one whose thread waits for a core delays it by as long (at a load
average near 4 on 2 cores the head ran split within 3% of unsplit at 1, 5 and 9 rows; near
2.4, 23/27/32 ms against 23/33/45).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from functools import cache
from itertools import pairwise
from weakref import WeakKeyDictionary

import numpy as np
from threadpoolctl import ThreadpoolController

BLAS_THREADS = int(os.environ.get("SPECVIZ_BLAS_THREADS", "1"))  # BLAS threads per product
PASS_THREADS = max(1, int(os.environ.get(  # threads a large product is split over
    "SPECVIZ_PASS_THREADS", "2" if len(os.sched_getaffinity(0)) >= 2 else "1")))
SPLIT_BYTES = 2**20  # the smallest matrix ever split (PASS_THREADS parts)
CHOOSE_REPS = 5  # runs of each way choose_split times (~15-30 ms each: a pass's layers)
split_from = SPLIT_BYTES  # rows_by splits a matrix of at least this many bytes (choose_split)
TILE = 64  # rows of W per tile (R) while a tile holds at most TILE_BYTES, else TILE // 2
TILE_BYTES = 640 * TILE * 4  # 160 KiB: wider tiles ran 2-3x slower at 8-10 rows
matmul = np.matmul  # every product here goes through this name (tests record the shapes)


@cache
def _controller() -> ThreadpoolController:
    return ThreadpoolController()


def blas_limit() -> AbstractContextManager:
    """Hold BLAS to BLAS_THREADS threads inside the with-block."""
    return _controller().limit(limits=BLAS_THREADS, user_api="blas")


_POOL = ThreadPoolExecutor(max(1, PASS_THREADS - 1), thread_name_prefix="specviz-pass")


def concurrently(fns: Sequence[Callable[[], object]]) -> list:
    """[f() for f in fns], the first in this thread and the others at once on the module's
    pool of PASS_THREADS - 1 threads (more queue there); returns when all have, their
    results in order."""
    later = [_POOL.submit(f) for f in fns[1:]]
    first = fns[0]() if fns else None
    return ([first] if fns else []) + [f.result() for f in later]


def tile_rows(d: int) -> int:
    """R for a matrix of row length d: TILE, or TILE // 2 where a tile would pass TILE_BYTES."""
    return TILE if d * TILE * 4 <= TILE_BYTES else TILE // 2


def tiles_shape(m: int, d: int) -> tuple[int, int, int]:
    """(ceil(m / R), d, R): the tiles of W (m, d)."""
    r = tile_rows(d)
    return -(-int(m) // r), int(d), r


class Tiled:
    """W (m, d) f32 held as tiles[b] = W[b R: (b + 1) R].T, (ceil(m / R), d, R) with
    R = tile_rows(d), C-contiguous, the last tile's missing rows zero. Filled by put(),
    then read-only."""

    def __init__(self, m: int, d: int, memory: np.ndarray | None = None) -> None:
        """Zero tiles for W (m, d), or its tiles in memory (f32, ceil(m / R) d R) if given."""
        self.m, shape = int(m), tiles_shape(m, d)
        self.tiles = (np.zeros(shape, np.float32) if memory is None
                      else memory.reshape(shape))  # (m / R, d, R)

    @classmethod
    def many(cls, shapes: Sequence[tuple[int, int]]) -> list[Tiled]:
        """Zero Tiled matrices of these shapes, their tiles one after another in one block of
        memory (large enough for the kernel's huge pages). Read in this order, they stream:
        the 126 matrices of the layers as separate arrays of 0.7-5 MB read at ~20 GB/s here,
        in one block at ~26 (a plain read: ~25-30)."""
        sizes = [math.prod(tiles_shape(m, d)) for m, d in shapes]
        memory = np.zeros(sum(sizes), np.float32)
        ends = np.cumsum(sizes)
        return [cls(m, d, memory[e - size: e])
                for (m, d), size, e in zip(shapes, sizes, ends, strict=True)]

    @classmethod
    def of(cls, w: np.ndarray) -> Tiled:
        """W (m, d) tiled (a copy), read-only."""
        t = cls(*w.shape)
        t.put(0, w)
        return t.done()

    def put(self, start: int, rows: np.ndarray) -> None:
        """W[start: start + len(rows)] = rows (start a multiple of R)."""
        r = self.tiles.shape[2]
        if start % r:
            raise ValueError(f"rows are put at multiples of {r}; got {start}")
        b, n = start // r, len(rows)
        full = n - n % r
        self.tiles[b: b + full // r].transpose(0, 2, 1)[...] = rows[:full].reshape(
            -1, r, rows.shape[1])
        if n > full:
            self.tiles[b + full // r, :, : n - full] = rows[full:].T

    def done(self) -> Tiled:
        self.tiles.setflags(write=False)  # shared by every session
        return self

    @property
    def shape(self) -> tuple[int, int]:
        return self.m, self.tiles.shape[1]

    @property
    def nbytes(self) -> int:
        return int(self.tiles.nbytes)

    def rows(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """W[ids], (len(ids), d) f32 (a copy)."""
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.m):
            raise IndexError(f"row ids must lie in 0..{self.m - 1}")
        r = self.tiles.shape[2]
        return self.tiles[ids // r, :, ids % r]


def rows_by(x: np.ndarray, w: Tiled, *, parts: int | None = None) -> np.ndarray:
    """x @ W.T for x (n, d) f32; returns (n, m) f32, rows contiguous. The tiles are split into
    `parts` contiguous ranges multiplied concurrently, each into its own columns (default:
    PASS_THREADS where W holds at least split_from bytes, else one)."""
    n = len(x)
    nb, d, r = w.tiles.shape
    rows = n + n % 2  # the kernel's pairs of rows: an odd count gets a zero row
    xs = np.zeros((rows, d), np.float32)
    xs[:n] = x
    out = np.empty((rows, nb * r), np.float32)
    by_tile = out.reshape(rows, nb, r).transpose(1, 0, 2)  # tile b -> cols b R .. (b + 1) R
    if parts is None:
        parts = PASS_THREADS if w.nbytes >= split_from else 1
    if parts <= 1:
        matmul(xs, w.tiles, out=by_tile)
    else:
        ends = [nb * i // parts for i in range(parts + 1)]  # tile ranges, sizes within one
        concurrently([lambda a=a, b=b: matmul(xs, w.tiles[a:b], out=by_tile[a:b])
                      for a, b in pairwise(ends) if b > a])
    return out[:n] if w.m == nb * r else np.ascontiguousarray(out[:n, : w.m])


def split_ways(above: int) -> tuple[int, int]:
    """The two split_from values choose_split weighs: every matrix from SPLIT_BYTES on split,
    and only those over `above` bytes."""
    return SPLIT_BYTES, max(SPLIT_BYTES, int(above) + 1)


def choose_split(run: Callable[[], object], *, above: int, reps: int = CHOOSE_REPS) -> int:
    """Time run() (a pass's products) with every matrix from SPLIT_BYTES on split and with
    only those over `above` bytes split (the head), interleaved, best of reps each by the
    wall clock; keep the faster as split_from and return it. The results are the same bit
    for bit either way: only the time differs, and which way wins depends on the machine."""
    global split_from
    ways = split_ways(above)
    best = dict.fromkeys(ways, math.inf)
    for _ in range(reps if PASS_THREADS > 1 else 0):
        for way in ways:
            split_from = way
            t0 = time.perf_counter()
            run()
            best[way] = min(best[way], time.perf_counter() - t0)
    split_from = min(ways, key=lambda way: (best[way], way))
    return split_from


# first part -> (the other parts' ids -> (those parts, their joined Tiled or None))
_joined: WeakKeyDictionary[Tiled, dict] = WeakKeyDictionary()


def joined(parts: Sequence[Tiled]) -> Tiled | None:
    """One Tiled over the parts' tiles where they lie one after another in one block with
    one shape (as Tiled.many lays out a layer's q, k and v), else None; found once per
    parts and looked up after (kept while the first part lives, with the others held so
    that their ids stay theirs)."""
    known = _joined.setdefault(parts[0], {})
    key = tuple(id(w) for w in parts[1:])
    if key not in known:
        tiles = [w.tiles for w in parts]
        block, (d, r) = tiles[0].base, tiles[0].shape[1:]
        at = [t.__array_interface__["data"][0] for t in tiles]
        ends = at[1:] + [at[-1] + tiles[-1].nbytes]
        if block is None or block.ndim != 1 or any(
                t.base is not block or t.shape[1:] != (d, r) or a + t.nbytes != b
                for t, a, b in zip(tiles, at, ends, strict=True)):
            known[key] = (tuple(parts[1:]), None)
        else:
            nb = sum(len(t) for t in tiles)
            first = (at[0] - block.__array_interface__["data"][0]) // 4  # f32 offset
            known[key] = (tuple(parts[1:]), Tiled(nb * r, d, block[first: first + nb * d * r]))
    return known[key][1]


def rows_by_each(x: np.ndarray, parts: Sequence[Tiled]) -> list[np.ndarray]:
    """[rows_by(x, w) for w in parts], as one stacked product where the parts' tiles lie one
    after another in one block with one shape (joined): one longer stream instead of short
    ones (q, k and v, 2 MB a layer, took ~2.8 ms a pass here as three products). Equal to
    the products one by one, bit for bit."""
    whole = joined(parts)
    if whole is None:
        return [rows_by(x, w) for w in parts]
    y = rows_by(x, whole)
    out = []
    for w in parts:
        out.append(y[:, : w.m])
        y = y[:, len(w.tiles) * w.tiles.shape[2]:]
    return out
