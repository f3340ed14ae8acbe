"""A verification rule as data, and a rule applied to a pair of tables.

A rule is read through a few tables over (context c, token x):
  draft_table(P, Q)  -> Qs: what the draft really samples from
  accept_table(P, Q) -> A:  draft x at context c is kept iff u < A[c, x] (u <= A if inclusive)
  reject_table(P, Q) -> R:  law of the token emitted on the first rejection
  target_table(P, Q) -> the law the output must follow (P, or warp(P) for a warped request)
plus flags: keep_unverified (emit the later drafts anyway), rejection_skips_draft (the
rejection token is R[c] with the rejected draft removed), and its kind: how a round
drafts and verifies (specviz.core.kinds: "chain", "block", "tree"). apply_rule turns a
rule and a pair into RuleTables, which also carry the exact per-position laws acc
(drafted and kept) and rej (rejected, y emitted). The registry is specviz.core.rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from .rule import ratio, residual

Table = np.ndarray  # (V, V), row = context c, column = token x
Params = dict[str, float]


# ---------------------------------------------------------------------- the standard tables
def given_q(P: Table, Q: Table, prm: Params) -> Table:
    return Q


def given_p(P: Table, Q: Table, prm: Params) -> Table:
    return P


def on(f: Callable[[Table, Table], Table], p_rows: Callable, q_rows: Callable,
       P: Table, Q: Table, prm: Params) -> Table:
    """f of chosen rows: partial(on, ratio, given_p, one_hot) is ratio(P, one_hot(Q))."""
    return f(p_rows(P, Q, prm), q_rows(P, Q, prm))


ratio_table = partial(on, ratio, given_p, given_q)  # p / q
residual_table = partial(on, residual, given_p, given_q)  # norm(max(0, p - q))


@dataclass(frozen=True)
class Param:
    name: str
    default: float
    lo: float
    hi: float
    help: str
    integer: bool = False


@dataclass(frozen=True)
class Rule:
    """One verification rule."""

    name: str
    label: str
    family: str  # "lossless" | "lossy by design" | "broken"
    source: str  # where it comes from: a paper section or the public issue that reported it
    description: str
    draft_table: Callable[[Table, Table, Params], Table] = given_q
    accept_table: Callable[[Table, Table, Params], Table] = ratio_table
    reject_table: Callable[[Table, Table, Params], Table] = residual_table
    target_table: Callable[[Table, Table, Params], Table] = given_p  # the law to follow
    reject_law: str = "norm(max(0, p - q))"  # how the app names the rejection law
    keep_unverified: bool = False  # emit the drafts after a rejection without checking them
    rejection_skips_draft: bool = False  # the rejection token avoids the rejected draft
    inclusive: bool = False  # keep iff u <= A, with u on a grid of 2^u_bits values from 0
    kind: str = "chain"  # names its kind in specviz.core.kinds: "chain" (one draft per
    # position), "block" (the block verified jointly), "tree" (a token tree)
    tree: str = ""  # kind "tree": how siblings are drawn and verified (kinds.tree.MODES)
    params: tuple[Param, ...] = ()
    values: tuple[tuple[str, float], ...] = ()  # overrides of the parameters' defaults
    paths: tuple[tuple[int, ...], ...] = ()  # kind "tree": an explicit tree as paths of
    # sibling indices (Medusa's choices); () drafts the preset 'shape'

    @property
    def lossless(self) -> bool:
        return self.family == "lossless"

    @property
    def prm(self) -> Params:
        p = {q.name: q.default for q in self.params}
        p.update(dict(self.values))
        return p

    def with_params(self, **kw: float) -> Rule:
        """The same rule with some parameters changed (checked against their ranges)."""
        known = {q.name: q for q in self.params}
        for key, v in kw.items():
            if key not in known:
                raise ValueError(f"rule {self.name!r} has no parameter {key!r}; "
                                 f"it has: {', '.join(known) or 'none'}")
            q = known[key]
            if not (isinstance(v, (int, float)) and q.lo <= v <= q.hi) or (
                q.integer and v != int(v)
            ):
                raise ValueError(f"{self.name}.{key} must be "
                                 f"{'an integer' if q.integer else 'a number'} in "
                                 f"[{q.lo:g}, {q.hi:g}]; got {v!r}")
        return replace(self, values=tuple({**dict(self.values), **kw}.items()))

    @property
    def param_text(self) -> str:
        if self.paths:
            return f"tree = {len(self.paths)} paths"
        return ", ".join(f"{k} = {v:g}" for k, v in self.prm.items())


def keep_prob(rule: Rule, A: Table) -> Table:
    """P(coin passes | A): clip(A, 0, 1) for u ~ U[0, 1) and the strict test u < A.

    Inclusive test on a grid u in {0, 1/G, ..., (G-1)/G}, G = 2^u_bits:
    P(u <= A) = min(G, floor(A G) + 1) / G for A >= 0, so even A = 0 passes with 1/G.
    """
    if not rule.inclusive:
        return np.clip(A, 0.0, 1.0)
    G = 2.0 ** rule.prm["u_bits"]
    safe = np.where(np.isfinite(A), A, G)  # inf passes always
    return np.where(A >= 0, np.minimum(G, np.floor(safe * G) + 1.0) / G, 0.0)


def coin_passes(rule: Rule, u: np.ndarray, A: np.ndarray) -> np.ndarray:
    """The coin as the rule executes it."""
    if not rule.inclusive:
        return u < A
    G = 2.0 ** rule.prm["u_bits"]
    return np.floor(u * G) / G <= A


@dataclass(frozen=True)
class RuleTables:
    """A rule applied to a pair: every table the engines need, computed once."""

    rule: Rule
    P: Table  # (V, V) the law to follow: the target, warped for the warp rules
    Q: Table  # (V, V) draft as given
    Qs: Table  # (V, V) what the draft samples from
    A: Table  # (V, V) chain kind: keep iff the coin passes A[c, x]
    R: Table  # (V, V) law of the rejection token at context c
    acc: Table  # (V, V) exact: x drafted at c and kept
    rej: Table  # (V, V) exact: the position rejected and y emitted
    W: Table  # (V, V) exact: x drafted at c and rejected (chain kind)

    @property
    def V(self) -> int:
        return self.P.shape[0]

    @property
    def reject_mass(self) -> np.ndarray:
        """The chance the position at context c is rejected. (V,)"""
        return self.rej.sum(axis=1)


def apply_rule(r: Rule, P: Table, Q: Table) -> RuleTables:
    """Every table the engines read of rule r on the pair (P, Q)."""
    prm = r.prm
    Qs = r.draft_table(P, Q, prm)
    A = r.accept_table(P, Q, prm)
    R = r.reject_table(P, Q, prm)
    P = r.target_table(P, Q, prm)
    keep = keep_prob(r, A)  # (V, V)
    acc = Qs * keep
    W = Qs * (1.0 - keep)
    if r.rejection_skips_draft:
        # y ~ R[c] given y != x, for the rejected x: sum_x W[c, x] R[c, y] 1[y != x] / (1 - R[c, x])
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(R < 1.0, W / (1.0 - R), 0.0)  # (V, V)
        rej = R * (w.sum(axis=1, keepdims=True) - w)
    else:
        rej = W.sum(axis=1, keepdims=True) * R
    return RuleTables(r, P, Q, Qs, A, R, acc, rej, W)

