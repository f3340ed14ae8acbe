"""Prompt lookup (Saxena 2023, "Prompt Lookup Decoding"; vLLM's n-gram method): a draft
that copies what followed the last earlier occurrence of the context's newest n-gram.
Used by every pair that drafts by lookup (n-gram text, the real model)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def lookup_draft(tokens: Sequence[int], k: int, max_ngram: int = 3,
                 min_ngram: int = 1) -> tuple[int, ...]:
    """Prompt lookup: up to k tokens that followed the last earlier occurrence of the
    newest n-gram of tokens, trying n = max_ngram down to min_ngram; () when none matches."""
    a = np.asarray(tokens, dtype=np.int64)
    N = len(a)
    if N < 2 or max_ngram < 1:
        return ()
    ends = np.flatnonzero(a[: N - 1] == a[N - 1])  # where an earlier match could end
    length = np.ones(len(ends), dtype=np.int64)  # how far back each one matches, capped
    alive = np.ones(len(ends), dtype=bool)
    for d in range(1, min(max_ngram, N - 1)):
        j = ends - d
        alive &= (j >= 0) & (a[np.maximum(j, 0)] == a[N - 1 - d])
        length += alive
    for n in range(max_ngram, max(min_ngram, 1) - 1, -1):
        hits = ends[length >= n]
        if len(hits):
            j = int(hits[-1]) + 1  # first token after the last match of length n
            return tuple(int(t) for t in a[j: j + k])
    return ()
