"""The registry applied to one position's rows (core.verify, what the one round reads) gives
the entries of the rule's own tables (core.rules.apply_rule, what the vectorised and exact
engines read), for every rule on random tables with zeros; and SpecInfer's chain of
residuals is the one its description gives."""

from __future__ import annotations

import numpy as np
import pytest
from support import random_tables

from specviz.core.kinds.treelaw import sibling_after, sibling_seen
from specviz.core.rule import ratio
from specviz.core.rules import RULES, apply_rule, keep_prob
from specviz.core.verify import draft_row, rejection_row, threshold

SINGLE = [name for name, r in RULES.items() if r.kind == "chain"]


@pytest.mark.parametrize("rule", SINGLE)
def test_rows_give_the_tables_entries(rule):
    rng = np.random.default_rng(7)
    P, Q = random_tables(rng, 5)
    r = RULES[rule]
    rt = apply_rule(r, P, Q)
    for c in range(5):
        np.testing.assert_allclose(draft_row(r, P[c], Q[c]), rt.Qs[c], rtol=0, atol=1e-15)
        for x in range(5):
            a = threshold(r, P[c], Q[c], x)
            assert keep_prob(r, np.asarray(a)) == pytest.approx(keep_prob(r, rt.A[c, x]))
            want = rt.R[c].copy()
            if r.rejection_skips_draft:
                if want[x] >= 1.0:
                    continue  # never rejected: the law given y != x is empty
                want[x] = 0.0
                want /= want.sum()
            np.testing.assert_allclose(rejection_row(r, P[c], Q[c], x), want, atol=1e-15)


def test_specinfer_chain_from_its_description():
    """p_1 = p, p_(j+1) = norm(max(0, p_j - q)); A_j = p_j / q."""
    p = np.array([0.5, 0.3, 0.2, 0.0])
    q = np.array([0.3, 0.1, 0.3, 0.3])
    chain, after = [], p
    for _ in range(3):  # three i.i.d. siblings, each failing
        A, after = ratio(after, sibling_seen(q, q, "iid")), sibling_after(p, after, q, q, "iid")
        chain.append(A)
    want, pj = [], p
    for _ in range(3):
        want.append(np.divide(pj, q, out=np.zeros(4), where=q > 0))
        d = np.maximum(pj - q, 0.0)
        pj = d / d.sum() if d.sum() > 1e-12 else pj
    for a, w in zip(chain, want, strict=True):
        np.testing.assert_allclose(np.where(q > 0, a, 0.0), w, atol=1e-15)
    np.testing.assert_allclose(after, pj, atol=1e-15)
    assert not np.allclose(chain[2], chain[1])  # each try reads a new residual
