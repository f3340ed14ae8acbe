"""A literal oracle for every verification rule, written from the rules' descriptions.

It imports nothing from specviz: each rule is re-derived here from its description in
rules.py's text and SPEC.md, on plain Python floats. A round is enumerated as the
algorithm executes it: a draft sequence x1..xd drawn from what the draft samples, then
position by position a verification (the coin and, on a failure, the rejection draw),
then the bonus from p at the last prefix. Every branch carries its probability; the law
of the first n emitted tokens is the sum over branches.

Drafts beyond the tokens still needed are never drawn: the i-th draft of a round can only
become the round's i-th token, so drafts past the needed count cannot reach the output
and summing them out is exact.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Row = list[float]
KEEP = -1  # a verification outcome meaning "the draft stands"
Verify = Callable[[Row, Row, int], list[tuple[float, int]]]  # (p, q, x) -> [(prob, KEEP | y)]


def _norm(v: Row) -> Row:
    s = sum(v)
    return [a / s for a in v] if s > 0 else [0.0] * len(v)


def _residual(p: Row, q: Row) -> Row:
    """norm(max(0, p - q))."""
    return _norm([max(0.0, a - b) for a, b in zip(p, q, strict=True)])


def _argmax(v: Row) -> int:
    """The first most likely index."""
    best = 0
    for i, a in enumerate(v):
        if a > v[best]:
            best = i
    return best


def _one_hot(v: Row) -> Row:
    h = [0.0] * len(v)
    h[_argmax(v)] = 1.0
    return h


def _top_k(q: Row, kk: int) -> Row:
    """q kept on its kk largest entries (ties: lower index first), renormalised."""
    order = sorted(range(len(q)), key=lambda i: (-q[i], i))[:kk]
    return _norm([q[i] if i in order else 0.0 for i in range(len(q))])


def _coin_then(keep: float, law: Row) -> list[tuple[float, int]]:
    """Kept with probability keep; otherwise one token drawn from law."""
    out = [(keep, KEEP)] if keep > 0 else []
    return out + [((1.0 - keep) * w, y) for y, w in enumerate(law) if keep < 1 and w > 0]


def _ratio(p: Row, q: Row, x: int) -> float:
    return p[x] / q[x] if q[x] > 0 else math.inf


# ------------------------------------------------------------------ the verifications
def v_standard(p: Row, q: Row, x: int) -> list[tuple[float, int]]:
    return _coin_then(min(1.0, _ratio(p, q, x)), _residual(p, q))


def v_from_p(p: Row, q: Row, x: int) -> list[tuple[float, int]]:
    return _coin_then(min(1.0, _ratio(p, q, x)), p)


def v_greedy(p: Row, q: Row, x: int) -> list[tuple[float, int]]:
    return _coin_then(1.0 if x == _argmax(p) else 0.0, _residual(p, q))


def v_one_hot(p: Row, q: Row, x: int) -> list[tuple[float, int]]:
    """q is one-hot at x: keep with p(x); a rejection draws from p with x removed."""
    return _coin_then(p[x], _norm([0.0 if y == x else a for y, a in enumerate(p)]))


def v_sampler_match(p: Row, q: Row, x: int) -> list[tuple[float, int]]:
    """A fresh y ~ p: the draft stands iff y == x; otherwise y is emitted."""
    return [(w, KEEP if y == x else y) for y, w in enumerate(p) if w > 0]


def v_typical(eps: float, delta: float) -> Verify:
    def verify(p: Row, q: Row, x: int) -> list[tuple[float, int]]:
        entropy = -sum(a * math.log(a) for a in p if a > 0)
        cut = min(eps, delta * math.exp(-entropy))
        return _coin_then(1.0 if p[x] > cut else 0.0, p)
    return verify


def v_lenient(lenience: float) -> Verify:
    def verify(p: Row, q: Row, x: int) -> list[tuple[float, int]]:
        return _coin_then(min(1.0, _ratio(p, q, x) / lenience), _residual(p, q))
    return verify


def v_inclusive(u_bits: int) -> Verify:
    """u on the grid {0, 1/G, ..., (G-1)/G}, each value enumerated; keep iff u <= p/q."""
    G = 2**u_bits

    def verify(p: Row, q: Row, x: int) -> list[tuple[float, int]]:
        r = _ratio(p, q, x)
        keep = sum(1 for j in range(G) if j / G <= r) / G
        return _coin_then(keep, _residual(p, q))
    return verify


# ------------------------------------------------------------------ the warp
def warp_mask(p: Row, temperature: float, top_k: int, top_p: float, min_p: float) -> Row:
    """The tempered row masked, not renormalised: r = norm(p^(1/T)); in the order most
    likely first (ties: lower index), top-k keeps the first top_k; top-p keeps a token while
    the mass ahead of it, in the row top-k left renormalised, is below top_p; min-p keeps
    r(x) >= min_p max r."""
    r = _norm([a ** (1.0 / temperature) if a > 0 else 0.0 for a in p])
    order = [i for i in sorted(range(len(r)), key=lambda i: (-r[i], i)) if r[i] > 0]
    if top_k:
        order = order[:top_k]
    total, ahead, kept = sum(r[i] for i in order), 0.0, []
    for i in order:
        if ahead < top_p * total:
            kept.append(i)
        ahead += r[i]
    kept = [i for i in kept if r[i] >= min_p * r[order[0]]]
    return [r[i] if i in kept else 0.0 for i in range(len(r))]


def _residual_as_sampled(p: Row, q: Row) -> Row:
    """norm(max(0, p - q)), or norm(p) when that is empty (a sampler renormalises)."""
    d = _residual(p, q)
    return d if sum(d) > 0 else _norm(p)


def warp_rules(temperature: float = 0.8, top_k: int = 0, top_p: float = 0.9,
               min_p: float = 0.0, warp_draft: int = 0) -> dict[str, OracleRule]:
    """The warp rules, from their descriptions: the output must follow warp(p); each reads
    a different pair of rows for its coin and its correction; the bonus from warp(p). The
    draft samples warp(q) with warp_draft = 1 (warp_raw_q always: that is its bug)."""
    def mask(p: Row) -> Row:
        return warp_mask(p, temperature, top_k, top_p, min_p)

    def warp(p: Row) -> Row:
        return _norm(mask(p))

    def on(coin_p, coin_q, fix_p, fix_q) -> Verify:
        def verify(p: Row, q: Row, x: int) -> list[tuple[float, int]]:
            a, b = coin_p(p), coin_q(q)
            return _coin_then(min(1.0, _ratio(a, b, x)), _residual_as_sampled(fix_p(p),
                                                                            fix_q(q)))
        return verify

    def raw(v: Row) -> Row:
        return v

    qs = warp if warp_draft else raw  # the row the draft samples from, from q's
    return {
        "warped": OracleRule(on(warp, qs, warp, qs), draft=qs, bonus=warp),
        "warp_raw_target": OracleRule(on(raw, qs, raw, qs), draft=qs, bonus=warp),
        "warp_raw_residual": OracleRule(on(warp, qs, raw, qs), draft=qs, bonus=warp),
        "warp_raw_q": OracleRule(on(warp, raw, warp, raw), draft=warp, bonus=warp),
        "warp_unnormalised": OracleRule(on(mask, qs, mask, qs), draft=qs, bonus=warp),
    }


# ------------------------------------------------------------------ the rules
@dataclass(frozen=True)
class OracleRule:
    verify: Verify
    draft: Callable[[Row], Row] = lambda q: q  # what the draft samples, from q's row
    unverified_tail: bool = False  # 'continue': emit the drafts after a rejection
    candidates: int = 0  # multi_draft: m candidates per position (0: single draft)
    bonus_one_back: bool = False  # a deliberately wrong oracle: the bonus from p one prefix early
    bonus: Callable[[Row], Row] = lambda p: p  # the bonus token's law, from p's row


def oracle_rules(top_k: int = 2, u_bits: int = 4, eps: float = 0.09, delta: float = 0.3,
                 lenience: float = 0.5, m: int = 3) -> dict[str, OracleRule]:
    """Each rule at the registry's documented default parameters (or those given)."""
    return {
        "correct": OracleRule(v_standard),
        "one_hot": OracleRule(v_one_hot, draft=_one_hot),
        "sampler_match": OracleRule(v_sampler_match),
        "multi_draft": OracleRule(v_standard, candidates=m),
        "typical": OracleRule(v_typical(eps, delta)),
        "lenient": OracleRule(v_lenient(lenience)),
        "greedy": OracleRule(v_greedy),
        "no_resample": OracleRule(v_from_p),
        "continue": OracleRule(v_standard, unverified_tail=True),
        "topk_q": OracleRule(v_standard, draft=lambda q: _top_k(q, top_k)),
        "greedy_draft": OracleRule(v_standard, draft=_one_hot),
        "inclusive_coin": OracleRule(v_inclusive(u_bits)),
    }


