"""The rule registry applied to one position: rows p, q of shape (V,), not whole tables.

Every table function of specviz.core.rules takes (R, V) arrays, so a rule is applied to
one position by calling it on (1, V) rows. The common cases skip that call: the standard
ratio is rule.ratio at one entry, the standard residual rule.residual's row. Results are
the rule's own tables' entries exactly.
"""

from __future__ import annotations

import numpy as np

from .rule import ratio, residual
from .ruledefs import Rule

_STANDARD = Rule("standard", "", "", "", "")  # the tables every rule starts from
_IDENTITY = _STANDARD.draft_table  # q as given
_RATIO = _STANDARD.accept_table  # p / q
_RESIDUAL = _STANDARD.reject_table  # norm(max(0, p - q))
_TARGET = _STANDARD.target_table  # p itself


def target_row(rule: Rule, p: np.ndarray) -> np.ndarray:
    """The law the output must follow here (the bonus token's law): p, or warp(p). (V,)"""
    if rule.target_table is _TARGET:
        return p
    return np.asarray(rule.target_table(p[None], p[None], rule.prm)[0], dtype=np.float64)


def draft_row(rule: Rule, p: np.ndarray | None, q: np.ndarray) -> np.ndarray:
    """What the draft really samples from at this position (Qs of the rule). (V,)

    p may be None when the rule's draft law does not read it (the standard one)."""
    if rule.draft_table is _IDENTITY:
        return q
    return np.asarray(rule.draft_table(p[None], q[None], rule.prm)[0], dtype=np.float64)


def reads_target_to_draft(rule: Rule) -> bool:
    """Whether draft_row needs p (a draft law other than q itself)."""
    return rule.draft_table is not _IDENTITY


def threshold(rule: Rule, p: np.ndarray, q: np.ndarray, x: int) -> float:
    """A(x): the coin keeps x iff u < A(x) (u <= A(x) for an inclusive coin)."""
    if rule.accept_table is _RATIO:
        return float(ratio(p[x], q[x]))
    return float(rule.accept_table(p[None], q[None], rule.prm)[0, x])


def rejection_row(rule: Rule, p: np.ndarray, q: np.ndarray, x: int) -> np.ndarray:
    """The law of the token emitted when draft x is rejected here. (V,)"""
    if rule.reject_table is _RESIDUAL and not rule.rejection_skips_draft:
        return residual(p, q)
    row = np.array(rule.reject_table(p[None], q[None], rule.prm)[0], dtype=np.float64)
    if rule.rejection_skips_draft:  # y ~ R given y != the rejected draft
        row[x] = 0.0
        row /= row.sum()
    return row
