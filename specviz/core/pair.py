"""Two models over one vocabulary: the interface every round is written against.

A pair answers, at a prefix (a sequence of token ids, newest last):
  p(prefix), q(prefix)   the target's and the draft's next-token rows, (V,) each
  key(prefix)            what the two models read of the prefix (a cache key): the last
                         token for a table, the last n - 1 tokens for an n-gram
  propose(prefix, k)     a deterministic proposal of up to k tokens, or None when the
                         draft samples from q (prompt lookup proposes)
  stop(prefix, drafts)   before each draft a chain or block round draws: None to draw it,
                         or why the round drafts no more (a draft-side stop, core.stop)
  score(prefix, tails)   told which rows are about to be read (prefix + t, t in tails)
and names its tokens. TablePair holds V x V tables (row = the last token); the n-gram
pair lives in specviz.text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from functools import cached_property

import numpy as np

from .sampling import draw_row
from .tables import VOCAB, check_ctx, token_name, validate_pair

CACHE_BYTES = 64 * 2**20  # rows a pair may cache (rejection laws), in bytes of float64


class RowCache:
    """Rows by key, emptied when full: bounded by bytes, safe to share between threads
    (a row may be recomputed, never corrupted). Rows are read-only."""

    def __init__(self, V: int, cache_bytes: int = CACHE_BYTES) -> None:
        self.max_rows = max(16, int(cache_bytes) // (8 * max(1, V)))
        self._rows: dict[Hashable, np.ndarray] = {}

    @property
    def nbytes(self) -> int:
        """Bytes of the rows kept, each row once."""
        rows = list(self._rows.values())
        return sum(r.nbytes for r in {id(r): r for r in rows}.values())

    def __contains__(self, key: Hashable) -> bool:
        return key in self._rows

    def get(self, key: Hashable, make) -> np.ndarray:
        row = self._rows.get(key)
        if row is None:
            row = make()
            row.setflags(write=False)
            if len(self._rows) >= self.max_rows:
                self._rows.clear()
            self._rows[key] = row
        return row


class ModelPair:
    """The interface (and its defaults). Subclasses give V, names, p, q and key."""

    V: int
    names: tuple[str, ...]
    fingerprint: str  # identifies the pair's models for caches

    def p(self, prefix: Sequence[int]) -> np.ndarray:  # (V,)
        raise NotImplementedError

    def q(self, prefix: Sequence[int]) -> np.ndarray:  # (V,)
        raise NotImplementedError

    def key(self, prefix: Sequence[int]) -> tuple:
        raise NotImplementedError

    def propose(self, prefix: Sequence[int], k: int) -> tuple[int, ...] | None:
        return None

    def stop(self, prefix: Sequence[int], drafts: Sequence[int]) -> str | None:
        """Asked before the round at prefix draws draft len(drafts) + 1 from q: None to
        draw it, or why the round stops drafting here (fewer than k). It reads what the
        draft knows (its rows, the drafts so far), never the round's later draws or coins:
        then k is a stopping time of the drafts and each round stays exact (Leviathan et al.
        2022, Algorithm 1 with k varying; core.stop). Default: draft all k."""
        return None

    def score(self, prefix: Sequence[int], tails: Sequence[Sequence[int]], *,
              which: str = "p") -> None:
        """Told before p (which = "q": q) is read at prefix + t for each t in tails: a pair
        whose model scores many prefixes in one call (a transformer) computes those rows
        here, in one pass: a chain's k + 1 prefixes, or every node of a token tree (tree
        attention). A table needs nothing: the default."""

    def draw_p(self, prefix: Sequence[int], u: float) -> int:
        return draw_row(self.p(prefix), u)

    def draw_q(self, prefix: Sequence[int], u: float) -> int:
        return draw_row(self.q(prefix), u)

    cache_bytes = CACHE_BYTES  # what its rejection laws may hold

    @property
    def rejections(self) -> RowCache:
        if getattr(self, "_rejections", None) is None:
            self._rejections = RowCache(self.V, self.cache_bytes)
        return self._rejections

    def name(self, x: int) -> str:
        return token_name(self.names, x)

    def check_prefix(self, prefix: int | Sequence[int]) -> list[int]:
        """A prefix as a list of token ids; a single int is a one-token prefix."""
        if isinstance(prefix, (int, np.integer)) and not isinstance(prefix, bool):
            return [check_ctx(prefix, self.V)]
        if isinstance(prefix, (str, bytes)) or not isinstance(prefix, Sequence):
            raise ValueError(f"a prefix must be a token id or a sequence of them; got {prefix!r}")
        ids = [check_ctx(t, self.V) for t in prefix]
        if not ids:
            raise ValueError("the prompt must hold at least one token")
        return ids


class TablePair(ModelPair):
    """V x V tables: p(. | prefix) = P[prefix[-1]], q(. | prefix) = Q[prefix[-1]]."""

    def __init__(self, P: np.ndarray, Q: np.ndarray, vocab: Sequence[str] | None = None):
        names = tuple(vocab) if vocab is not None else None
        self.P, self.Q = validate_pair(P, Q, names)
        self.V = self.P.shape[0]
        default = VOCAB if self.V == len(VOCAB) else tuple(str(i) for i in range(self.V))
        self.names = default if names is None else names

    @cached_property
    def fingerprint(self) -> str:
        """Identifies the pair for caches: a hash of both tables and the names."""
        return self._digest(self.P, self.Q)

    @cached_property
    def target_fingerprint(self) -> str:
        """Identifies the target table alone (and the names), for what never reads Q."""
        return self._digest(self.P)

    def _digest(self, *tables: np.ndarray) -> str:
        data = [t.tobytes() for t in tables] + ["\x1f".join(self.names).encode()]
        return hashlib.sha256(b"".join(data)).hexdigest()[:20]

    def p(self, prefix: Sequence[int]) -> np.ndarray:
        return self.P[prefix[-1]]

    def q(self, prefix: Sequence[int]) -> np.ndarray:
        return self.Q[prefix[-1]]

    def key(self, prefix: Sequence[int]) -> tuple:
        return (int(prefix[-1]),)

