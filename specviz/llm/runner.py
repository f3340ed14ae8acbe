"""One model over its own KV cache: logits at any prefix, the cache reused across calls.

A Runner is the target (every layer, the full head) or a draft (a subset of the layers,
and the full head or a trimmed one). Asked for the logits at prefixes tokens[:j], it keeps
the cached positions that tokens shares with what the cache holds, rolls back the rest
(rejected drafts), and runs the missing positions as one block, computing the head only at
the positions asked for. Every pass is timed (passes), so the cost ratio c is measured.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence

import numpy as np

from .blas import Tiled
from .forward import KVCache, forward
from .gemma import Weights

CONTEXT_MAX = 2048  # positions a runner may hold (prompt and generated together)
KEPT_LOGITS = 80  # logits rows kept per runner, newest prefixes first (1 MB each at full V)
TIMED_PASSES = 4096  # passes whose (positions, heads, seconds) are kept (a decode: ~1,100)


def common_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens a and b share."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if len(diff) else n


class Runner:
    """Logits of one model (layers, head) at prefixes, over one KV cache (not shared
    between threads: each caller owns its runners; the weights are shared)."""

    def __init__(self, w: Weights, layers: Sequence[int] | None = None,
                 head_ids: np.ndarray | None = None) -> None:
        self.w = w
        self.layers = tuple(range(w.cfg.n_layers)) if layers is None else tuple(layers)
        self.head_ids = None if head_ids is None else np.asarray(head_ids, dtype=np.int64)
        self.head = None if head_ids is None else Tiled.of(w.embed.rows(self.head_ids))
        self.cache = KVCache(w, self.layers)
        self.tokens: list[int] = []  # what the cache holds
        self._logits: dict[int, np.ndarray] = {}  # prefix length -> logits (V_head,)
        self.passes: deque[tuple[int, int, float]] = deque(maxlen=TIMED_PASSES)
        self._lock = threading.Lock()

    def rollback(self, n: int) -> None:
        """Forget every position from n on."""
        self.cache.truncate(n)
        del self.tokens[n:]
        for j in [j for j in self._logits if j > n]:
            del self._logits[j]

    def forget(self) -> None:
        """Drop the logits kept for earlier prefixes (the KV cache stays)."""
        with self._lock:
            self._logits.clear()

    def logits(self, tokens: Sequence[int], lengths: Sequence[int]) -> list[np.ndarray]:
        """Logits at the prefixes tokens[:j] for j in lengths (each 1..len(tokens)), from at
        most one block pass. Each (V_head,) f32, read-only."""
        tokens = [int(t) for t in tokens]
        lengths = [int(j) for j in lengths]
        if not lengths or min(lengths) < 1 or max(lengths) > len(tokens):
            raise ValueError(f"prefix lengths must lie in 1..{len(tokens)}; got {lengths}")
        end = max(lengths)
        if end > CONTEXT_MAX:
            raise ValueError(f"the context holds {end} tokens; the cap is {CONTEXT_MAX}")
        with self._lock:
            m = common_length(self.tokens, tokens[:end])
            missing = sorted({j for j in lengths if j > m or j not in self._logits})
            if missing:
                t = min(m, missing[0] - 1)
                self.rollback(t)
                t0 = time.perf_counter()
                out = forward(self.w, tokens[t:end], self.cache,
                              rows=[j - 1 - t for j in missing], head=self.head)
                self.passes.append((end - t, len(missing), time.perf_counter() - t0))
                self.tokens = tokens[:end]
                for j, row in zip(missing, out, strict=True):
                    row.setflags(write=False)
                    self._logits[j] = row
                for j in sorted(self._logits)[:-KEPT_LOGITS]:
                    del self._logits[j]
            return [self._logits[j] for j in lengths]

    def full_row(self, z: np.ndarray) -> np.ndarray:
        """Logits over the whole vocabulary: a trimmed head's rows in place, -inf elsewhere."""
        if self.head_ids is None:
            return z
        out = np.full(self.w.cfg.V, -np.inf, dtype=np.float32)
        out[self.head_ids] = z
        return out
