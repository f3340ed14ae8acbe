"""The n-gram text models as a model pair: rows computed at a prefix, prompt lookup.

A row p(. | prefix) is computed when a position needs it (specviz.text.ngram), at the
model's temperature, and cached by the context the model reads (its last n - 1 tokens).
Two drafters: "ngram", a low-order model over the same counts, and "lookup", prompt lookup
(Saxena 2023, "Prompt Lookup Decoding"): find the last earlier occurrence of the context's
newest n-gram (longest first) and propose the tokens that followed it. Its q is one-hot,
so the standard rule keeps x with probability p(x) and on rejection draws from p with x
removed; the output still follows p exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.lookup import lookup_draft
from ..core.pair import CACHE_BYTES, ModelPair, RowCache
from ..core.sampling import DRAW_FLAT_MAX, block_cdf, draw_row
from ..core.tables import check_temperature, temper_rows
from .ngram import NGramCounts, NGramModel

DRAFTERS = ("ngram", "lookup")
LOOKUP_NGRAM = {"char": (2, 8), "word": (1, 3)}  # (shortest, longest) prompt lookup matches
TAIL_TOKENS = {"char": 24, "word": 8}  # context shown in captions
# Each of a decoder's six row caches (target and draft rows and their block sums, each
# drafter's rejection laws) holds at most this: a decoder's caches stay under ~48 MB.
TEXT_CACHE_BYTES = 8 * 2**20
CACHES_PER_DECODER = 4 + len(DRAFTERS)


class RowSource:
    """Rows of one model at one temperature, cached by the context the model reads."""

    def __init__(self, model: NGramModel, T: float = 1.0, cache_bytes: int = CACHE_BYTES):
        self.model = model
        self.T = check_temperature(T)
        self._rows = RowCache(model.V, cache_bytes)
        self._blocks = RowCache(model.V, cache_bytes)  # block_cdf of drawn rows

    @property
    def max_rows(self) -> int:
        return self._rows.max_rows

    def __call__(self, context: Sequence[int]) -> np.ndarray:
        """p(. | context) at this source's temperature, (V,)."""
        key = self.model.state(context)
        return self._rows.get(key, lambda: np.asarray(
            temper_rows(self.model.row(context), self.T), dtype=np.float64))

    def draw(self, context: Sequence[int], u: float) -> int:
        """A token from the row at context with the uniform u (draw_row); a large row keeps
        its block sums, so the next draw from it is cheap."""
        row = self(context)
        blocks = None if len(row) <= DRAW_FLAT_MAX else self._blocks.get(
            self.model.state(context), lambda: block_cdf(row))
        return draw_row(row, u, blocks)


class TextDecoder:
    """A target and a draft over one NGramCounts, each at its own temperature."""

    def __init__(self, counts: NGramCounts, target_order: int, draft_order: int,
                 T_p: float = 1.0, T_q: float = 1.0,
                 cache_bytes: int = TEXT_CACHE_BYTES) -> None:
        self.counts = counts
        self.cache_bytes = int(cache_bytes)
        self.target = RowSource(counts.model(target_order), check_temperature(T_p, "T_p"),
                                self.cache_bytes)
        self.draft = RowSource(counts.model(draft_order), check_temperature(T_q, "T_q"),
                               self.cache_bytes)
        self.names = counts.tokenizer.names  # (V,) display names
        self._pairs: dict[str, TextPair] = {}

    V = property(lambda self: self.counts.V)
    level = property(lambda self: self.counts.level)
    target_order = property(lambda self: self.target.model.order)
    draft_order = property(lambda self: self.draft.model.order)
    T_p = property(lambda self: self.target.T)
    T_q = property(lambda self: self.draft.T)

    @property
    def max_cache_bytes(self) -> int:
        """The most its row caches may hold together (the counts are not counted)."""
        return CACHES_PER_DECODER * self.target.max_rows * 8 * self.V

    @property
    def key(self) -> str:
        """Identifies the pair for caches: the counts, both orders and temperatures."""
        return (f"{self.counts.fingerprint}|p{self.target_order}@{self.T_p:g}|"
                f"q{self.draft_order}@{self.T_q:g}")

    def pair(self, drafter: str = "ngram") -> TextPair:
        """The model pair with this drafter (made once, so its caches are kept)."""
        if drafter not in DRAFTERS:
            raise ValueError(f"drafter must be one of {', '.join(DRAFTERS)}; got {drafter!r}")
        if drafter not in self._pairs:
            self._pairs[drafter] = TextPair(self, drafter)
        return self._pairs[drafter]

    def encode(self, text: str) -> list[int]:
        return [int(t) for t in self.counts.tokenizer.encode(text)]

    def decode(self, ids: Sequence[int]) -> str:
        return self.counts.tokenizer.decode(ids)

    def tail(self, context: Sequence[int]) -> str:
        """The newest TAIL_TOKENS of the context as text, with an ellipsis when cut."""
        n = TAIL_TOKENS[self.level]
        text = self.decode(context[-n:])
        return ("…" if len(context) > n else "") + text.replace("\n", "⏎")


class TextPair(ModelPair):
    """The decoder's two models, drafting from q ("ngram") or by prompt lookup."""

    def __init__(self, dec: TextDecoder, drafter: str) -> None:
        self.dec, self.drafter = dec, drafter
        self.V, self.names, self.cache_bytes = dec.V, dec.names, dec.cache_bytes

    @property
    def fingerprint(self) -> str:
        return f"{self.dec.key}|{self.drafter}"

    def p(self, prefix: Sequence[int]) -> np.ndarray:
        return self.dec.target(prefix)

    def q(self, prefix: Sequence[int]) -> np.ndarray:
        return self.dec.draft(prefix)

    def draw_p(self, prefix: Sequence[int], u: float) -> int:
        return self.dec.target.draw(prefix, u)

    def draw_q(self, prefix: Sequence[int], u: float) -> int:
        return self.dec.draft.draw(prefix, u)

    def key(self, prefix: Sequence[int]) -> tuple:
        draft = self.dec.draft.model.state(prefix) if self.drafter == "ngram" else ("lookup",)
        return (self.dec.target.model.state(prefix), draft)

    def propose(self, prefix: Sequence[int], k: int) -> tuple[int, ...] | None:
        if self.drafter != "lookup":
            return None
        lo, hi = LOOKUP_NGRAM[self.dec.level]
        return lookup_draft(prefix, k, hi, lo)
