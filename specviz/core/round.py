"""One round of speculative decoding, played once and kept as a frozen trace.

The trace holds every draw the round made (drafts, coins, the residual or bonus
token), so the app animates a round by moving an index through trace.steps; it
never draws again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rules import RuleTables, apply_rule, coin_passes, keep_prob
from .sampling import draw
from .tables import VOCAB, check_ctx, check_k, token_name, validate_pair

ORIGINS = ("accepted", "resampled", "bonus", "unverified")


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Try:
    """One candidate of a multi-draft position, checked against p_j (SpecInfer)."""

    token: int
    q: float
    threshold: float  # min(1, p_j(x) / q(x))
    u: float
    accepted: bool


@dataclass(frozen=True)
class Position:
    """Draft position i (1-based): the drafted token and its verification."""

    i: int
    context: int  # the token both models condition on here
    token: int  # drafted x_i ~ q(.|context)
    p_row: np.ndarray  # (V,) target p(.|context)
    q_row: np.ndarray  # (V,) draft q(.|context)
    p: float  # p(x_i)
    q: float  # q(x_i)
    ratio: float  # p / q (inf when q = 0)
    threshold: float  # the rule's chance of keeping x_i, min(1, p/q) for the correct rule
    u: float | None  # the coin, None when the position is never verified
    accepted: bool | None  # None when never verified
    tries: tuple[Try, ...] = ()  # multi-draft: every candidate tried here, in order

    @property
    def verified(self) -> bool:
        return self.accepted is not None


@dataclass(frozen=True)
class Emitted:
    token: int
    origin: str  # one of ORIGINS
    position: int  # the 1-based position it stands in within the round


@dataclass(frozen=True)
class Step:
    """One frame of the animation."""

    kind: str  # start | draft | verify | residual | flush | unverified | bonus | done
    position: int | None  # 1-based draft position the frame is about, if any
    caption: str


@dataclass(frozen=True)
class RoundTrace:
    rule: str
    ctx: int
    k: int
    vocab: tuple[str, ...]
    positions: tuple[Position, ...]  # all k drafts, verified or not
    rejected_at: int | None  # 1-based position of the first rejection, None if all kept
    rejection_row: np.ndarray | None  # (V,) the law the rejection token came from
    rejection_context: int | None
    bonus_row: np.ndarray | None  # (V,) p at the last prefix, when all k were kept
    bonus_context: int | None
    final_u: float  # the uniform behind the residual or bonus draw
    emitted: tuple[Emitted, ...]
    flushed: tuple[int, ...]  # 1-based positions of drafts thrown away
    steps: tuple[Step, ...]

    @property
    def accepted(self) -> int:
        return sum(1 for p in self.positions if p.accepted)

    @property
    def next_ctx(self) -> int:
        return self.emitted[-1].token

    @property
    def tokens(self) -> tuple[int, ...]:
        return tuple(e.token for e in self.emitted)

    def name(self, x: int) -> str:
        return token_name(self.vocab, x)


def play_round(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int,
    rng: np.random.Generator,
    rule: str = "correct",
    vocab: tuple[str, ...] | None = None,
) -> RoundTrace:
    """Play one round from ctx: draft k tokens, verify them with one coin each, emit 1..k+1."""
    P, Q = validate_pair(P, Q, vocab)
    k = check_k(k)
    ctx = check_ctx(ctx, P.shape[0])
    vocab = tuple(vocab) if vocab is not None else _default_vocab(P.shape[0])
    return _play(apply_rule(rule, P, Q), ctx, k, rng, vocab)


def _default_vocab(V: int) -> tuple[str, ...]:
    return VOCAB if V == len(VOCAB) else tuple(str(i) for i in range(V))


@dataclass(frozen=True)
class RoundDigest:
    """What a round emitted, without its frames: enough for running totals."""

    ctx: int
    k: int
    emitted: tuple[Emitted, ...]
    accepted: int

    @property
    def next_ctx(self) -> int:
        return self.emitted[-1].token


def _play(
    rt: RuleTables, ctx: int, k: int, rng: np.random.Generator, vocab, light: bool = False
) -> RoundTrace | RoundDigest:
    """One round. light=True stops once the tokens are known (same draws, no frames)."""
    if rt.rule.kind == "multi":
        return _play_multi(rt, ctx, k, rng, vocab, light)
    # 1. draft x_1..x_k serially, each from q at the previous token
    contexts, drafts = [], []
    c = ctx
    for _ in range(k):
        x = draw(rt.Qs[c], rng.random())
        contexts.append(c)
        drafts.append(x)
        c = x
    # 2-3. verify in order with one coin each, until the first rejection
    coins: list[float] = []
    rejected_at = None
    for i, (c, x) in enumerate(zip(contexts, drafts, strict=True), start=1):
        u = float(rng.random())
        coins.append(u)
        if not coin_passes(rt.rule, u, rt.A[c, x]):
            rejected_at = i
            break
    # 3-4. one more token: from the rejection law at the rejected position, or the bonus
    final_u = float(rng.random())
    name = lambda x: token_name(vocab, x)  # noqa: E731
    emitted: list[Emitted] = []
    flushed: tuple[int, ...] = ()
    rejection_row = bonus_row = None
    rejection_context = bonus_context = None
    n_acc = k if rejected_at is None else rejected_at - 1
    emitted += [Emitted(drafts[i], "accepted", i + 1) for i in range(n_acc)]
    if rejected_at is None:
        bonus_context = drafts[-1]
        bonus_row = _frozen(rt.P[bonus_context])
        emitted.append(Emitted(draw(bonus_row, final_u), "bonus", k + 1))
    else:
        rejection_context = contexts[rejected_at - 1]
        row = rt.R[rejection_context].copy()
        if rt.rule.rejection_skips_draft:  # y ~ R[c] given y != the rejected draft
            row[drafts[rejected_at - 1]] = 0.0
            row /= row.sum()
        rejection_row = _frozen(row)
        emitted.append(Emitted(draw(rejection_row, final_u), "resampled", rejected_at))
        later = range(rejected_at, k)  # 0-based indices of the drafts after the rejection
        if rt.rule.keep_unverified:
            emitted += [Emitted(drafts[i], "unverified", i + 1) for i in later]
        else:
            flushed = tuple(i + 1 for i in later)
    if light:
        return RoundDigest(ctx, k, tuple(emitted), n_acc)
    positions = tuple(
        Position(
            i=i + 1,
            context=c,
            token=x,
            p_row=_frozen(rt.P[c]),
            q_row=_frozen(rt.Qs[c]),
            p=float(rt.P[c, x]),
            q=float(rt.Qs[c, x]),
            ratio=float(rt.P[c, x] / rt.Q[c, x]) if rt.Q[c, x] > 0 else float("inf"),
            threshold=float(keep_prob(rt.rule, rt.A[c, x])),
            u=coins[i] if i < len(coins) else None,
            accepted=bool(coin_passes(rt.rule, coins[i], rt.A[c, x])) if i < len(coins) else None,
        )
        for i, (c, x) in enumerate(zip(contexts, drafts, strict=True))
    )
    steps = _steps(rt, ctx, positions, rejected_at, emitted, flushed, name)
    return RoundTrace(
        rule=rt.rule.name,
        ctx=ctx,
        k=k,
        vocab=vocab,
        positions=positions,
        rejected_at=rejected_at,
        rejection_row=rejection_row,
        rejection_context=rejection_context,
        bonus_row=bonus_row,
        bonus_context=bonus_context,
        final_u=final_u,
        emitted=tuple(emitted),
        flushed=flushed,
        steps=steps,
    )


def _steps(rt, ctx, positions, rejected_at, emitted, flushed, name) -> tuple[Step, ...]:
    """The animation's frames, in order; captions are plain statements of the numbers."""
    k = len(positions)
    steps = [Step("start", None, f"Context '{name(ctx)}'. The draft will guess {k} tokens.")]
    for pos in positions:
        steps.append(
            Step("draft", pos.i, f"Draft {pos.i}: '{name(pos.token)}' drawn from q(.|'"
                 f"{name(pos.context)}'), q = {pos.q:.4f}.")
        )
    for pos in positions:
        if not pos.verified:
            break
        verdict = "kept" if pos.accepted else "rejected"
        steps.append(
            Step("verify", pos.i, f"Check '{name(pos.token)}': p = {pos.p:.4f}, q = {pos.q:.4f}, "
                 f"keep if u < {pos.threshold:.4f}; u = {pos.u:.4f}, {verdict}.")
        )
    if rejected_at is not None:
        res = next(e for e in emitted if e.origin == "resampled")
        steps.append(
            Step("residual", rejected_at, f"Rejected at position {rejected_at}: '{name(res.token)}'"
                 f" drawn from {rt.rule.reject_law} instead.")
        )
        if rt.rule.keep_unverified and rejected_at < k:
            steps.append(Step("unverified", rejected_at + 1, f"Rule '{rt.rule.name}': the "
                              f"{k - rejected_at} later drafts are emitted without a check."))
        elif flushed:
            steps.append(Step("flush", flushed[0], f"The {len(flushed)} later draft(s) were "
                              "conditioned on the rejected token, so they are thrown away."))
    else:
        last = emitted[-1]
        steps.append(Step("bonus", k + 1, f"All {k} kept: bonus token '{name(last.token)}' from "
                          f"p(.|'{name(positions[-1].token)}') at no extra target call."))
    text = " ".join(name(e.token) for e in emitted)
    steps.append(Step("done", None, f"Round emits {len(emitted)} token(s) for one target call: "
                      f"{text}."))
    return tuple(steps)


