"""The pass's matrix products, y = x W^T over n rows, shaped the way BLAS runs them fast.

A pass multiplies a few rows (n = 1..k + 1 positions) by large weight matrices W (m, d),
each read once. NumPy's OpenBLAS (here its Haswell kernels) runs such skinny products far
below its peak, and unevenly: measured on this machine (CPU time, one thread, a 2048 x 640
matrix in cache), one matrix-vector product per row holds ~37 GFLOP/s at any n, and the
matrix product ~13-15 GFLOP/s at n = 2, 3 or 5 rows, ~32 at 4, ~56 at 8, ~68 at 12 and
~96 on a large square product. So the rows are multiplied in the shape that is fast:

  n <= GEMV_ROWS: one matrix-vector product per row, over CHUNK_BYTES of W's rows at a
                  time (the chunk stays in the core's own cache while every row reads
                  it: W leaves memory once; the head at 2 rows took 37 ms of CPU in
                  256-row chunks, 44 in 1024-row ones, 47 in 4096-row ones);
  n >  GEMV_ROWS: one matrix product on the rows padded with zero rows to a multiple of
                  ROW_BLOCK (the kernel's row unroll); the zero rows' outputs are dropped.

Every output element is still one dot product of a row of x with a row of W in f32, so
the result equals x @ W.T to float rounding (the order of a dot product's sum is the
kernel's). A pass holds BLAS to $SPECVIZ_BLAS_THREADS threads (default 1; threadpoolctl):
on a loaded 2-core machine a second BLAS thread made a pass 3-10x slower (waiting for a
core), not faster. The controller is made once: building one scans the loaded libraries.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from functools import cache

import numpy as np
from threadpoolctl import ThreadpoolController

BLAS_THREADS = int(os.environ.get("SPECVIZ_BLAS_THREADS", "1"))  # threads a pass may use
GEMV_ROWS = 3  # up to this many rows: one matrix-vector product per row
ROW_BLOCK = 4  # more rows: padded to a multiple of this (the BLAS kernel's row unroll)
CHUNK_BYTES = 256 * 640 * 4  # bytes of W per matrix-vector sweep (fits this CPU's 1 MB L2)
matmul = np.matmul  # every product here goes through this name (tests record the shapes)


@cache
def _controller() -> ThreadpoolController:
    return ThreadpoolController()


def blas_limit() -> AbstractContextManager:
    """Hold BLAS to BLAS_THREADS threads inside the with-block."""
    return _controller().limit(limits=BLAS_THREADS, user_api="blas")


def rows_by(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ w.T for x (n, d) f32 and w (m, d) f32 row-major; returns (n, m) f32, contiguous."""
    n = len(x)
    if n == 1:
        return matmul(w, x[0])[None]
    if n <= GEMV_ROWS:
        out = np.empty((n, len(w)), np.float32)
        step = max(1, CHUNK_BYTES // w[0].nbytes)  # rows of W per sweep
        for s in range(0, len(w), step):
            part = w[s: s + step]
            for i in range(n):
                matmul(part, x[i], out=out[i, s: s + step])
        return out
    pad = -n % ROW_BLOCK
    if pad == 0:
        return matmul(x, w.T)
    xp = np.zeros((n + pad, x.shape[1]), np.float32)
    xp[:n] = x
    return np.ascontiguousarray(matmul(xp, w.T)[:n])
