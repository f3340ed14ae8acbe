"""The laws the assisted-generation audit compares with (no torch needed): the target's is
plain sampling under the warp, written here from the warp's description; the correct warp
rule's exact law is that law; #47932's mechanism (warp_raw_q) is far from it on the audit's
tables; n_for_power is the smallest n at which compare() sees every known bug."""

from __future__ import annotations

import numpy as np
import pytest

from specviz.analysis.assistedaudit import (
    TWICE,
    WARP,
    assisted_tables,
    check_margin,
    drafted_twice,
    exact_laws,
    n_for_power,
    warps_applied,
)
from specviz.analysis.auditpairs import FIRST, TWO
from specviz.analysis.lawcompare import compare
from specviz.core.rules import RULES
from specviz.core.warp import Warp


def warped_row(p: np.ndarray, w: Warp) -> np.ndarray:
    """Temperature, then the top_k most likely, then the most likely until their mass
    reaches top_p of what top-k left; renormalised (the oracle, from the description)."""
    r = p ** (1.0 / w.temperature)
    r = r / r.sum()
    order = np.argsort(-r, kind="stable")
    keep = np.zeros(r.size, dtype=bool)
    keep[order[:w.top_k or r.size]] = True
    kept = np.where(keep, r, 0.0) / r[keep].sum()
    mass = 0.0
    for x in order:
        if keep[x] and mass >= w.top_p:
            keep[x] = False
        mass += kept[x]
    out = np.where(keep, r, 0.0)
    return out / out.sum()


def test_the_target_law_is_plain_sampling_under_the_warp():
    P, Q = assisted_tables()
    target, known = exact_laws(P, Q, ctx=0, k=1, warp=WARP)
    first = warped_row(P[0], WARP)
    np.testing.assert_allclose(target[FIRST], first, atol=1e-12)
    second = np.stack([warped_row(P[x], WARP) for x in range(P.shape[0])])
    np.testing.assert_allclose(target[TWO], first[:, None] * second, atol=1e-12)
    assert (first > 0).sum() <= WARP.top_k  # the warp cuts: raw and warped laws differ


@pytest.mark.parametrize("k", [1, 2])
def test_the_rule_is_the_target_and_raw_q_is_not(k):
    P, Q = assisted_tables()
    target, known = exact_laws(P, Q, ctx=0, k=k, warp=WARP)
    assert set(known) >= {"warped", "warp_raw_q", "warp_raw_target", "warp_raw_q" + TWICE}
    for name in ("warped", "warped" + TWICE):  # a draft verified against its own row
        for key in (FIRST, TWO):
            np.testing.assert_allclose(known[name][key], target[key], atol=1e-12)
    for name in ("warp_raw_q", "warp_raw_q" + TWICE):
        assert np.abs(known[name][TWO] - target[TWO]).sum() > 0.0


def test_a_draft_warped_twice_samples_from_the_warp_of_the_warp():
    P, Q = assisted_tables()
    rule = RULES["warp_raw_q"].with_params(temperature=WARP.temperature, top_k=WARP.top_k,
                                           top_p=WARP.top_p, warp_draft=1)
    twice, prm = drafted_twice(rule), rule.prm
    once = np.stack([warped_row(q, WARP) for q in Q])
    np.testing.assert_allclose(twice.draft_table(P, Q, prm),
                               np.stack([warped_row(r, WARP) for r in once]), atol=1e-12)
    for table in ("accept_table", "reject_table"):  # warp_raw_q reads the raw q: unchanged
        np.testing.assert_array_equal(getattr(twice, table)(P, Q, prm),
                                      getattr(rule, table)(P, Q, prm))


def test_n_for_power_is_the_smallest_n_that_sees_every_known_bug():
    P, Q = assisted_tables()
    target, known = exact_laws(P, Q, ctx=0, k=1, warp=WARP)
    n = n_for_power(target, known)

    def unseen(m):
        return compare({key: m * law for key, law in target.items()}, target, known).unseen

    assert not unseen(n) and unseen(n - 1)
    assert n_for_power(target, known, only=["warp_raw_q"]) <= n


def test_warps_applied_counts_the_warps_between_q_and_a_reported_row():
    _, Q = assisted_tables()
    q = Q[0]
    once = warped_row(q, WARP)
    assert warps_applied(q, q, WARP) == 0
    assert warps_applied(once, q, WARP) == 1
    assert warps_applied(warped_row(once, WARP), q, WARP) == 2
    assert warps_applied(np.roll(q, 1), q, WARP) is None


def test_a_warp_on_a_rows_boundary_is_refused():
    M = np.array([[0.5, 0.3, 0.2]] * 3)
    with pytest.raises(ValueError, match="top-p"):
        check_margin(M, Warp(top_p=0.8))  # the mass ahead of token 2 is exactly 0.8
    with pytest.raises(ValueError, match="top-k"):
        check_margin(np.array([[0.4, 0.3, 0.3]] * 3), Warp(top_k=2))  # a tie at the cut
    check_margin(M, Warp(top_p=0.7, top_k=2))  # away from both: float32 keeps the same set
