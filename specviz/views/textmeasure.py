"""Measurements of speculative decoding on n-gram text: long decodes, draft orders,
drafters side by side, and a Monte Carlo exactness check of the first tokens.

Every decode plays the one round of specviz.core.round on the decoder's model pair. Here in
views, beside the real model's measurements (views.measured), because it joins the text
layer's models with the analysis layer's audit and closed forms (siblings do not import
each other).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..analysis.audit import Audit, audit
from ..analysis.theory import speedup
from ..core import interrupt
from ..core.draws import RngDraws
from ..core.round import play
from ..core.roundstats import RoundStats
from ..core.scenario import Scenario
from ..core.tables import check_n
from ..text.ngram import NGramCounts
from ..text.pair import DRAFTERS, TextDecoder

COMPARE_ORDERS = (1, 2, 3, 4, 5)  # draft orders the comparison measures
N_MC_MAX = 1_000_000  # Monte Carlo samples per exactness check
LENGTH_MAX = 1_000_000  # tokens one long decode may emit


@dataclass(frozen=True, kw_only=True, eq=False)
class TextDecodeStats(RoundStats):
    """The rounds of one long decode (one target call per round)."""

    drafter: str
    beta_mean: float  # mean of sum_x min(p, q) over the verified positions (nan if none)
    seconds: float  # wall time of the decode
    ids: tuple[int, ...]  # the generated tokens

    def speedup(self, c: float) -> float:
        """tokens per call / (1 + k c) (Leviathan et al. 2022, Sec. 3.4); the lookup drafter
        costs nothing to run, so its c is 0."""
        return float(speedup(self.tokens_per_call, self.k, 0.0 if self.drafter == "lookup"
                             else c))


def long_text_decode(sc: Scenario, *, length: int = 1_000) -> TextDecodeStats:
    """Decode at least `length` tokens from the prompt (sc.prefix) on the decoder's pair
    (sc.pair), round after round, and count; past the time budget (core.interrupt.budget)
    it ends with the rounds done (the stats count the tokens they emitted)."""
    pair, prefix, k, r = sc.pair, list(sc.prefix), sc.k, sc.rule
    check_n(length, LENGTH_MAX, "length")
    draws = RngDraws(np.random.default_rng(sc.seed))
    n0 = len(prefix)
    drafted = 0
    betas: list[float] = []
    kept = np.zeros(k + 1, dtype=np.int64)  # rounds by drafts kept
    t0 = time.perf_counter()
    while len(prefix) - n0 < length and interrupt.goes_on(kept.any()):
        d = play(pair, prefix, k, r, draws, light=True, betas=True)
        drafted += d.k
        kept[d.accepted] += 1
        betas += d.beta
        prefix += d.tokens
    return TextDecodeStats(
        histogram=kept, tokens=len(prefix) - n0, drafted=drafted, drafter=pair.drafter,
        beta_mean=float(np.mean(betas)) if betas else float("nan"),
        seconds=time.perf_counter() - t0, ids=tuple(prefix[n0:]))


def order_sweep(counts: NGramCounts, target_order: int, prompt: Sequence[int], k: int,
                length: int = 500, seed: int = 0, T_p: float = 1.0, T_q: float = 1.0,
                c: float = 0.1, orders: Sequence[int] = COMPARE_ORDERS) -> list[dict]:
    """Draft orders against one target, each measured on a long decode from the prompt."""
    rows = []
    for n in (n for n in orders if n <= counts.max_order):
        pair = TextDecoder(counts, target_order, n, T_p, T_q).pair()
        st = long_text_decode(Scenario.on(pair, prompt, k=k, seed=seed), length=length)
        rows.append({"draft order": n, "acceptance": st.draft_acceptance_rate,
                     "beta": st.beta_mean, "tokens per call": st.tokens_per_call,
                     "speedup": st.speedup(c), "smaller than target": n < target_order,
                     "rounds": st.rounds, "tokens": st.tokens})
    return rows


def drafter_comparison(sc: Scenario, *, length: int = 500, c: float = 0.1) -> list[dict]:
    """The n-gram draft against prompt lookup on the same prompt, seed and target (the
    decoder of sc.pair)."""
    rows, dec = [], sc.pair.dec
    for drafter in DRAFTERS:
        st = long_text_decode(sc.replace(pair=dec.pair(drafter)), length=length)
        rows.append({"drafter": drafter, "acceptance": st.draft_acceptance_rate,
                     "drafted per round": st.drafted_per_round,
                     "tokens per call": st.tokens_per_call,
                     "c": 0.0 if drafter == "lookup" else float(c),
                     "speedup": st.speedup(c), "rounds": st.rounds, "tokens": st.tokens,
                     "text": dec.decode(st.ids)})
    return rows


# ----------------------------------------------------------------------------- exactness
@dataclass(frozen=True)
class Cells:
    """A partition of the first n_tokens emitted tokens into cells, with the exact law.

    Full (top = None): every token (pair). Coarse: the top tokens of p one by one
    (and, for pairs, the top tokens of p after each of them), the rest lumped into
    'other' cells. A coarse law is a sum of exact cell masses, so it is exact too.
    """

    n_tokens: int
    law: np.ndarray  # (n_cells,) exact probabilities
    index: dict  # token tuple -> cell (full: None, computed arithmetically)
    first: dict  # first token -> its 'other' cell (coarse pairs), or the lumped cell
    V: int
    full: bool

    def cell(self, toks: Sequence[int]) -> int:
        if self.full:
            return int(toks[0]) if self.n_tokens == 1 else int(toks[0]) * self.V + int(toks[1])
        key = tuple(int(t) for t in toks[: self.n_tokens])
        if key in self.index:
            return self.index[key]
        return self.first.get(key[0], self.first[None])


def first_tokens_cells(dec: TextDecoder, context: Sequence[int], n_tokens: int = 2,
                       top: int | None = None) -> Cells:
    """The target's exact law of its next 1 or 2 tokens, computed row by row."""
    prefix = dec.pair().check_prefix(list(context))
    if n_tokens not in (1, 2):
        raise ValueError(f"n_tokens must be 1 or 2; got {n_tokens!r}")
    p1 = dec.target(prefix)
    if top is None:  # (V,) or the joint (V, V) flattened
        full = p1.copy() if n_tokens == 1 else np.stack(
            [p1[x] * dec.target(prefix + [x]) for x in range(dec.V)]).ravel()
        return Cells(n_tokens, full, {}, {}, dec.V, True)
    S1 = [int(x) for x in np.argsort(-p1, kind="stable")[:top]]
    law, index, first = [], {}, {}
    for x in S1:
        if n_tokens == 1:
            index[(x,)] = len(law)
            law.append(p1[x])
            continue
        p2 = dec.target(prefix + [x])
        S2 = [int(y) for y in np.argsort(-p2, kind="stable")[:top]]
        for y in S2:
            index[(x, y)] = len(law)
            law.append(p1[x] * p2[y])
        first[x] = len(law)
        law.append(p1[x] * (1.0 - p2[S2].sum()))
    first[None] = len(law)
    law.append(1.0 - p1[S1].sum())
    a = np.maximum(np.asarray(law), 0.0)
    return Cells(n_tokens, a / a.sum(), index, first, dec.V, False)


