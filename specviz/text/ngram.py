"""n-gram language models with interpolated Kneser-Ney smoothing, over characters or words.

One `NGramCounts` is trained once per (corpus, level, max order); every model of order
n <= max_order is a view of it (`counts.model(n)`), so a target and its draft share the
tokeniser and the vocabulary by construction.

Interpolated Kneser-Ney (Kneser & Ney 1995; Chen & Goodman 1999, eq. 4 and Sec. 3.5):
  p_n(w | h) = max(c(h w) - D, 0) / c(h) + D N1+(h .) / c(h) * p_(n-1)(w | h')
where h' drops h's oldest token. The model's own order uses raw counts c; the lower
orders use continuation counts c(h w) = N1+(. h w), the number of distinct tokens seen
before h w. The recursion ends in the unigram of continuation counts, itself mixed with
the uniform law 1/V, so every token has p > 0. An unseen context h skips its level
(c(h) = 0 gives p_n = p_(n-1)). One discount per level and count type,
D = n1 / (n1 + 2 n2) with n_r the number of n-grams seen exactly r times (Ney, Essen &
Kneser 1994), clipped to [0.1, 0.9].

Storage: level L holds the contexts of L tokens, each keyed by (its L-1 newest tokens,
the token before them), sorted, with the continuations of each context in one slice of
flat arrays (CSR). The newer part is written as its own key when every order fits in 62
bits, else as its rank at the level below (a reversed trie); see key_base. Nothing is V x V: a row
p(. | h) is computed when asked, as one (V,) vector built level by level with NumPy.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core import interrupt
from ..core.tables import check_n

LEVELS = ("char", "word")
MAX_VOCAB = {"char": 4_096, "word": 50_000}  # larger vocabularies keep the most frequent
MAX_ORDER = 10  # highest n the trainer accepts
# What one set of counts may hold: the default corpus at order 8 (characters) holds ~66 MB
# of it. A text that needs more is refused while it is counted (ModelTooLarge); to allow
# bigger models raise this, to fit a smaller host lower it (or lower the target order).
MODEL_MAX_BYTES = 80 * 2**20
TRAIN_TOKENS_MAX = 2_000_000  # tokens counted (the default corpus has ~1.7 M characters)
UNK = "<unk>"  # the token for anything outside the vocabulary (last id)
D_CLIP = (0.1, 0.9)  # discounts are clipped into this range
_WORD = re.compile(r"\w+|[^\w\s]")  # a word, or one punctuation character
_NO_SPACE_BEFORE = frozenset(".,;:!?)]}%")
_NO_SPACE_AFTER = frozenset("([{")
_CHAR_NAMES = {" ": "␣", "\n": "⏎", "\t": "⇥"}


# ----------------------------------------------------------------------------- tokeniser
@dataclass(frozen=True)
class Tokenizer:
    """Characters or words to ids and back. Ids run by corpus frequency; UNK is the last."""

    level: str  # "char" | "word"
    vocab: tuple[str, ...]  # (V,) token strings, UNK last

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {t: i for i, t in enumerate(self.vocab)})

    @property
    def V(self) -> int:
        return len(self.vocab)

    @property
    def unk(self) -> int:
        return len(self.vocab) - 1

    def split(self, text: str) -> list[str]:
        return list(text) if self.level == "char" else _WORD.findall(text)

    def encode(self, text: str) -> np.ndarray:
        """Token ids of text, (N,) int64; tokens outside the vocabulary become UNK."""
        idx, unk = self._index, self.unk
        return np.fromiter((idx.get(t, unk) for t in self.split(text)), dtype=np.int64)

    def pieces(self, ids: Sequence[int], after: int | None = None) -> list[str]:
        """Each token's surface text, spaces included, so that decode = ''.join(pieces);
        after = the token before ids[0], if any (it decides the first word's space)."""
        toks = [self.vocab[int(i)] for i in ids]
        if self.level == "char":
            return ["\ufffd" if t == UNK else t for t in toks]
        out = []
        prev = None if after is None else self.vocab[int(after)]
        for t in toks:
            glue = prev is None or t in _NO_SPACE_BEFORE or prev in _NO_SPACE_AFTER
            out.append(t if glue else " " + t)
            prev = t
        return out

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.pieces(ids))

    def display(self, i: int) -> str:
        """A visible name for token i (a space shows as ␣, a newline as ⏎)."""
        t = self.vocab[int(i)]
        if self.level == "char" and t != UNK:
            return _CHAR_NAMES.get(t, t if t.isprintable() else f"U+{ord(t):04X}")
        return t

    @property
    def names(self) -> tuple[str, ...]:
        """display() of every token, (V,)."""
        return tuple(self.display(i) for i in range(self.V))


