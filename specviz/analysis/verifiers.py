"""Verifier functions to audit: the rule and each known bug, written as a user would write them.

Every function has the shape the audit calls (analysis.verifieraudit):

    verify(drafted, q, p, rng) -> emitted
      drafted (k,) ints; q (k, V) the draft's rows; p (k + 1, V) the target's rows, the
      last after all k drafts; rng a numpy Generator; emitted: 1..k+1 tokens

Each is written from its rule's description (Leviathan et al. 2022, Algorithm 1, and the
registry's broken rules in core.rules), in plain NumPy, one position at a time; the warps
call core.warp (the request's temperature 0.8 and top-p 0.9, the registry's defaults).
EXAMPLES maps a name to (function, what it is, the verdict it must get); a name that is a
rule of the registry is that rule's bug. Some misbehave on purpose (raise, hang, ...): the
audit must answer those with bad input.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ..core.warp import Warp, warp_rows
from .lawcompare import BAD_INPUT as BAD
from .lawcompare import BIASED, LOSSLESS

WARP = Warp(temperature=0.8, top_p=0.9)  # the warp rules' registry defaults
LENIENCE, EPS, DELTA, COIN_BITS, TOP_K = 0.5, 0.09, 0.3, 4, 2  # the registry's defaults


def _draw(w, rng) -> int:
    """One token from the non-negative row w (normalised here), by inverse CDF."""
    c = np.cumsum(w)
    return int(min(np.searchsorted(c, rng.random() * c[-1], side="right"), len(w) - 1))


def _residual(p, q):
    """norm(max(0, p - q)); p itself when that is empty (p <= q: no rejection can happen)."""
    r = np.maximum(p - q, 0.0)
    return r if r.sum() > 1e-12 else p


def _ratio(a: float, b: float) -> float:
    """a / b; a / 0 is +inf for a > 0 (always kept) and 0 for a = 0 (never kept)."""
    return a / b if b > 0 else (np.inf if a > 0 else 0.0)


def _warp(row, renormalise=True):
    return warp_rows(np.asarray(row)[None], WARP, renormalise=renormalise)[0]


def _chain(drafted, q, p, rng, *, coin, fix, bonus, keep_rest=False):
    """The token-by-token round with a pluggable coin, correction and bonus row:
    coin(i, x) -> keep x?; fix(i) -> the row of the rejection token; bonus(k) -> its row."""
    out = []
    for i, x in enumerate(drafted):
        if coin(i, int(x)):
            out.append(int(x))
            continue
        out.append(_draw(fix(i), rng))
        if keep_rest:
            out.extend(int(y) for y in drafted[i + 1:])
        return out
    return out + [_draw(bonus(len(drafted)), rng)]


def _rule(drafted, q, p, rng, *, cp=None, cq=None, fp=None, fq=None, bonus=None,
          lenience=1.0, keep_rest=False):
    """The standard round on chosen rows: keep x with min(1, cp(x) / (lenience cq(x))),
    correct from norm(max(0, fp - fq)), the bonus from bonus[k]; each row p or q unless
    given (the bugs below pass other rows)."""
    cp, fp, bonus = (p if a is None else a for a in (cp, fp, bonus))
    cq, fq = (q if a is None else a for a in (cq, fq))
    return _chain(drafted, q, p, rng,
                  coin=lambda i, x: rng.random() < _ratio(cp[i, x], lenience * cq[i, x]),
                  fix=lambda i: _residual(fp[i], fq[i]), bonus=lambda k: bonus[k],
                  keep_rest=keep_rest)


# ---------------------------------------------------------------------- lossless
def correct(drafted, q, p, rng):
    """Leviathan et al. 2022, Algorithm 1: keep x with min(1, p/q), else one token from
    norm(max(0, p - q)); all kept: the bonus from p."""
    return _rule(drafted, q, p, rng)


def sample_matching(drafted, q, p, rng):
    """Sample matching: draw y from p, keep the draft iff y equals it, else emit y and stop.
    Lossless, with acceptance sum p q instead of sum min(p, q)."""
    out = []
    for i, x in enumerate(drafted):
        y = _draw(p[i], rng)
        out.append(y)
        if y != int(x):
            return out
    return out + [_draw(p[len(drafted)], rng)]


# ---------------------------------------------------------------------- the known bugs
def greedy(drafted, q, p, rng):
    """Keep x only if it is the target's most likely token; the residual on rejection."""
    return _chain(drafted, q, p, rng, coin=lambda i, x: x == int(np.argmax(p[i])),
                  fix=lambda i: _residual(p[i], q[i]), bonus=lambda k: p[k])


def no_resample(drafted, q, p, rng):
    """On a rejection draw from p instead of the residual."""
    return _rule(drafted, q, p, rng, fq=np.zeros_like(q))


def keep_after_rejection(drafted, q, p, rng):
    """After a rejection emit the residual token, then the later drafts unchecked."""
    return _rule(drafted, q, p, rng, keep_rest=True)


def inclusive_coin(drafted, q, p, rng):
    """Keep iff u <= p/q with u on a grid of 2^4 values from 0: p(x) = 0 passes at u = 0."""
    G = 2.0 ** COIN_BITS
    return _chain(drafted, q, p, rng,
                  coin=lambda i, x: np.floor(rng.random() * G) / G <= _ratio(p[i, x], q[i, x]),
                  fix=lambda i: _residual(p[i], q[i]), bonus=lambda k: p[k])


