"""The rule registry applied to one position: rows p, q of shape (V,), not whole tables.

Every table function of specviz.core.rules takes (R, V) arrays, so a rule is applied to
one position by calling it on (1, V) rows. The common cases skip that call: the standard
ratio is rule.ratio at one entry, the standard residual rule.residual's row. Results are
the rule's own tables' entries exactly.
"""

from __future__ import annotations

import numpy as np

from .rule import ratio, residual
from .ruledefs import Rule, given_p, given_q, ratio_table, residual_table


def _row(rule: Rule, table, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row 0 of one of the rule's tables on the (1, V) rows p, q. (V,)"""
    return np.array(table(p[None], q[None], rule.prm)[0], dtype=np.float64)


def target_row(rule: Rule, p: np.ndarray) -> np.ndarray:
    """The law the output must follow here (the bonus token's law): p, or warp(p). (V,)"""
    return p if rule.target_table is given_p else _row(rule, rule.target_table, p, p)


def draft_row(rule: Rule, p: np.ndarray | None, q: np.ndarray) -> np.ndarray:
    """What the draft really samples from at this position (Qs of the rule). (V,)

    p may be None when the rule's draft law does not read it (the standard one)."""
    return q if not reads_target_to_draft(rule) else _row(rule, rule.draft_table, p, q)


def reads_target_to_draft(rule: Rule) -> bool:
    """Whether draft_row needs p (a draft law other than q itself)."""
    return rule.draft_table is not given_q


def threshold(rule: Rule, p: np.ndarray, q: np.ndarray, x: int) -> float:
    """A(x): the coin keeps x iff u < A(x) (u <= A(x) for an inclusive coin)."""
    if rule.accept_table is ratio_table:
        return float(ratio(p[x], q[x]))
    return float(rule.accept_table(p[None], q[None], rule.prm)[0, x])


def rejection_row(rule: Rule, p: np.ndarray, q: np.ndarray, x: int) -> np.ndarray:
    """The law of the token emitted when draft x is rejected here. (V,)"""
    if rule.reject_table is residual_table and not rule.rejection_skips_draft:
        return residual(p, q)
    row = _row(rule, rule.reject_table, p, q)
    if rule.rejection_skips_draft:  # y ~ R given y != the rejected draft
        row[x] = 0.0
        row /= row.sum()
    return row