Branches = list[tuple[float, list[int]]]  # (probability, tokens emitted by the round)


def _drafts(rule: OracleRule, Q: list[Row], c: int, d: int) -> list[tuple[float, list[int]]]:
    """Every draft sequence x1..xd from context c, with its probability."""
    seqs = [(1.0, [])]
    for _ in range(d):
        seqs = [(pr * w, xs + [x]) for pr, xs in seqs
                for x, w in enumerate(rule.draft(Q[xs[-1] if xs else c])) if w > 0]
    return seqs


def _single_round(rule: OracleRule, P, Q, c: int, k: int, need: int) -> Branches:
    out: Branches = []
    for pr, xs in _drafts(rule, Q, c, min(k, need)):
        _verify_from(rule, P, Q, (c, *xs), 0, pr, [], k, out)
    return out


def _verify_from(rule, P, Q, prefixes, i, prob, emitted, k, out: Branches) -> None:
    """Verify draft i (0-based) at context prefixes[i], then the rest of the round.

    prefixes = (c, x1, ..., xd): the round's start context and its drafts."""
    xs, ctx = prefixes[1:], prefixes[i]
    if i == len(xs):
        if i < k:  # the tokens still needed are all here: the rest of the round is unseen
            out.append((prob, emitted))
            return
        at = prefixes[i - 1] if rule.bonus_one_back else ctx
        for y, w in enumerate(rule.bonus(P[at])):  # all k kept: the bonus at the last prefix
            if w > 0:
                out.append((prob * w, emitted + [y]))
        return
    for w, outcome in rule.verify(P[ctx], Q[ctx], xs[i]):
        if outcome == KEEP:
            _verify_from(rule, P, Q, prefixes, i + 1, prob * w, emitted + [xs[i]], k, out)
        elif rule.unverified_tail:
            out.append((prob * w, emitted + [outcome] + list(xs[i + 1:])))
        else:
            out.append((prob * w, emitted + [outcome]))


