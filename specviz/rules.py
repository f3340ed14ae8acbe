"""The registry of verification rules: the correct one and the broken ones users switch on.

Every engine (play_round, simulate, exact_joint) reads a rule through the same three
tables, so the rules mean the same thing everywhere:
  draft_table(P, Q)  -> Qs (V, V): what the draft really samples from
  accept_table(P, Q) -> A  (V, V): draft x at context c is kept iff u < A[c, x], u ~ U[0, 1)
  reject_table(P, Q) -> R  (V, V): law of the token emitted on the first rejection
and one flag, keep_unverified: after a rejection, emit the later drafts anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .rule import ratio, residual

Table = np.ndarray  # (V, V)


def _draft_as_is(P: Table, Q: Table) -> Table:
    return Q


def _ratio_table(P: Table, Q: Table) -> Table:
    return ratio(P, Q)


def _residual_table(P: Table, Q: Table) -> Table:
    return residual(P, Q)


def _target_table(P: Table, Q: Table) -> Table:
    return P


def _greedy_table(P: Table, Q: Table) -> Table:
    """A[c, x] = 1 iff x = argmax_x P[c] (first maximum)."""
    A = np.zeros_like(P)
    A[np.arange(P.shape[0]), P.argmax(axis=1)] = 1.0
    return A


@dataclass(frozen=True)
class Rule:
    """One verification rule: how drafts are kept and what is emitted on a rejection."""

    name: str
    label: str
    lossless: bool
    source: str
    description: str
    draft_table: Callable[[Table, Table], Table] = _draft_as_is
    accept_table: Callable[[Table, Table], Table] = _ratio_table
    reject_table: Callable[[Table, Table], Table] = _residual_table
    keep_unverified: bool = False
    reject_law: str = "norm(max(0, p - q))"  # how the app names the rejection law

    def accept_prob_table(self, P: Table, Q: Table) -> Table:
        """min(1, A): the chance each draft is kept, given it was drafted. (V, V)"""
        return np.clip(self.accept_table(P, Q), 0.0, 1.0)


RULES: dict[str, Rule] = {
    r.name: r
    for r in (
        Rule(
            name="correct",
            label="correct (rejection sampling)",
            lossless=True,
            source="Leviathan et al. 2022, Algorithm 1; Chen et al. 2023, Algorithm 2",
            description="keep x with probability min(1, p/q); on the first rejection emit one "
            "token from norm(max(0, p - q)); if all k pass, a bonus token from p",
        ),
        Rule(
            name="greedy",
            label="greedy match",
            lossless=False,
            source="SPEC.md broken rule 'greedy'",
            description="keep x only if it is the target's most likely token; residual on "
            "rejection",
            accept_table=_greedy_table,
        ),
        Rule(
            name="no_resample",
            label="no residual (resample from p)",
            lossless=False,
            source="SPEC.md broken rule 'no_resample'",
            description="on a rejection draw from p instead of the residual, so tokens the "
            "draft over-proposes get their mass twice",
            reject_table=_target_table,
            reject_law="p",
        ),
        Rule(
            name="continue",
            label="keep later drafts unverified",
            lossless=False,
            source="SPEC.md broken rule 'continue'",
            description="after a rejection emit the residual token, then the rest of the "
            "drafts without checking them, and end the round (no bonus)",
            keep_unverified=True,
        ),
    )
}


def get_rule(rule: str | Rule) -> Rule:
    """Look a rule up by name; the error lists the valid names."""
    if isinstance(rule, Rule):
        return rule
    if isinstance(rule, str) and rule in RULES:
        return RULES[rule]
    raise ValueError(f"unknown rule {rule!r}; valid rules: {', '.join(RULES)}")


@dataclass(frozen=True)
class RuleTables:
    """A rule applied to a pair: everything the engines need, computed once."""

    rule: Rule
    P: Table  # (V, V) target
    Q: Table  # (V, V) draft as given (used in the ratio)
    Qs: Table  # (V, V) what the draft samples from
    A: Table  # (V, V) keep iff u < A[c, x]
    R: Table  # (V, V) law emitted on a rejection

    @property
    def V(self) -> int:
        return self.P.shape[0]

    @property
    def acc(self) -> Table:
        """ACC[c, x] = Qs[c, x] min(1, A[c, x]): x drafted and kept. (V, V)"""
        return self.Qs * np.clip(self.A, 0.0, 1.0)

    @property
    def reject_mass(self) -> np.ndarray:
        """1 - sum_x ACC[c, x]: the chance the draft at context c is rejected. (V,)"""
        return np.clip(1.0 - self.acc.sum(axis=1), 0.0, 1.0)


def apply_rule(rule: str | Rule, P: Table, Q: Table) -> RuleTables:
    r = get_rule(rule)
    return RuleTables(r, P, Q, r.draft_table(P, Q), r.accept_table(P, Q), r.reject_table(P, Q))