def build_tokenizer(text: str, level: str, max_vocab: int | None = None) -> Tokenizer:
    """The vocabulary of text: its most frequent tokens (ties by string), then UNK."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
    cap = MAX_VOCAB[level] if max_vocab is None else int(max_vocab)
    if cap < 2:
        raise ValueError(f"max_vocab must be at least 2; got {max_vocab!r}")
    counts = Counter(text) if level == "char" else Counter(_WORD.findall(text))
    counts.pop(UNK, None)
    ranked = sorted(counts, key=lambda t: (-counts[t], t))[: cap - 1]
    return Tokenizer(level, tuple(ranked) + (UNK,))


# ----------------------------------------------------------------------------- counts
@dataclass(frozen=True)
class Level:
    """Contexts of L tokens (L: its index in NGramCounts.levels) and their continuations
    (CSR). All arrays read-only."""

    keys: np.ndarray  # (n_ctx,) int64 sorted: parent * B + oldest token (L = 0: [0]), see key_base
    start: np.ndarray  # (n_ctx + 1,) int64: continuations of context j are start[j]:start[j+1]
    w: np.ndarray  # (n,) int32 next tokens, increasing within a context
    raw: np.ndarray  # (n,) int32 c(h w)
    kn: np.ndarray  # (n,) int32 N1+(. h w); zeros at the top level (never used there)
    raw_total: np.ndarray  # (n_ctx,) float64 c(h)
    kn_total: np.ndarray  # (n_ctx,) float64 sum_w N1+(. h w)
    kn_nnz: np.ndarray  # (n_ctx,) float64 #{w : N1+(. h w) > 0}
    D_raw: float
    D_kn: float

    @property
    def n_contexts(self) -> int:
        return len(self.keys)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in vars(self).values() if isinstance(a, np.ndarray))


def _ro(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


class ModelTooLarge(ValueError):
    """Counts that would pass MODEL_MAX_BYTES; the message says at which order."""


def discount(counts: np.ndarray) -> float:
    """D = n1 / (n1 + 2 n2), clipped to D_CLIP; 0.5 when no n-gram was seen once or twice."""
    n1 = int(np.count_nonzero(counts == 1))
    n2 = int(np.count_nonzero(counts == 2))
    if n1 + n2 == 0:
        return 0.5
    return float(np.clip(n1 / (n1 + 2 * n2), *D_CLIP))


class NGramCounts:
    """Everything a Kneser-Ney model of order <= max_order needs, from one token stream."""

    def __init__(self, tokenizer: Tokenizer, ids: np.ndarray, max_order: int,
                 max_bytes: int = MODEL_MAX_BYTES) -> None:
        check_n(max_order, MAX_ORDER, "max_order")
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or len(ids) < max_order + 1:  # one full n-gram and one more
            raise ValueError(f"need at least {max_order + 1} tokens to count n-grams "
                             f"up to order {max_order}; got {len(ids) if ids.ndim == 1 else 0}")
        if len(ids) > TRAIN_TOKENS_MAX:
            raise ValueError(f"{len(ids):,} tokens is over the cap {TRAIN_TOKENS_MAX:,}")
        self.tokenizer = tokenizer
        self.fingerprint = ""  # set by train(): what the counts were trained on
        self.V = tokenizer.V
        self.max_order = int(max_order)
        self.corpus_tokens = len(ids)
        self.B, self.direct = key_base(self.V, self.max_order)
        self.levels: tuple[Level, ...] = _count_levels(ids, self.V, self.max_order,
                                                       max_bytes)
        self._base: dict[bool, np.ndarray] = {}

    @property
    def level(self) -> str:
        return self.tokenizer.level

    @property
    def nbytes(self) -> int:
        """Bytes held by the count arrays."""
        return sum(lv.nbytes for lv in self.levels)

    def model(self, order: int) -> NGramModel:
        return NGramModel(self, order)

    def context_ids(self, context: Sequence[int], depth: int) -> list[int]:
        """Ids of the contexts made of the newest 0..depth tokens, stopping at the first
        unseen one: result[L] is the level-L id of context[-L:] (result[0] = 0)."""
        out = [0]
        parent, B = 0, self.B
        n = len(context)
        for L in range(1, min(depth, n) + 1):
            lv = self.levels[L]
            key = parent * B + int(context[n - L])
            j = int(np.searchsorted(lv.keys, key))
            if j == lv.n_contexts or int(lv.keys[j]) != key:
                break
            out.append(j)
            parent = key if self.direct else j
        return out

    def base_row(self, kn: bool) -> np.ndarray:
        """The unigram level mixed with the uniform law: kn=True uses continuation counts."""
        if kn not in self._base:
            lv = self.levels[0]
            p = np.full(self.V, 1.0 / self.V)
            _interpolate(p, lv, 0, kn)
            self._base[kn] = _ro(p)
        return self._base[kn]


def _interpolate(p: np.ndarray, lv: Level, j: int, kn: bool) -> None:
    """In place: p <- max(c - D, 0) / c(h) + D N1+(h .) / c(h) * p, for context j of lv."""
    a, b = int(lv.start[j]), int(lv.start[j + 1])
    if kn:
        total, nnz, D, c = float(lv.kn_total[j]), float(lv.kn_nnz[j]), lv.D_kn, lv.kn[a:b]
    else:
        total, nnz, D, c = float(lv.raw_total[j]), float(b - a), lv.D_raw, lv.raw[a:b]
    if total <= 0:  # seen only at the very start of the text: no continuation counts
        return
    p *= D * nnz / total
    p[lv.w[a:b]] += np.maximum(c - D, 0.0) / total


def _runs(srt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys (n,) -> their distinct values, and each key's rank among them (n,)."""
    first = np.empty(len(srt), dtype=bool)
    first[0] = True
    np.not_equal(srt[1:], srt[:-1], out=first[1:])
    return srt[first], np.cumsum(first) - 1


