"""The real model as a model pair: Gemma 3 270M as the target, one of its own drafts as q.

The draft is what its spec (llm.draftkind.DraftSpec; the kinds: llm.drafts) names, in the
same tokenizer, so the round engine needs nothing new: a Runner over spec.layers (with a
head over the spec.head most frequent tokens only, q = 0 off them), an n-gram model of
order spec.order (any object with row(context) and state(context)), or, with neither,
prompt lookup over the context's token ids (it proposes; no q).
p = softmax(z / T) of the target's logits z, q likewise of the draft's, both at the pair's
temperature T. The target scores all k + 1 prefixes of a round in one block pass, or every
node of a token tree in one pass with tree attention (score); a tree's draft, one pass a level.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence

import numpy as np

from ..core.lookup import lookup_draft
from ..core.pair import CACHE_BYTES, ModelPair, RowCache
from ..core.tables import check_temperature, temper_rows
from .draftkind import DraftError, DraftSpec
from .runner import TIMED_PASSES, Runner
from .store import Model
from .tokenizer import show

LOOKUP_NGRAM = (1, 3)  # (shortest, longest) n-gram prompt lookup matches
TAIL_CHARS = 32  # context shown in captions


def token_counts(ids: np.ndarray, *, V: int) -> np.ndarray:
    """How often each token id occurs in ids, (V,) int64: the rows a trimmed head keeps."""
    return np.bincount(np.asarray(ids, dtype=np.int64), minlength=V)


def frequent_tokens(counts: np.ndarray, N: int) -> np.ndarray:
    """The N most frequent token ids (ties: the lower id), sorted by id. counts: (V,)"""
    order = np.lexsort((np.arange(len(counts)), -np.asarray(counts)))
    return np.sort(order[:N])


def warm(runner: Runner, prompt: Sequence[int]) -> float:
    """Run the prompt but its last token into the runner's cache (its prefill), so a
    decode's first pass runs one position, as every later one; the seconds it took."""
    t0 = time.perf_counter()
    if len(prompt) > 1:
        runner.logits(prompt[:-1], [len(prompt) - 1])
    return time.perf_counter() - t0


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
        if draft.order is not None:
            if ngram is None or getattr(ngram, "V", None) != self.V:
                raise DraftError("an n-gram draft needs an n-gram model over the model's "
                                 f"{self.V:,} token ids")
            self.ngram = ngram
        elif draft.layers:
            head = None
            if draft.head is not None:
                if counts is None:
                    raise DraftError("a trimmed head needs token counts (token_counts)")
                head = frequent_tokens(counts, draft.head)
            self.draft = Runner(model.weights, draft.layers, head)
        self._rows = RowCache(self.V, cache_bytes)

    @property
    def nbytes(self) -> int:
        """Bytes the pair holds of its own: its runners' KV caches and logits, its rows and
        rejection laws (its trimmed head: shared; the weights: the process's)."""
        rej = getattr(self, "_rejections", None)
        return sum(r.nbytes for r in (self.target, self.draft) if r is not None) + \
            self._rows.nbytes + (0 if rej is None else rej.nbytes)

    @property
    def shared(self) -> dict:
        """What it holds that other pairs may hold too (a trimmed head), name -> bytes."""
        return {} if self.draft is None else self.draft.shared

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

    def warm(self, prompt: Sequence[int]) -> float:
        """Both models' prefill of the prompt but its last token (decode.warm), before a
        timed decode; the seconds it took."""
        return sum(warm(runner, prompt) for runner in (self.target, self.draft)
                   if runner is not None)

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
        chain's k + 1 prefixes as a block, a tree's nodes with tree attention (Runner.score).
        Rows the pair still holds are not scored again: a server asked the same prompt many
        times (a live audit) plays most rounds from its rows, as a prefix cache would."""
        runner = self.target if which == "p" else self.draft
        if all((which, self.key(list(prefix) + list(t))) in self._rows for t in tails):
            return
        if runner is not None:
            runner.score(prefix, tails)

    def propose(self, prefix: Sequence[int], k: int) -> tuple[int, ...] | None:
        if self.draft is not None or self.ngram is not None:
            return None
        lo, hi = LOOKUP_NGRAM
        return lookup_draft(prefix, k, hi, lo)

    def tail(self, prefix: Sequence[int]) -> str:
        text = self.model.tokenizer.decode(prefix[-TAIL_CHARS:])
        cut = text[-TAIL_CHARS:]
        return ("…" if len(cut) < len(text) or len(prefix) > TAIL_CHARS else "") + show(cut)
