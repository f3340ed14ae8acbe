"""The pairs a verifier is audited on, and every known rule's exact laws on each of them.

A pair is a bigram model pair of tables P (target), Q (draft), V x V, a start token ctx and
a draft length k, built (seeded, deterministic) to expose one kind of bug: zeros in q and in p,
p ≫ q, near-ties, a one-hot row, V from 2 to 1,000, k from 1 to 8.

A known rule is a rule of the registry (core.rules) that a function of the shape
verify(drafted (k,), q (k, V), p (k + 1, V), rng) -> emitted can be: one draft per position
(the chain and block kinds). Its exact laws on a pair come from the one engine
(core.exact.exact_joint; the kind's round tables for tokens per round). Three broken rules
bend the draft itself (topk_q, greedy_draft, warp_raw_q: the draft samples from a row other
than the q the ratio reads); a verifier sees drafts from the q it is handed, so their bug is
audited as the verifier meets it: the ratio and the residual read a q the drafts did not come
from (top-k(q), the one-hot argmax of q, warp(q)). Token trees (multi_draft, tree_*) are not
of this shape and are left out.

Three statistics a pair (the keys of statistic_keys): the first emitted token (V,), the
first two (V, V), tokens in the first round (k + 1,: 1..k+1). Above BUCKETS tokens the
token laws are pooled: the BUCKETS - 1 tokens any law weighs most, one bucket for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache, partial

import numpy as np

from ..core.exact import exact_joint
from ..core.kinds import kind_of
from ..core.rule import ratio, residual
from ..core.ruledefs import Rule, apply_rule, given_p, on
from ..core.rules import RULES
from ..core.scenario import Scenario

BLOCK_V_MAX = 64  # the block kind's exact joint is computed up to this V
BUCKETS = 24  # token laws above this many tokens are pooled into this many cells
FIRST, TWO, TOKENS = "first token", "first two tokens", "tokens per round"
STATISTICS = (FIRST, TWO, TOKENS)
OUTPUT = (FIRST, TWO)  # the statistics that decide lossless (tokens per round is acceptance)
LEFT_OUT = ("one_hot", "multi_draft", "tree_iid", "tree_wor", "tree_first_residual",
            "tree_wor_as_iid")  # not one draft a position from q: not a verify(...) shape


@dataclass(frozen=True)
class Pair:
    """One audited pair: the tables, where rounds start, k, and the bug it exposes."""

    name: str
    P: np.ndarray  # (V, V) target rows by context
    Q: np.ndarray  # (V, V) draft rows by context
    ctx: int
    k: int
    why: str

    @property
    def V(self) -> int:
        return self.P.shape[0]


def _rows(rng: np.random.Generator, V: int, a: float) -> np.ndarray:
    return rng.dirichlet(np.full(V, a), size=V)


def _norm(M: np.ndarray) -> np.ndarray:
    return M / M.sum(axis=1, keepdims=True)


def _zeros(rng) -> Pair:
    P, Q = _rows(rng, 4, 1.0), _rows(rng, 4, 1.0)
    P[:, 3] = 0.0  # token 3: q proposes it (0.5), p never emits it
    Q[:, 3] = Q[:, :3].sum(axis=1)  # about half of q
    Q[:, 0] = 0.0  # token 0: p emits it, q never proposes it
    return Pair("zeros", _norm(P), _norm(Q), 1, 2,
                "zeros in q and in p: a draft p forbids, a token only the residual gives")


def _p_over_q(rng) -> Pair:
    P, Q = _rows(rng, 6, 1.0), _rows(rng, 6, 1.0)
    P[:, 2] += 4.0 * P.sum(axis=1)  # p(2) ~ 0.8
    Q[:, 2] = 0.02 * Q.sum(axis=1)  # q(2) ~ 0.02
    return Pair("p ≫ q", _norm(P), _norm(Q), 0, 3, "p ≫ q: most of p comes from the residual")


def _ties(rng) -> Pair:
    V = 5
    P = _norm(1.0 + 0.02 * rng.random((V, V)))  # near-uniform: argmax a near-tie
    Q = _norm(1.0 + 0.5 * rng.random((V, V)))
    return Pair("near-ties", P, Q, 0, 2, "near-ties: the target's argmax is nearly arbitrary")


def _one_hot(rng) -> Pair:
    P, Q = _rows(rng, 4, 1.0), _rows(rng, 4, 1.0)
    P[2] = np.eye(4)[1]  # after token 2 the target is certain: token 1
    Q[1] = np.eye(4)[2]  # after token 1 the draft is certain: token 2
    return Pair("one-hot", P, Q, 2, 1, "a one-hot row in p and in q; k = 1: the bonus's row")


def _bonus() -> Pair:
    """k = 1 and q close to p: the bonus is about half the output; each row of p has a tail
    of small tokens (0.05 each) that a top-p or temperature warp would cut."""
    base = np.array([0.5, 0.3, 0.05, 0.05, 0.05, 0.05])
    P = np.stack([np.roll(base, c) for c in range(6)])
    return Pair("k = 1", P, 0.9 * P + 0.1 / 6, 0, 1,
                "k = 1, q close to p: the bonus token's row; rows with a tail a warp cuts")


def _random(rng, name, V, k, a, why, near=0.6) -> Pair:
    P = _rows(rng, V, a)
    Q = _norm(near * P + (1.0 - near) * _rows(rng, V, a))
    return Pair(name, P, Q, 0, k, why)


@lru_cache(maxsize=1)
def pairs() -> tuple[Pair, ...]:
    """The audited pairs (seeded: the same every call)."""
    rng = np.random.default_rng(41)
    return (_zeros(rng), _p_over_q(rng), _ties(rng), _one_hot(rng),
            _bonus(),
            _random(rng, "V = 2, k = 8", 2, 8, 1.0, "two tokens, eight drafts a round"),
            _random(rng, "V = 8, k = 8", 8, 8, 0.5, "long rounds: late positions, the bonus"),
            _random(rng, "V = 16, k = 4", 16, 4, 0.3, "a peaked moderate vocabulary"),
            _random(rng, "V = 1000, k = 2", 1000, 2, 0.05, "a large vocabulary"))


def pair_named(name: str) -> Pair:
    found = [p for p in pairs() if p.name == name]
    if not found:
        raise ValueError(f"unknown pair {name!r}; pairs: {', '.join(p.name for p in pairs())}")
    return found[0]


# ---------------------------------------------------------------------- the known rules
def _seen_by_verifier(rule: Rule) -> Rule:
    """A rule whose draft samples from a row other than Q, as a verifier meets it: the
    drafts come from Q, the ratio and the residual read that other row instead."""
    bent = rule.draft_table
    p_rows = rule.accept_table.args[1] if isinstance(rule.accept_table, partial) else given_p
    return replace(rule, draft_table=RULES["correct"].draft_table,
                   accept_table=partial(on, ratio, p_rows, bent),
                   reject_table=partial(on, residual, p_rows, bent))


SEEN_BY_VERIFIER = {  # what each of these bugs looks like from inside a verifier
    "topk_q": "its ratio and residual read top-k(q), not the q the drafts came from",
    "greedy_draft": "its ratio and residual read the one-hot argmax of q, not q",
    "warp_raw_q": "its ratio and residual read warp(q), not the q the drafts came from",
}


@lru_cache(maxsize=1)
def known_rules() -> dict[str, Rule]:
    """name -> the rule as a verify(...) function can be it (see the module's docstring)."""
    return {name: _seen_by_verifier(r) if name in SEEN_BY_VERIFIER else r
            for name, r in RULES.items() if name not in LEFT_OUT}


def bug_text(name: str) -> str:
    """What the known rule does wrong, in one line (its registry description)."""
    r = RULES[name]
    return SEEN_BY_VERIFIER.get(name, r.description)


def tokens_law(rule: Rule, pair: Pair) -> np.ndarray:
    """P(the first round emits L tokens), L = 1..k+1 (k + 1,): from the kind's round tables
    D[ctx, j] (j drafts kept); a round emits j + 1, or k under keep_unverified when j < k."""
    rt = apply_rule(rule, pair.P, pair.Q)
    D = kind_of(rule).tables(rt, pair.k, False)[0][pair.ctx]  # (k + 1,)
    j = np.arange(pair.k + 1)
    length = np.where(j < pair.k, pair.k, pair.k + 1) if rule.keep_unverified else j + 1
    out = np.zeros(pair.k + 1)
    np.add.at(out, length - 1, D)
    return out


def _exact(rule: Rule, pair: Pair) -> dict[str, np.ndarray]:
    sc = Scenario.of(pair.P, pair.Q, ctx=pair.ctx, k=pair.k, rule=rule)
    two = exact_joint(sc, n_tokens=2)  # (V, V)
    return {FIRST: two.sum(axis=1), TWO: two, TOKENS: tokens_law(rule, pair)}


@lru_cache(maxsize=16)
def exact_laws(pair_name: str) -> tuple[np.ndarray, dict[str, dict[str, np.ndarray]]]:
    """(cells, laws): token -> cell (V,), and rule name -> {statistic: exact law} on the
    pair, token laws pooled into the cells (block verification only up to BLOCK_V_MAX
    tokens: its exact law costs minutes and gigabytes past that)."""
    pair = pair_named(pair_name)
    laws = {name: _exact(r, pair) for name, r in known_rules().items()
            if r.kind != "block" or pair.V <= BLOCK_V_MAX}
    cells = buckets(pair.V, [law[TWO] for law in laws.values()])
    return cells, {name: {FIRST: pool(law[FIRST], cells), TWO: pool(law[TWO], cells),
                          TOKENS: law[TOKENS]} for name, law in laws.items()}


def buckets(V: int, twos: list[np.ndarray]) -> np.ndarray:
    """token -> cell (V,): identity up to BUCKETS tokens; else the BUCKETS - 1 tokens that
    some two-token law (V, V) weighs most at either position, then one cell for the rest."""
    if V <= BUCKETS:
        return np.arange(V)
    weight = np.zeros(V)
    for two in twos:
        weight = np.maximum(weight, np.maximum(two.sum(axis=1), two.sum(axis=0)))
    top = np.argsort(-weight, kind="stable")[:BUCKETS - 1]
    cells = np.full(V, BUCKETS - 1)
    cells[top] = np.arange(BUCKETS - 1)
    return cells


def pool(law: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """A token law (V,) or (V, V) summed into its cells: (B,) or (B, B)."""
    B = int(cells.max()) + 1
    if law.ndim == 1:
        return np.bincount(cells, weights=law, minlength=B)
    out = np.zeros((B, B))
    np.add.at(out, (cells[:, None], cells[None, :]), law)
    return out