def _unique_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, return_inverse=True), by one argsort (about twice as fast on
    millions of keys). -> sorted unique keys (n,), inverse (len(keys),)."""
    perm = np.argsort(keys)
    inv = np.empty(len(keys), dtype=np.int64)
    uniq, inv[perm] = _runs(keys[perm])
    return uniq, inv


def key_base(V: int, max_order: int) -> tuple[int, bool]:
    """(B, direct): contexts are keyed parent * B + oldest token. When max_order tokens fit
    in 62 bits (B = 2^bits), the parent is the newer tokens' own key, so a key is the
    context written in base B and needs no renumbering; otherwise B = V and the parent is
    the rank of the newer tokens' context at the level below (a trie)."""
    bits = max(1, (V - 1).bit_length())
    return (1 << bits, True) if max_order * bits <= 62 else (V, False)


_BYTES_PER_NGRAM = 12  # w, raw, kn (int32 each)
_BYTES_PER_CONTEXT = 40  # keys, start (int64), raw_total, kn_total, kn_nnz (float64)


def _count_levels(ids: np.ndarray, V: int, max_order: int,
                  max_bytes: int = MODEL_MAX_BYTES) -> tuple[Level, ...]:
    """Levels 0..max_order-1, each from one sort of the token stream's n-gram keys; stops
    with ModelTooLarge as soon as the levels so far would hold more than max_bytes."""
    N = len(ids)
    B, direct = key_base(V, max_order)
    levels: list[dict] = []
    held = 0
    cid = np.zeros(N, dtype=np.int64)  # cid[i]: parent value of the L tokens before i
    for L in range(max_order):
        interrupt.check()
        if L > 0:
            ctx_key = cid[L:] * B + ids[: N - L]  # (N - L,) parent, then the token before
            cid = np.empty(N, dtype=np.int64)
            if direct:
                cid[L:] = ctx_key
            else:
                keys, cid[L:] = _unique_inverse(ctx_key)
        gram, raw = np.unique(cid[L:] * B + ids[L:], return_counts=True)  # (n,) sorted
        ctx_of = gram // B  # (n,) the context of each n-gram: its key (direct) or rank
        if direct or L == 0:  # owner (n,): the rank of each n-gram's context
            keys, owner = _runs(ctx_of)
        else:
            owner = ctx_of
        start = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner, minlength=len(keys)), out=start[1:])
        held += _BYTES_PER_NGRAM * len(gram) + _BYTES_PER_CONTEXT * len(keys)
        if held > max_bytes:
            raise ModelTooLarge(
                f"its counts up to order {L + 1} alone need {held / 2**20:,.0f} MB, over the "
                f"cap of {max_bytes / 2**20:,.0f} MB per model; use a lower order (at most "
                f"{L}) or a shorter or more repetitive text")
        levels.append(dict(L=L, keys=keys, start=start, gram=gram, owner=owner,
                           w=(gram % B).astype(np.int32), raw=raw.astype(np.int32)))
        if L > 0:  # continuation counts of level L-1: distinct extensions one token older
            lo = levels[L - 1]
            parent = keys[owner] // B  # (n,) the newer part of each context, as level L-1 keys it
            at = np.searchsorted(lo["gram"], parent * B + (gram % B))
            lo["kn"] = np.bincount(at, minlength=len(lo["gram"])).astype(np.int32)
    levels[-1]["kn"] = np.zeros(len(levels[-1]["gram"]), dtype=np.int32)
    out = []
    for d in levels:
        owner, n_ctx, kn = d["owner"], len(d["keys"]), d["kn"]
        out.append(Level(
            keys=_ro(d["keys"]), start=_ro(d["start"]), w=_ro(d["w"]),
            raw=_ro(d["raw"]), kn=_ro(kn),
            raw_total=_ro(np.bincount(owner, weights=d["raw"], minlength=n_ctx)),
            kn_total=_ro(np.bincount(owner, weights=kn, minlength=n_ctx)),
            kn_nnz=_ro(np.bincount(owner, weights=kn > 0, minlength=n_ctx).astype(np.float64)),
            D_raw=discount(d["raw"]),
            D_kn=discount(kn[kn > 0]) if d["L"] < max_order - 1 else 0.5,
        ))
    return tuple(out)


