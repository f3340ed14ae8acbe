"""The real model as a model pair: Gemma 3 270M as the target, one of its own drafts as q.

Drafts (same tokenizer, so the round engine needs nothing new):
  early-exit:L    the first L layers, then the final norm and the full head (self-speculative
                  decoding: Zhang et al. 2023, Draft & Verify; Elhoushi et al. 2024, LayerSkip)
  skip:i,j,...    every layer but those (layer skipping, Draft & Verify)
  trimmed:N[:L]   the first L layers (default all) and a head over the N most frequent
                  tokens only (FR-Spec, Zhao et al. 2025): q is 0 off those N rows
  lookup          prompt lookup over the context's token ids (Saxena 2023; vLLM's n-gram)
  ngram:n         an n-gram model over Gemma token ids (any object with row(context) and
                  state(context); the layers above train one on the shipped corpus)
p = softmax(z / T) of the target's logits z, q likewise of the draft's, both at the pair's
temperature T. The target scores all k + 1 prefixes of a round in one block pass, or every
node of a token tree in one pass with tree attention (score); a tree's draft, one pass a level.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.lookup import lookup_draft
from ..core.pair import CACHE_BYTES, ModelPair, RowCache
from ..core.tables import check_temperature, temper_rows
from .runner import TIMED_PASSES, Runner
from .store import Model
from .tokenizer import show

KINDS = ("early-exit", "skip", "trimmed", "lookup", "ngram")
LOOKUP_NGRAM = (1, 3)  # (shortest, longest) n-gram prompt lookup matches
TAIL_CHARS = 32  # context shown in captions
NGRAM_ORDER_MAX = 6  # highest n-gram draft order


class DraftError(ValueError):
    """A draft spec that names no draft of this model; the message says which are."""


@dataclass(frozen=True)
class DraftSpec:
    kind: str
    layers: tuple[int, ...]  # the layers the draft runs, in order ((), lookup)
    head: int | None = None  # rows of a trimmed head (None: the full vocabulary)
    order: int | None = None  # n of an n-gram draft

    @property
    def label(self) -> str:
        return {"early-exit": f"early-exit:{len(self.layers)}",
                "skip": "skip:" + ",".join(str(i) for i in self.skipped),
                "trimmed": f"trimmed:{self.head}:{len(self.layers)}",
                "lookup": "lookup", "ngram": f"ngram:{self.order}"}[self.kind]

    @property
    def skipped(self) -> tuple[int, ...]:
        top = max(self.layers, default=-1)
        return tuple(i for i in range(top + 1) if i not in self.layers)


def _int(text: str, what: str, lo: int, hi: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise DraftError(f"{what} must be an integer; got {text!r}") from None
    if not lo <= v <= hi:
        raise DraftError(f"{what} must lie in {lo}..{hi}; got {v}")
    return v


def parse_draft(spec: str, *, n_layers: int, V: int) -> DraftSpec:
    """'early-exit:L', 'skip:i,j', 'trimmed:N[:L]' or 'lookup', checked against the model."""
    kind, _, arg = str(spec).strip().partition(":")
    if kind == "lookup" and not arg:
        return DraftSpec("lookup", ())
    if kind == "ngram":
        return DraftSpec(kind, (), order=_int(arg, "n-gram order n", 1, NGRAM_ORDER_MAX))
    if kind == "early-exit":
        L = _int(arg, "early-exit layers L", 1, n_layers - 1)
        return DraftSpec(kind, tuple(range(L)))
    if kind == "skip":
        skip = {_int(a, "a skipped layer", 0, n_layers - 1) for a in arg.split(",")}
        if len(skip) >= n_layers:
            raise DraftError("skip must leave at least one layer")
        return DraftSpec(kind, tuple(i for i in range(n_layers) if i not in skip))
    if kind == "trimmed":
        n, _, layers = arg.partition(":")
        N = _int(n, "trimmed head rows N", 1, V - 1)
        L = _int(layers, "trimmed draft layers L", 1, n_layers) if layers else n_layers
        return DraftSpec(kind, tuple(range(L)), N)
    raise DraftError(f"unknown draft {spec!r}: use early-exit:L (L in 1..{n_layers - 1}), "
                     f"skip:i,j,..., trimmed:N[:L], ngram:n or lookup")


def token_counts(ids: np.ndarray, *, V: int) -> np.ndarray:
    """How often each token id occurs in ids, (V,) int64: the rows a trimmed head keeps."""
    return np.bincount(np.asarray(ids, dtype=np.int64), minlength=V)


def frequent_tokens(counts: np.ndarray, N: int) -> np.ndarray:
    """The N most frequent token ids (ties: the lower id), sorted by id. counts: (V,)"""
    order = np.lexsort((np.arange(len(counts)), -np.asarray(counts)))
    return np.sort(order[:N])


def softmax(z: np.ndarray, T: float) -> np.ndarray:
    """exp(z / T - max) normalised, in float64; -inf logits get 0. z: (V,)
    In place in the one new array: at V = 262,144 each further 2 MB temporary cost about
    1 ms here (fresh pages), 4x the arithmetic."""
    x = np.asarray(z, dtype=np.float64) / T  # (V,) f64, new
    x -= x.max()
    np.exp(x, out=x)
    x /= x.sum()
    return x


class LLMPair(ModelPair):
    """Gemma 3 270M (p) and one of its drafts (q) at temperature T. Owns its KV caches:
    one pair per decoding session (the weights are shared)."""

    def __init__(self, model: Model, draft: DraftSpec, *, T: float = 1.0,
                 counts: np.ndarray | None = None, ngram=None,
                 cache_bytes: int = CACHE_BYTES) -> None:
        self.model, self.spec, self.T = model, draft, check_temperature(T)
        self.V, self.names = model.cfg.V, model.tokenizer.shown  # spaces and breaks visible
        self.target = Runner(model.weights)
        self.draft, self.ngram = None, None
        self._ngram_passes: deque[tuple[int, int, float]] = deque(maxlen=TIMED_PASSES)
        if draft.kind == "ngram":
            if ngram is None or getattr(ngram, "V", None) != self.V:
                raise DraftError("an n-gram draft needs an n-gram model over the model's "
                                 f"{self.V:,} token ids")
            self.ngram = ngram
        elif draft.kind != "lookup":
            head = None
            if draft.head is not None:
                if counts is None:
                    raise DraftError("a trimmed head needs token counts (token_counts)")
                head = frequent_tokens(counts, draft.head)
            self.draft = Runner(model.weights, draft.layers, head)
        self._rows = RowCache(self.V, cache_bytes)

    @property
    def fingerprint(self) -> str:
        return f"gemma3-270m|{self.spec.label}|T{self.T:g}"

    def key(self, prefix: Sequence[int]) -> tuple:
        return tuple(int(t) for t in prefix)  # the target reads all of it

    def _row(self, which: str, prefix: Sequence[int]) -> np.ndarray:
        runner = self.target if which == "p" else self.draft
        return self._rows.get((which, self.key(prefix)), lambda: softmax(
            runner.full_row(runner.logits(prefix, [len(prefix)])[0]), self.T))

    def p(self, prefix: Sequence[int]) -> np.ndarray:
        return self._row("p", prefix)

    def q(self, prefix: Sequence[int]) -> np.ndarray:
        if self.ngram is not None:
            return self._rows.get(("ngram", self.ngram.state(prefix)),
                                  lambda: self._ngram_row(prefix))
        if self.draft is None:
            raise ValueError("prompt lookup has no q of its own: it proposes (propose)")
        return self._row("q", prefix)

    def _ngram_row(self, prefix: Sequence[int]) -> np.ndarray:
        t0 = time.perf_counter()
        row = np.asarray(temper_rows(self.ngram.row(prefix), self.T), dtype=np.float64)
        self._ngram_passes.append((1, 1, time.perf_counter() - t0))
        return row

    @property
    def draft_passes(self) -> tuple[tuple[int, int, float], ...]:
        """(positions, heads, seconds) of each draft call so far (() for lookup)."""
        if self.draft is not None:
            return tuple(self.draft.passes)
        return tuple(self._ngram_passes)

    def settle(self) -> None:
        """Drop the rows and logits kept for the round just played, keeping the KV caches,
        so a pair that plays many rounds holds only its caches. A later round rarely reads
        them (it starts after a token the last one drew, not scored); when it does, they
        are computed again."""
        for runner in (self.target, self.draft):
            if runner is not None:
                runner.forget()
        self._rows = RowCache(self.V, self._rows.max_rows * 8 * self.V)
        self._rejections = None

    def score(self, prefix: Sequence[int], tails: Sequence[Sequence[int]], *,
              which: str = "p") -> None:
        """The rows at prefix + t, t in tails, in one pass of the target (or the draft): a
        chain's k + 1 prefixes as a block, a tree's nodes with tree attention (Runner.score)."""
        runner = self.target if which == "p" else self.draft
        if runner is not None:
            runner.score(prefix, tails)

    def propose(self, prefix: Sequence[int], k: int) -> tuple[int, ...] | None:
        if self.spec.kind != "lookup":
            return None
        lo, hi = LOOKUP_NGRAM
        return lookup_draft(prefix, k, hi, lo)

    def tail(self, prefix: Sequence[int]) -> str:
        text = self.model.tokenizer.decode(prefix[-TAIL_CHARS:])
        cut = text[-TAIL_CHARS:]
        return ("…" if len(cut) < len(text) or len(prefix) > TAIL_CHARS else "") + show(cut)
