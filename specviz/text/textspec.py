"""Speculative decoding on n-gram text models, row by row.

The tables of specviz.round hold every row in advance; here a row p(. | prefix) is
computed when a position needs it (specviz.ngram), at the model's temperature, and the
acceptance rule of specviz.rules is applied to that one row: the rule's table functions
take (R, V) arrays and are called on (1, V) rows. One round (Leviathan et al. 2022,
Algorithm 1): the draft proposes x_1..x_k serially, each from q at its prefix; one target
call gives p at all k + 1 prefixes; x_i is kept while u_i < min(1, p(x_i)/q(x_i)); the
first rejection emits one token from norm(max(0, p - q)) and ends the round; if all k are
kept, a bonus token comes from p at the last prefix.

Two drafters: "ngram", a low-order model over the same counts, and "lookup", prompt
lookup (Saxena 2023, "Prompt Lookup Decoding"): find the last earlier occurrence of the
context's newest n-gram (longest first) and propose the tokens that followed it. Its q is
one-hot, so the rule keeps x with probability p(x) and on rejection draws from p with x
removed; the output still follows p exactly.

Random numbers are used in round.py's order: one uniform per drafted token (none for the
lookup drafter), then one coin per verified position, then one for the last token.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..analysis.stats import empirical, sampling_floor, tv, tv_threshold
from ..analysis.theory import speedup
from ..core.round import Emitted, Position, RoundTrace, Step
from ..core.rule import RESIDUAL_EPS, overlap, ratio
from ..core.rules import RULES, coin_passes, get_rule, keep_prob
from ..core.sampling import draw
from ..core.tables import K_MAX
from .ngram import NGramCounts, NGramModel

DRAFTERS = ("ngram", "lookup")
LOOKUP_NGRAM = {"char": (2, 8), "word": (1, 3)}  # (shortest, longest) n-gram prompt lookup matches
CACHE_BYTES = 64 * 2**20  # cached rows per RowSource, in bytes of float64
COMPARE_ORDERS = (1, 2, 3, 4, 5)  # draft orders the comparison measures
TAIL_TOKENS = {"char": 24, "word": 8}  # context shown in captions
_IDENTITY = RULES["correct"].draft_table  # q as given
_RATIO = RULES["correct"].accept_table  # p / q
_RESIDUAL = RULES["correct"].reject_table  # norm(max(0, p - q))
N_MC_MAX = 1_000_000  # Monte Carlo samples per exactness check
DRAW_FLAT_MAX = 4_096  # up to this V a draw is sampling.draw itself (one cumulative sum)
DRAW_BLOCK = 256  # above it, the inverse CDF goes by blocks of this many tokens


def temper_row(p: np.ndarray, T: float) -> np.ndarray:
    """p^(1/T) / sum p^(1/T) over the last axis: T < 1 sharpens, T > 1 flattens, T = 1 is p."""
    if T == 1.0:
        return p
    logs = np.log(np.maximum(p, 1e-300)) / T
    logs -= logs.max(axis=-1, keepdims=True)
    w = np.exp(logs)
    return w / w.sum(axis=-1, keepdims=True)


def check_temperature(T: float, name: str = "T") -> float:
    if isinstance(T, bool) or not isinstance(T, (int, float, np.floating, np.integer)) \
            or not math.isfinite(T) or not 0.05 <= T <= 10.0:
        raise ValueError(f"temperature {name} must be a number in [0.05, 10]; got {T!r}")
    return float(T)


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= K_MAX:
        raise ValueError(f"k must be an integer 1..{K_MAX}; got {k!r}")
    return int(k)


def _check_rule(rule: str):
    r = get_rule(rule)
    if r.kind != "single":
        raise ValueError(f"rule {r.name!r} drafts several candidates per position; the text "
                         "engine plays one draft per position")
    return r


def _check_drafter(drafter: str) -> str:
    if drafter not in DRAFTERS:
        raise ValueError(f"drafter must be one of {', '.join(DRAFTERS)}; got {drafter!r}")
    return drafter


def _check_context(context: Sequence[int], V: int) -> list[int]:
    ctx = [int(t) for t in context]
    if not ctx:
        raise ValueError("the prompt must hold at least one token")
    if min(ctx) < 0 or max(ctx) >= V:
        raise ValueError(f"token ids must be in 0..{V - 1}")
    return ctx


# ----------------------------------------------------------------------------- rows
def block_cdf(w: np.ndarray, block: int = DRAW_BLOCK) -> np.ndarray:
    """The mass up to the end of each block of `block` tokens: cumsum of block sums."""
    nb = -(-len(w) // block)
    wb = np.zeros(nb * block)
    wb[: len(w)] = w
    return np.cumsum(wb.reshape(nb, block).sum(axis=1))  # (nb,)


def draw_row(w: np.ndarray, u: float, blocks: np.ndarray | None = None,
             block: int = DRAW_BLOCK) -> int:
    """One token from the (V,) law w with the uniform u, by inverse CDF.

    Small V: exactly sampling.draw. Large V: the same inverse CDF in two steps (block
    sums, then a cumulative sum inside the chosen block; blocks = block_cdf(w) when known),
    since a cumulative sum over the whole row costs more than all the rest of a position's
    work. The token can differ from sampling.draw's only where rounding moves an
    interval's edge past u.
    """
    V = len(w)
    if V <= DRAW_FLAT_MAX:
        return draw(w, u)
    c = block_cdf(w, block) if blocks is None else blocks
    t = u * c[-1]
    b = min(int(np.searchsorted(c, t, side="right")), len(c) - 1)
    inner = np.cumsum(w[b * block: (b + 1) * block]) + (c[b - 1] if b else 0.0)
    x = b * block + min(int(np.searchsorted(inner, t, side="right")), len(inner) - 1)
    return x if w[x] > 0 else draw(w, u)  # an edge case of rounding: the flat way


class RowSource:
    """Rows of one model at one temperature, cached by the context the model reads.

    The cache is a plain dict emptied when full (safe to share between threads: a row
    is recomputed, never corrupted). Rows are read-only.
    """

    def __init__(self, model: NGramModel, T: float = 1.0, cache_bytes: int = CACHE_BYTES):
        self.model = model
        self.T = check_temperature(T)
        self.max_rows = max(16, int(cache_bytes) // (8 * model.V))
        self._cache: dict[tuple[int, ...], np.ndarray] = {}
        self._blocks: dict[tuple[int, ...], np.ndarray] = {}  # block_cdf of drawn rows

    def __call__(self, context: Sequence[int]) -> np.ndarray:
        """p(. | context) at this source's temperature, (V,)."""
        key = self.model.state(context)
        row = self._cache.get(key)
        if row is None:
            row = temper_row(self.model.row(context), self.T)
            row.setflags(write=False)
            if len(self._cache) >= self.max_rows:
                self._cache.clear()
            self._cache[key] = row
        return row

    def draw(self, context: Sequence[int], u: float) -> int:
        """A token from the row at context, with the uniform u (draw_row); a large row
        keeps its block sums, so the next draw from it is cheap."""
        row = self(context)
        if len(row) <= DRAW_FLAT_MAX:
            return draw(row, u)
        key = self.model.state(context)
        blocks = self._blocks.get(key)
        if blocks is None:
            blocks = block_cdf(row)
            if len(self._blocks) >= self.max_rows:
                self._blocks.clear()
            self._blocks[key] = blocks
        return draw_row(row, u, blocks)