def train(text: str, level: str, max_order: int, max_vocab: int | None = None,
          max_bytes: int = MODEL_MAX_BYTES) -> NGramCounts:
    """Tokenise text at `level` and count every n-gram up to max_order (of the first
    TRAIN_TOKENS_MAX tokens)."""
    tok = build_tokenizer(text, level, max_vocab)
    counts = NGramCounts(tok, tok.encode(text)[:TRAIN_TOKENS_MAX], max_order, max_bytes)
    digest = hashlib.sha1(text.encode("utf-8", errors="replace")).hexdigest()[:16]
    counts.fingerprint = f"{digest}|{level}|{max_order}|{tok.V}"
    return counts


# ----------------------------------------------------------------------------- models
class NGramModel:
    """An interpolated Kneser-Ney model of one order over shared counts."""

    def __init__(self, counts: NGramCounts, order: int) -> None:
        self.counts = counts
        self.order = check_n(order, counts.max_order, "order (at most the counts' max order)")

    @property
    def V(self) -> int:
        return self.counts.V

    @property
    def tokenizer(self) -> Tokenizer:
        return self.counts.tokenizer

    def state(self, context: Sequence[int]) -> tuple[int, ...]:
        """The part of the context the model reads: its newest order - 1 tokens."""
        n = self.order - 1
        return tuple(int(t) for t in context[len(context) - n:]) if n else ()

    def row(self, context: Sequence[int]) -> np.ndarray:
        """p(. | context), (V,) float64, every entry > 0. Each level keeps the total at 1
        (the discounted mass plus gamma times a law), so the row sums to 1 up to rounding
        and is not renormalised (that would be two more passes over V)."""
        cs = self.counts
        top = self.order - 1
        ids = cs.context_ids(context, top)
        if len(ids) == 1:  # no context seen: the unigram level is the model's top one
            p = cs.base_row(kn=top > 0).copy()
        else:
            p = cs.base_row(kn=True).copy()
            for L in range(1, len(ids)):
                _interpolate(p, cs.levels[L], ids[L], kn=L < top)
        return p