def play_rounds(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int,
    n_rounds: int,
    seed: int = 0,
    rule: str = "correct",
    vocab: tuple[str, ...] | None = None,
    traced: int | None = None,
) -> tuple[RoundTrace | RoundDigest, ...]:
    """A transcript: n_rounds rounds chained from ctx on one seeded stream.

    With traced = m only the last m rounds carry their frames (RoundTrace); the earlier
    ones are RoundDigest, played with the same draws at a fraction of the cost.
    """
    P, Q = validate_pair(P, Q, vocab)
    k, ctx = check_k(k), check_ctx(ctx, P.shape[0])
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, (int, np.integer)) \
            or not 1 <= n_rounds <= 10_000:
        raise ValueError(f"n_rounds must be an integer 1..10,000; got {n_rounds!r}")
    vocab = tuple(vocab) if vocab is not None else _default_vocab(P.shape[0])
    rt = apply_rule(rule, P, Q)
    rng = np.random.default_rng(seed)
    first_traced = 0 if traced is None else max(0, int(n_rounds) - int(traced))
    out = []
    for r in range(int(n_rounds)):
        tr = _play(rt, ctx, k, rng, vocab, light=r < first_traced)
        out.append(tr)
        ctx = tr.next_ctx
    return tuple(out)


def _play_multi(
    rt: RuleTables, ctx: int, k: int, rng: np.random.Generator, vocab, light: bool = False
) -> RoundTrace | RoundDigest:
    """A multi-draft round: m candidates per position, the kept one carries the path on."""
    name = lambda x: token_name(vocab, x)  # noqa: E731
    positions: list[Position] = []
    emitted: list[Emitted] = []
    c = ctx
    rejected_at = rejection_row = rejection_context = bonus_row = bonus_context = None
    for i in range(1, k + 1):
        tries = []
        for A_j in rt.chain:
            x = draw(rt.Qs[c], rng.random())
            u = float(rng.random())
            tries.append(Try(x, float(rt.Qs[c, x]), float(min(1.0, A_j[c, x])), u,
                             bool(u < A_j[c, x])))
            if tries[-1].accepted:
                break
        last = tries[-1]
        positions.append(Position(
            i=i, context=c, token=last.token, p_row=_frozen(rt.P[c]), q_row=_frozen(rt.Qs[c]),
            p=float(rt.P[c, last.token]), q=last.q,
            ratio=float(rt.P[c, last.token] / last.q) if last.q > 0 else float("inf"),
            threshold=last.threshold, u=last.u, accepted=last.accepted, tries=tuple(tries),
        ))
        if not last.accepted:
            rejected_at, rejection_context = i, c
            rejection_row = _frozen(rt.R[c])
            break
        emitted.append(Emitted(last.token, "accepted", i))
        c = last.token
    final_u = float(rng.random())
    if rejected_at is None:
        bonus_context, bonus_row = c, _frozen(rt.P[c])
        emitted.append(Emitted(draw(bonus_row, final_u), "bonus", k + 1))
    else:
        emitted.append(Emitted(draw(rejection_row, final_u), "resampled", rejected_at))
    if light:
        return RoundDigest(ctx, k, tuple(emitted), len(emitted) - 1)
    steps = [Step("start", None, f"Context '{name(ctx)}'. Up to {k} positions, "
                  f"{len(rt.chain)} candidates each.")]
    for pos in positions:
        tried = ", ".join(f"'{name(t.token)}' (u = {t.u:.3f} vs {t.threshold:.3f}: "
                          f"{'kept' if t.accepted else 'no'})" for t in pos.tries)
        steps.append(Step("verify", pos.i, f"Position {pos.i}: {tried}."))
    if rejected_at is not None:
        steps.append(Step("residual", rejected_at, f"All candidates failed at position "
                          f"{rejected_at}: '{name(emitted[-1].token)}' drawn from "
                          f"{rt.rule.reject_law}."))
    else:
        steps.append(Step("bonus", k + 1, f"All {k} positions kept: bonus token "
                          f"'{name(emitted[-1].token)}' from p."))
    text = " ".join(name(e.token) for e in emitted)
    steps.append(Step("done", None, f"Round emits {len(emitted)} token(s) for one target call: "
                      f"{text}."))
    return RoundTrace(
        rule=rt.rule.name, ctx=ctx, k=k, vocab=vocab, positions=tuple(positions),
        rejected_at=rejected_at, rejection_row=rejection_row,
        rejection_context=rejection_context, bonus_row=bonus_row, bonus_context=bonus_context,
        final_u=final_u, emitted=tuple(emitted), flushed=(), steps=tuple(steps),
    )