class TextDecoder:
    """A target and a draft over one NGramCounts, each at its own temperature."""

    def __init__(self, counts: NGramCounts, target_order: int, draft_order: int,
                 T_p: float = 1.0, T_q: float = 1.0) -> None:
        self.counts = counts
        self.target = RowSource(counts.model(target_order), check_temperature(T_p, "T_p"))
        self.draft = RowSource(counts.model(draft_order), check_temperature(T_q, "T_q"))
        self.names = counts.tokenizer.names  # (V,) display names
        self._rejections: dict[tuple, np.ndarray] = {}

    @property
    def V(self) -> int:
        return self.counts.V

    @property
    def level(self) -> str:
        return self.counts.level

    @property
    def key(self) -> str:
        """Identifies the pair for caches: the counts, both orders and temperatures."""
        return (f"{self.counts.fingerprint}|p{self.target_order}@{self.T_p:g}|"
                f"q{self.draft_order}@{self.T_q:g}")

    @property
    def target_order(self) -> int:
        return self.target.model.order

    @property
    def draft_order(self) -> int:
        return self.draft.model.order

    @property
    def T_p(self) -> float:
        return self.target.T

    @property
    def T_q(self) -> float:
        return self.draft.T

    def rejection(self, rule, prefix: Sequence[int], drafter: str, x: int, p: np.ndarray,
                  q: np.ndarray, u: float) -> tuple[np.ndarray, int]:
        """The law of the token emitted when draft x is rejected at prefix, and the token
        drawn from it with u (draw_row). Cached: rejections at one prefix repeat in a
        Monte Carlo run, and the law is O(V) to build."""
        key = (rule.name, rule.values, self.target.model.state(prefix),
               self.draft.model.state(prefix) if drafter == "ngram" else (drafter,),
               x if drafter == "lookup" or rule.rejection_skips_draft else None)
        row = self._rejections.get(key)
        if row is None:
            row = self._rejection_law(rule, x, p, q)
            row.setflags(write=False)
            if len(self._rejections) >= self.target.max_rows:
                self._rejections.clear()
            self._rejections[key] = row
        return row, draw_row(row, u)

    @staticmethod
    def _rejection_law(rule, x: int, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        if rule.reject_table is _RESIDUAL and not rule.rejection_skips_draft:
            row = p - q  # rule.residual on one row, in fewer passes over V
            np.maximum(row, 0.0, out=row)
            mass = row.sum()
            return p.copy() if mass < RESIDUAL_EPS else row / mass
        row = np.array(rule.reject_table(p[None], q[None], rule.prm)[0], dtype=np.float64)
        if rule.rejection_skips_draft:  # y ~ R given y != the rejected draft
            row[x] = 0.0
            row /= row.sum()
        return row

    def encode(self, text: str) -> list[int]:
        return [int(t) for t in self.counts.tokenizer.encode(text)]

    def decode(self, ids: Sequence[int]) -> str:
        return self.counts.tokenizer.decode(ids)

    def tail(self, context: Sequence[int], n: int | None = None) -> str:
        """The newest tokens of the context as text, with an ellipsis when cut."""
        n = TAIL_TOKENS[self.level] if n is None else n
        text = self.decode(context[-n:])
        return ("…" if len(context) > n else "") + text.replace("\n", "⏎")


# ----------------------------------------------------------------------------- lookup
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


# ----------------------------------------------------------------------------- one round
@dataclass(frozen=True)
class TextDigest:
    """What a round emitted, without rows or frames."""

    k: int  # tokens drafted this round
    emitted: tuple[Emitted, ...]
    accepted: int
    beta: tuple[float, ...] = ()  # sum_x min(p, q) at each verified position

    @property
    def tokens(self) -> tuple[int, ...]:
        return tuple(e.token for e in self.emitted)


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def _one_hot(V: int, x: int) -> np.ndarray:
    q = np.zeros(V)
    q[x] = 1.0
    return q


def _round(dec: TextDecoder, context: list[int], k: int, rng: np.random.Generator,
           rule, drafter: str, light: bool, lookup: tuple[int, int] | None = None,
           betas: bool = True):
    """One round from context. light=True returns a TextDigest (same draws, no frames);
    betas=False leaves its beta out (the Monte Carlo check does not need it)."""
    prm = rule.prm
    V = dec.V
    # 1. draft: serially from q (ngram), or copied from earlier text (lookup)
    prefix = list(context)
    drafts, q_rows, qs_rows = [], [], []
    p_rows: dict[int, np.ndarray] = {}  # position -> p at its prefix, filled when needed
    if drafter == "lookup":
        lo, hi = lookup or LOOKUP_NGRAM[dec.level]
        proposal = lookup_draft(prefix, k, hi, lo)
    for i in range(k):
        if drafter == "lookup":
            if i >= len(proposal):
                break
            x = proposal[i]
            q = qs = _one_hot(V, x)
        else:
            q = dec.draft(prefix)
            if rule.draft_table is _IDENTITY:
                qs = q
                x = dec.draft.draw(prefix, rng.random())
            else:  # the rule's draft law; a draft never reads p, but the signature takes it
                p_rows[i] = dec.target(prefix)
                qs = rule.draft_table(p_rows[i][None], q[None], prm)[0]
                x = draw_row(qs, rng.random())
        q_rows.append(q)
        qs_rows.append(qs)
        drafts.append(x)
        prefix.append(x)
    kk = len(drafts)

    def p_at(i: int) -> np.ndarray:  # the target's row at position i's prefix
        if i not in p_rows:
            p_rows[i] = dec.target(context + drafts[:i])
        return p_rows[i]

    # 2-3. verify in order, one coin each, until the first rejection
    coins, thresholds, A_x = [], [], []
    rejected_at = None
    for i in range(kk):
        p, q, x = p_at(i), q_rows[i], drafts[i]
        if rule.accept_table is _RATIO:  # rule.ratio on one entry, in scalars
            px, qx = float(p[x]), float(q[x])
            a = px / qx if qx > 0 else (math.inf if px > 0 else 0.0)
        else:
            a = rule.accept_table(p[None], q[None], prm)[0, x]
        u = float(rng.random())
        coins.append(u)
        A_x.append(a)
        thresholds.append(float(keep_prob(rule, np.asarray(a))))
        if not coin_passes(rule, u, a):
            rejected_at = i + 1
            break
    # 3-4. one more token: from the rejection law, or the bonus from p at the last prefix
    final_u = float(rng.random())
    n_acc = kk if rejected_at is None else rejected_at - 1
    emitted = [Emitted(drafts[i], "accepted", i + 1) for i in range(n_acc)]
    flushed: tuple[int, ...] = ()
    rejection_row = bonus_row = None
    if rejected_at is None:
        bonus_row = dec.target(context + drafts)
        emitted.append(Emitted(dec.target.draw(context + drafts, final_u), "bonus", kk + 1))
    else:
        i = rejected_at - 1
        rejection_row, y = dec.rejection(rule, context + drafts[:i], drafter, drafts[i],
                                         p_at(i), q_rows[i], final_u)
        emitted.append(Emitted(y, "resampled", rejected_at))
        later = range(rejected_at, kk)
        if rule.keep_unverified:
            emitted += [Emitted(drafts[j], "unverified", j + 1) for j in later]
        else:
            flushed = tuple(j + 1 for j in later)
    n_verified = len(coins)
    if light:
        beta = tuple(float(overlap(p_at(i), qs_rows[i])) for i in range(n_verified)) \
            if betas else ()
        return TextDigest(kk, tuple(emitted), n_acc, beta)
    p_rows = [p_at(i) for i in range(kk)]  # the target scores every prefix in its one call
    last_tokens = [context[-1]] + drafts  # the token each position conditions on, newest
    positions = tuple(
        Position(
            i=i + 1, context=last_tokens[i], token=drafts[i],
            p_row=_frozen(p_rows[i]), q_row=_frozen(qs_rows[i]),
            p=float(p_rows[i][drafts[i]]), q=float(qs_rows[i][drafts[i]]),
            ratio=float(ratio(p_rows[i][drafts[i]], q_rows[i][drafts[i]])),
            threshold=thresholds[i] if i < n_verified else float(
                keep_prob(rule, np.asarray(ratio(p_rows[i][drafts[i]],
                                                  q_rows[i][drafts[i]])))),
            u=coins[i] if i < n_verified else None,
            accepted=bool(coin_passes(rule, coins[i], A_x[i])) if i < n_verified else None,
        )
        for i in range(kk)
    )
    steps = _steps(dec, rule, drafter, context, positions, rejected_at, emitted, flushed)
    return RoundTrace(
        rule=rule.name, ctx=int(context[-1]), k=kk, vocab=dec.names, positions=positions,
        rejected_at=rejected_at,
        rejection_row=None if rejection_row is None else _frozen(rejection_row),
        rejection_context=None if rejected_at is None else last_tokens[rejected_at - 1],
        bonus_row=None if bonus_row is None else _frozen(bonus_row),
        bonus_context=None if rejected_at is not None else last_tokens[kk],
        final_u=final_u, emitted=tuple(emitted), flushed=flushed, steps=steps,
    )


def _steps(dec, rule, drafter, context, positions, rejected_at, emitted,
           flushed) -> tuple[Step, ...]:
    """The animation's frames (kinds as in specviz.round), captions in plain numbers."""
    name = lambda x: dec.names[x]  # noqa: E731
    kk = len(positions)
    tail = dec.tail(context)
    if drafter == "lookup":
        what = (f"Prompt lookup found a match and copies the {kk} token(s) that followed it"
                if kk else "Prompt lookup found no earlier match: nothing is drafted")
        steps = [Step("start", None, f"Context '{tail}'. {what}.")]
    else:
        steps = [Step("start", None, f"Context '{tail}'. The {dec.draft_order}-gram draft "
                      f"will guess {kk} tokens.")]
    for pos in positions:
        src = (f"q(.|…'{name(pos.context)}')" if drafter == "ngram"
               else "the text after the match (q = 1)")
        steps.append(Step("draft", pos.i, f"Draft {pos.i}: '{name(pos.token)}' from {src}, "
                          f"q = {pos.q:.4f}."))
    for pos in positions:
        if not pos.verified:
            break
        verdict = "kept" if pos.accepted else "rejected"
        steps.append(Step("verify", pos.i, f"Check '{name(pos.token)}': p = {pos.p:.4f}, "
                          f"q = {pos.q:.4f}, keep if u < {pos.threshold:.4f}; "
                          f"u = {pos.u:.4f}, {verdict}."))
    if rejected_at is not None:
        res = next(e for e in emitted if e.origin == "resampled")
        steps.append(Step("residual", rejected_at, f"Rejected at position {rejected_at}: "
                          f"'{name(res.token)}' drawn from {rule.reject_law} instead."))
        if rule.keep_unverified and rejected_at < kk:
            steps.append(Step("unverified", rejected_at + 1, f"Rule '{rule.name}': the "
                              f"{kk - rejected_at} later drafts are emitted without a check."))
        elif flushed:
            steps.append(Step("flush", flushed[0], f"The {len(flushed)} later draft(s) were "
                              "conditioned on the rejected token, so they are thrown away."))
    elif kk:
        steps.append(Step("bonus", kk + 1, f"All {kk} kept: bonus token "
                          f"'{name(emitted[-1].token)}' from p at the last prefix, at no "
                          "extra target call."))
    else:
        steps.append(Step("bonus", 1, f"The target's call gives one token from p: "
                          f"'{name(emitted[-1].token)}'."))
    text = " ".join(name(e.token) for e in emitted)
    steps.append(Step("done", None, f"Round emits {len(emitted)} token(s) for one target "
                      f"call: {text}."))
    return tuple(steps)


def play_text_round(dec: TextDecoder, context: Sequence[int], k: int,
                    rng: np.random.Generator, rule: str = "correct",
                    drafter: str = "ngram") -> RoundTrace:
    """One traced round from context (token ids); the trace is a specviz.round.RoundTrace
    whose rows are the computed p and q (after temperature) at each prefix."""
    return _round(dec, _check_context(context, dec.V), _check_k(k), rng, _check_rule(rule),
                  _check_drafter(drafter), light=False)


def play_text_rounds(dec: TextDecoder, prompt: Sequence[int], k: int, n_rounds: int,
                     seed: int = 0, rule: str = "correct", drafter: str = "ngram",
                     traced: int | None = None) -> tuple[RoundTrace | TextDigest, ...]:
    """n_rounds rounds chained from the prompt on one seeded stream; with traced = m only
    the last m rounds carry rows and frames (the others are TextDigest, same draws)."""
    ctx = _check_context(prompt, dec.V)
    k, r, drafter = _check_k(k), _check_rule(rule), _check_drafter(drafter)
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, (int, np.integer)) \
            or not 1 <= n_rounds <= 10_000:
        raise ValueError(f"n_rounds must be an integer 1..10,000; got {n_rounds!r}")
    rng = np.random.default_rng(seed)
    first_traced = 0 if traced is None else max(0, int(n_rounds) - int(traced))
    out = []
    for i in range(int(n_rounds)):
        tr = _round(dec, ctx, k, rng, r, drafter, light=i < first_traced)
        out.append(tr)
        ctx = ctx + [e.token for e in tr.emitted]
    return tuple(out)