def _multi_round(rule: OracleRule, P, Q, c: int, k: int, need: int) -> Branches:
    """SpecInfer: at each position candidates j = 1..m, i.i.d. from q(.|c), candidate j
    tried against p_j (p_1 = p, p_(j+1) = norm(max(0, p_j - q))); all fail: emit from
    p_(m+1). The next position's candidates are drawn at the kept candidate."""
    out: Branches = []

    def position(i: int, ctx: int, prob: float, emitted: list[int]) -> None:
        if len(emitted) >= need:
            out.append((prob, emitted))
            return
        if i == k:
            for y, w in enumerate(P[ctx]):
                if w > 0:
                    out.append((prob * w, emitted + [y]))
            return
        tries(i, ctx, prob, emitted, list(P[ctx]), rule.candidates)

    def tries(i: int, ctx: int, prob: float, emitted: list[int], p_j: Row, left: int) -> None:
        if left == 0:
            for y, w in enumerate(p_j):
                if w > 0:
                    out.append((prob * w, emitted + [y]))
            return
        q = Q[ctx]
        fail = 0.0  # every failed candidate leaves the same p_(j+1): one branch for them all
        for x, qx in enumerate(q):
            if qx == 0:
                continue
            keep = min(1.0, _ratio(p_j, q, x))
            if keep > 0:
                position(i + 1, x, prob * qx * keep, emitted + [x])
            fail += qx * (1 - keep)
        if fail > 0:
            tries(i, ctx, prob * fail, emitted, _residual(p_j, q), left - 1)

    position(0, c, 1.0, [])
    return out


def oracle_joint(P: np.ndarray, Q: np.ndarray, ctx: int, k: int, n_tokens: int,
                 rule: str | OracleRule) -> np.ndarray:
    """Law of the first n_tokens emitted from ctx. (V,)*n_tokens"""
    r = oracle_rules()[rule] if isinstance(rule, str) else rule
    Pl, Ql = P.tolist(), Q.tolist()
    play = _multi_round if r.candidates else _single_round
    partial: dict[tuple[int, ...], float] = {(): 1.0}
    law = np.zeros((len(Pl),) * n_tokens)
    while partial:
        nxt: dict[tuple[int, ...], float] = defaultdict(float)
        for prefix, prob in partial.items():
            c = prefix[-1] if prefix else ctx  # a round starts at the last emitted token
            for w, toks in play(r, Pl, Ql, c, k, n_tokens - len(prefix)):
                seq = prefix + tuple(toks)
                if len(seq) >= n_tokens:
                    law[seq[:n_tokens]] += prob * w
                else:
                    nxt[seq] += prob * w
        partial = nxt
    return law
