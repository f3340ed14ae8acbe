"""This machine's read bandwidth and f32 matrix rates, the two figures of a roofline
max(bytes / bandwidth, FLOPs / rate), measured here in NumPy the way a pass runs: BLAS held
to its thread cap (blas_limit) and the work in blas.PASS_THREADS concurrent threads
(blas.concurrently), as rows_by splits the head.

Three figures, each the best of its samples, by two clocks (CLOCKS: wall, the headline, and
the process's CPU time, summed over its threads: the CPU-seconds the work took, leaving out
time spent waiting for a core on a shared machine or for the slower thread; a figure by it
is per CPU-second, so with P busy threads about 1/P of the wall figure): bandwidth = bytes of
a 512 MB f32 matrix / the time of the faster of two reads of it, each split into P
concurrent parts, the pass's one-row product (blas.rows_by, the head's access pattern) and
a plain read (NumPy's max over each part), so a slow product cannot lower the bar (the
threads share one memory stream: on a quiet machine here a plain read of 671 MB ran at
24.5 GB/s by one thread and by two); the large-product rate = P * 2 * 512 * 2048 * 2048 /
the time of P such products run at once (the machine's ceiling: 99 GFLOP/s on one thread
here, 201 on two, quiet); and the rate of the pass's own n-row products, P threads each
multiplying a 2048 x d matrix that stays in cache (blas.rows_by, one part each),
P * 2 n 2048 d / time, the ceiling BLAS reaches on the shapes a pass is made of. A thread
that waits for a core holds back its figure's wall time as it holds back a split pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from .blas import PASS_THREADS, Tiled, blas_limit, concurrently, rows_by

CLOCKS = ("wall", "cpu")  # perf_counter, and the process's CPU time (process_time)
BIG_ROWS = 200_000  # rows of the bandwidth matrix (512 MB at d = 640: read from memory)
PRODUCT = (512, 2048, 2048)  # the large product's shape (m, k, n)
ROWS_W = 2048  # rows of the matrix the n-row products read (5 MB at d = 640: in cache)
RATE_REPEAT = 10  # n-row products per sample (each ~0.1-1 ms)
TICK = 1e-9  # s: the clocks' resolution


def timed(f: Callable[[], object]) -> tuple[float, float]:
    """(wall, process CPU) seconds of one run of f()."""
    t0, c0 = time.perf_counter(), time.process_time()
    f()
    return time.perf_counter() - t0, time.process_time() - c0


def plain_read(a: np.ndarray, *, parts: int = PASS_THREADS) -> None:
    """NumPy's max over a's bytes, one pass over them, split along a's first axis into
    `parts` ranges read at once."""
    concurrently([part.max for part in np.array_split(a, parts) if part.size])


def _keep(best: list[float], work: float, seconds: tuple[float, float]) -> None:
    """best[c] = max(best[c], work / seconds[c]) for each clock c (a clock that read 0 s
    counts as TICK)."""
    for c, t in enumerate(seconds):
        best[c] = max(best[c], work / max(t, TICK))


class Machine:
    """The three figures, one sample of each per sample() (so a benchmark can interleave
    them with what it measures), measured in `threads` concurrent threads; bw, peak and
    rate[n] hold the best per clock."""

    def __init__(self, *, d: int = 640, rows: Sequence[int] = tuple(range(1, 10)),
                 big_rows: int | None = None, threads: int = PASS_THREADS) -> None:
        rng = np.random.default_rng(0)
        m, k, n = PRODUCT
        self.threads = int(threads)
        self._big = Tiled(BIG_ROWS if big_rows is None else big_rows, d)
        self._big.tiles.fill(1.0)  # written: untouched zeros would read the kernel's zero page
        self._big.done()
        self._v = np.ones((1, d), np.float32)
        self._a = rng.standard_normal((m, k), dtype=np.float32)
        self._b = rng.standard_normal((k, n), dtype=np.float32)
        self._w = Tiled.of(rng.standard_normal((ROWS_W, d), dtype=np.float32))
        self._x = {r: rng.standard_normal((r, d), dtype=np.float32) for r in rows}
        self.bw = [0.0, 0.0]  # bytes/s, by clock
        self.peak = [0.0, 0.0]  # FLOP/s of the large products, by clock
        self.rate = {r: [0.0, 0.0] for r in rows}  # FLOP/s of r-row products, by clock

    @property
    def top(self) -> list[float]:
        """The fastest f32 matrix rate measured, by clock: the large product's or, where the
        pass's own n-row kernel runs faster, that one's (FLOP/s)."""
        return [max([self.peak[c]] + [r[c] for r in self.rate.values()])
                for c in range(len(CLOCKS))]

    def _at_once(self, f: Callable[[], object]) -> Callable[[], list]:
        """f run in self.threads threads at once."""
        return lambda: concurrently([f] * self.threads)

    def sample(self) -> None:
        m, k, n = PRODUCT
        p, big = self.threads, self._big
        with blas_limit():
            for read in (lambda: rows_by(self._v, big, parts=p),
                         lambda: plain_read(big.tiles, parts=p)):
                _keep(self.bw, big.nbytes, timed(read))
            _keep(self.peak, p * 2.0 * m * k * n, timed(self._at_once(lambda: self._a @ self._b)))
            for r, x in self._x.items():
                _keep(self.rate[r], p * RATE_REPEAT * 2.0 * r * ROWS_W * self._w.shape[1],
                      timed(self._at_once(
                          lambda x=x: [rows_by(x, self._w, parts=1) for _ in range(RATE_REPEAT)])))