# ----------------------------------------------------------------------------- long decode
@dataclass(frozen=True)
class TextDecodeStats:
    """Totals of one long decode (one target call per round)."""

    drafter: str
    rule: str
    k: int
    rounds: int
    tokens: int
    drafted: int
    accepted: int
    beta_mean: float  # mean of sum_x min(p, q) over the verified positions (nan if none)
    per_position: tuple[float, ...]  # (k,) share of rounds whose position i was kept
    seconds: float  # wall time of the decode
    ids: tuple[int, ...]  # the generated tokens

    @property
    def tokens_per_call(self) -> float:
        return self.tokens / self.rounds

    @property
    def acceptance_rate(self) -> float:
        """accepted / drafted (nan when nothing was drafted)."""
        return self.accepted / self.drafted if self.drafted else float("nan")

    def speedup(self, c: float) -> float:
        """tokens per call / (1 + k c) (Leviathan et al. 2022, Sec. 3.4); the lookup drafter
        costs nothing to run, so its c is 0."""
        return float(speedup(self.tokens_per_call, self.k, 0.0 if self.drafter == "lookup"
                             else c))


def long_text_decode(dec: TextDecoder, prompt: Sequence[int], k: int, n_tokens: int = 1_000,
                     seed: int = 0, rule: str = "correct",
                     drafter: str = "ngram") -> TextDecodeStats:
    """Decode at least n_tokens tokens from the prompt, round after round, and count."""
    ctx = _check_context(prompt, dec.V)
    k, r, drafter = _check_k(k), _check_rule(rule), _check_drafter(drafter)
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, (int, np.integer)) \
            or not 1 <= n_tokens <= 1_000_000:
        raise ValueError(f"n_tokens must be an integer 1..1,000,000; got {n_tokens!r}")
    rng = np.random.default_rng(seed)
    n0 = len(ctx)
    rounds = drafted = accepted = 0
    betas: list[float] = []
    kept = np.zeros(k)
    t0 = time.perf_counter()
    while len(ctx) - n0 < n_tokens:
        d = _round(dec, ctx, k, rng, r, drafter, light=True)
        rounds += 1
        drafted += d.k
        accepted += d.accepted
        kept[: d.accepted] += 1
        betas += d.beta
        ctx += d.tokens
    seconds = time.perf_counter() - t0
    return TextDecodeStats(
        drafter=drafter, rule=r.name, k=k, rounds=rounds, tokens=len(ctx) - n0,
        drafted=drafted, accepted=accepted,
        beta_mean=float(np.mean(betas)) if betas else float("nan"),
        per_position=tuple(float(v) for v in kept / rounds), seconds=seconds,
        ids=tuple(ctx[n0:]),
    )