def lenient(drafted, q, p, rng):
    """Keep x with min(1, p / (l q)), l = 0.5; the residual as the rule's."""
    return _rule(drafted, q, p, rng, lenience=LENIENCE)


def typical(drafted, q, p, rng):
    """Medusa's typical acceptance: keep x iff p(x) > min(eps, delta exp(-H(p))); else p."""
    def coin(i, x):
        pos = p[i][p[i] > 0]
        return p[i, x] > min(EPS, DELTA * np.exp(float((pos * np.log(pos)).sum())))
    return _chain(drafted, q, p, rng, coin=coin, fix=lambda i: p[i], bonus=lambda k: p[k])


def top_k_q(drafted, q, p, rng):
    """A q that is not the proposal: the ratio and residual read q's top-2, renormalised."""
    qk = warp_rows(np.asarray(q), Warp(top_k=TOP_K))
    return _rule(drafted, q, p, rng, cq=qk, fq=qk)


def argmax_q(drafted, q, p, rng):
    """A q that is not the proposal: the ratio and residual read q's argmax as one-hot."""
    qh = np.eye(q.shape[1])[np.argmax(q, axis=1)]
    return _rule(drafted, q, p, rng, cq=qh, fq=qh)


def warped(drafted, q, p, rng):
    """The rule, exact against warp(p) (T = 0.8, top-p 0.9), not against the p it is given."""
    w = _warp(p)
    return _rule(drafted, q, p, rng, cp=w, fp=w, bonus=w)


def warp_raw_target(drafted, q, p, rng):
    """The ratio and residual read the raw p; the bonus comes from warp(p)."""
    return _rule(drafted, q, p, rng, bonus=_warp(p))


def warp_raw_residual(drafted, q, p, rng):
    """The coin reads warp(p); the correction recomputes p - q from the raw p."""
    w = _warp(p)
    return _rule(drafted, q, p, rng, cp=w, bonus=w)


def warp_raw_q(drafted, q, p, rng):
    """The ratio and residual divide by warp(q) as if the draft had sampled from it."""
    w, wq = _warp(p), _warp(q)
    return _rule(drafted, q, p, rng, cp=w, cq=wq, fp=w, fq=wq, bonus=w)


def warp_unnormalised(drafted, q, p, rng):
    """The tempered p masked to top-p but not renormalised, in the ratio and the residual."""
    m = _warp(p, renormalise=False)
    return _rule(drafted, q, p, rng, cp=m, fp=m, bonus=_warp(p))


def bonus_off_by_one(drafted, q, p, rng):
    """The rule, but the bonus token drawn from p[k - 1], a position too early."""
    return _rule(drafted, q, p, rng, bonus=p[np.arange(len(p)) - 1])


# ---------------------------------------------------------------------- bad input
def raises(drafted, q, p, rng):
    """Raises on the first call."""
    raise RuntimeError("this verifier always fails")


def out_of_range(drafted, q, p, rng):
    """Emits the token V, one past the vocabulary."""
    return [q.shape[1]]


def too_many(drafted, q, p, rng):
    """Emits k + 2 tokens."""
    return [0] * (len(drafted) + 2)


def mutates(drafted, q, p, rng):
    """The rule, after writing into p."""
    p[0] = p[0] * 0.5
    return correct(drafted, q, p, rng)


def hangs(drafted, q, p, rng):
    """Never returns (sleeps an hour)."""
    time.sleep(3600)
    return [0]


Example = tuple[Callable, str, str, str]  # function, what it is, verdict, the rule it is like

EXAMPLES: dict[str, Example] = {
    "correct": (correct, "the rule (Leviathan et al. 2022, Algorithm 1)", LOSSLESS, "correct"),
    "sample_matching": (sample_matching, "sample matching at T > 0", LOSSLESS, "sampler_match"),
    "greedy": (greedy, "accept on argmax", BIASED, "greedy"),
    "no_resample": (no_resample, "resample from p", BIASED, "no_resample"),
    "continue": (keep_after_rejection, "keep drafts after a rejection", BIASED, "continue"),
    "inclusive_coin": (inclusive_coin, "coin u <= p/q, u from 0", BIASED, "inclusive_coin"),
    "lenient": (lenient, "lenience 0.5", BIASED, "lenient"),
    "typical": (typical, "Medusa's typical acceptance", BIASED, "typical"),
    "topk_q": (top_k_q, "a q that is not the proposal (top-k)", BIASED, "topk_q"),
    "greedy_draft": (argmax_q, "a q that is not the proposal (argmax)", BIASED, "greedy_draft"),
    "warped": (warped, "exact against warp(p), not p", BIASED, "warped"),
    "warp_raw_target": (warp_raw_target, "bonus from warp(p)", BIASED, "warp_raw_target"),
    "warp_raw_residual": (warp_raw_residual, "residual from the raw p", BIASED,
                          "warp_raw_residual"),
    "warp_raw_q": (warp_raw_q, "ratio by warp(q)", BIASED, "warp_raw_q"),
    "warp_unnormalised": (warp_unnormalised, "top-p mask not renormalised", BIASED,
                          "warp_unnormalised"),
    "bonus_off_by_one": (bonus_off_by_one, "bonus from the wrong position", BIASED, ""),
    "raises": (raises, "raises", BAD, ""),
    "out_of_range": (out_of_range, "a token outside 0..V-1", BAD, ""),
    "too_many": (too_many, "too many tokens", BAD, ""),
    "mutates": (mutates, "mutates its inputs", BAD, ""),
    "hangs": (hangs, "never returns", BAD, ""),
}