def sample_first_tokens(sc: Scenario, *, n: int, n_tokens: int = 2) -> list[tuple[int, ...]]:
    """n independent decodes from sc.prefix by speculative decoding; each keeps its first
    n_tokens emitted tokens (a second round runs when the first emits too few). Past the
    time budget (core.interrupt.budget) it returns the decodes done."""
    pair, prefix, k, r = sc.pair, list(sc.prefix), sc.k, sc.rule
    check_n(n, N_MC_MAX)
    draws = RngDraws(np.random.default_rng(sc.seed))
    out = []
    for _ in range(int(n)):
        if not interrupt.goes_on(bool(out)):  # the budget is spent: the decodes done so far
            break
        got: list[int] = []
        while len(got) < n_tokens:
            got += play(pair, prefix + got, k, r, draws, light=True).tokens
        out.append(tuple(got[:n_tokens]))
    return out


def text_exactness(sc: Scenario, *, n: int, n_tokens: int = 2, top: int | None = None) -> Audit:
    """Monte Carlo check at sc.prefix on the decoder's pair sc.pair: n decodes, their first
    n_tokens tokens binned into cells, audited against the exact law (analysis.audit: TV
    against its pass line and chi-square); a lossy rule counts as biased, since no exact
    law of its own is computed here."""
    cells = first_tokens_cells(sc.pair.dec, sc.prefix, n_tokens, top)
    counts = np.zeros(len(cells.law))
    for toks in sample_first_tokens(sc, n=n, n_tokens=n_tokens):
        counts[cells.cell(toks)] += 1
    return audit(counts, cells.law, biased=not sc.rule.lossless)