def order_sweep(counts: NGramCounts, target_order: int, prompt: Sequence[int], k: int,
                n_tokens: int = 500, seed: int = 0, T_p: float = 1.0, T_q: float = 1.0,
                c: float = 0.1, orders: Sequence[int] = COMPARE_ORDERS) -> list[dict]:
    """Draft orders against one target, each measured on a long decode from the prompt."""
    rows = []
    for n in orders:
        if n > counts.max_order:
            continue
        st = long_text_decode(TextDecoder(counts, target_order, n, T_p, T_q), prompt, k,
                              n_tokens, seed)
        rows.append({"draft order": n, "acceptance": st.acceptance_rate,
                     "beta": st.beta_mean, "tokens per call": st.tokens_per_call,
                     "speedup": st.speedup(c), "smaller than target": n < target_order,
                     "rounds": st.rounds, "tokens": st.tokens})
    return rows


def drafter_comparison(dec: TextDecoder, prompt: Sequence[int], k: int, n_tokens: int = 500,
                       seed: int = 0, c: float = 0.1, rule: str = "correct") -> list[dict]:
    """The n-gram draft against prompt lookup on the same prompt, seed and target."""
    rows = []
    for drafter in DRAFTERS:
        st = long_text_decode(dec, prompt, k, n_tokens, seed, rule, drafter)
        rows.append({"drafter": drafter, "acceptance": st.acceptance_rate,
                     "drafted per round": st.drafted / st.rounds,
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
    labels: tuple[str, ...]

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
    ctx = _check_context(context, dec.V)
    if n_tokens not in (1, 2):
        raise ValueError(f"n_tokens must be 1 or 2; got {n_tokens!r}")
    p1 = dec.target(ctx)
    names = dec.names
    if top is None:
        if n_tokens == 1:
            return Cells(1, p1.copy(), {}, {}, dec.V, True, names)
        joint = np.stack([p1[x] * dec.target(ctx + [x]) for x in range(dec.V)])  # (V, V)
        labels = tuple(f"{a}{b}" for a in names for b in names)
        return Cells(2, joint.ravel(), {}, {}, dec.V, True, labels)
    S1 = [int(x) for x in np.argsort(-p1, kind="stable")[:top]]
    law, index, first, labels = [], {}, {}, []
    for x in S1:
        if n_tokens == 1:
            index[(x,)] = len(law)
            law.append(p1[x])
            labels.append(names[x])
            continue
        p2 = dec.target(ctx + [x])
        S2 = [int(y) for y in np.argsort(-p2, kind="stable")[:top]]
        for y in S2:
            index[(x, y)] = len(law)
            law.append(p1[x] * p2[y])
            labels.append(f"{names[x]} {names[y]}")
        first[x] = len(law)
        law.append(p1[x] * (1.0 - p2[S2].sum()))
        labels.append(f"{names[x]} (other)")
    first[None] = len(law)
    law.append(1.0 - p1[S1].sum())
    labels.append("(other)")
    a = np.maximum(np.asarray(law), 0.0)
    return Cells(n_tokens, a / a.sum(), index, first, dec.V, False, tuple(labels))


def sample_first_tokens(dec: TextDecoder, context: Sequence[int], k: int, n: int,
                        seed: int = 0, rule: str = "correct", drafter: str = "ngram",
                        n_tokens: int = 2) -> list[tuple[int, ...]]:
    """n independent decodes from the context by speculative decoding; each keeps its
    first n_tokens emitted tokens (a second round runs when the first emits too few)."""
    ctx = _check_context(context, dec.V)
    k, r, drafter = _check_k(k), _check_rule(rule), _check_drafter(drafter)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= N_MC_MAX:
        raise ValueError(f"n must be an integer 1..{N_MC_MAX:,}; got {n!r}")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(int(n)):
        got: list[int] = []
        while len(got) < n_tokens:
            got += _round(dec, ctx + got, k, rng, r, drafter, light=True, betas=False).tokens
        out.append(tuple(got[:n_tokens]))
    return out


@dataclass(frozen=True)
class TextExactness:
    """Speculative decoding's first-token(s) law against the target's own, at one context."""

    rule: str
    drafter: str
    k: int
    n: int
    n_tokens: int
    cells: Cells
    counts: np.ndarray  # (n_cells,) Monte Carlo counts
    tv: float  # TV(empirical, exact)
    floor: float  # E[TV] of n exact draws
    threshold: float  # floor + sqrt(ln(1/delta) / 2n) (stats.tv_threshold)

    @property
    def at_floor(self) -> bool:
        return self.tv <= self.threshold


def text_exactness(dec: TextDecoder, context: Sequence[int], k: int, n: int, seed: int = 0,
                   rule: str = "correct", drafter: str = "ngram", n_tokens: int = 2,
                   top: int | None = None) -> TextExactness:
    """Monte Carlo check: n decodes, their first n_tokens tokens binned into cells, the
    TV to the exact law against the pass line of stats.tv_threshold."""
    cells = first_tokens_cells(dec, context, n_tokens, top)
    counts = np.zeros(len(cells.law))
    for toks in sample_first_tokens(dec, context, k, n, seed, rule, drafter, n_tokens):
        counts[cells.cell(toks)] += 1
    return TextExactness(
        rule=get_rule(rule).name, drafter=drafter, k=int(k), n=int(n), n_tokens=n_tokens,
        cells=cells, counts=counts, tv=tv(empirical(counts), cells.law),
        floor=sampling_floor(cells.law, int(n)), threshold=tv_threshold(cells.law, int(n)),
    )
