"""Every rule's semantics pinned by tests/oracle.py, a literal enumeration written from the
rules' descriptions that reads none of the registry's tables or the engines' code paths."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import oracle_joint, oracle_rules
from scenarios import sc
from support import random_tables

from specviz import RULES, default_tables, exact_joint
from specviz.core.rules import get_rule

D = default_tables()
ATOL = 1e-10

# Exact TV of the first two emitted tokens from the target's, ctx 'a', k = 4, as published
# (tour, gallery notes). The lossless rules are 0.
PUBLISHED_TV = {"greedy": 0.393, "no_resample": 0.089, "continue": 0.020, "topk_q": 0.506,
                "greedy_draft": 0.700, "inclusive_coin": 0.026, "typical": 0.195,
                "lenient": 0.213}

# Parameter values away from the defaults, each with the oracle built at the same values.
VARIANTS = [
    ("topk_q", {"top_k": 1}, {"top_k": 1}), ("topk_q", {"top_k": 3}, {"top_k": 3}),
    ("inclusive_coin", {"u_bits": 1}, {"u_bits": 1}),
    ("inclusive_coin", {"u_bits": 7}, {"u_bits": 7}),
    ("typical", {"eps": 0.3, "delta": 0.9}, {"eps": 0.3, "delta": 0.9}),
    ("lenient", {"l": 0.8}, {"lenience": 0.8}),
    ("multi_draft", {"m": 1}, {"m": 1}), ("multi_draft", {"m": 2}, {"m": 2}),
]


def target2(P: np.ndarray, ctx: int) -> np.ndarray:
    """The target's own first two tokens: P[ctx, x] P[x, y]."""
    return P[ctx][:, None] * P


ORACLE = list(oracle_rules())  # the chain rules this oracle writes out


def test_every_rule_has_an_independent_oracle():
    """Chain rules here; block verification and token trees by the literal enumerations of
    tests/brute.py (tests/core/test_block.py, test_tree.py); the warped rules against the
    warped target (tests/core/test_warp.py)."""
    elsewhere = {n for n, r in RULES.items() if r.kind in ("block", "tree") and n != "multi_draft"
                 or n.startswith("warp")}  # multi_draft: a tree written out here by position
    assert set(ORACLE) | elsewhere == set(RULES) and not set(ORACLE) & elsewhere


def test_the_registry_defaults_are_the_oracle_defaults():
    """The oracle's parameters are the ones the registry documents as defaults."""
    assert RULES["topk_q"].prm == {"top_k": 2}
    assert RULES["inclusive_coin"].prm == {"u_bits": 4}
    assert RULES["typical"].prm == {"eps": 0.09, "delta": 0.3}
    assert RULES["lenient"].prm == {"l": 0.5}
    assert RULES["multi_draft"].prm == {"m": 3}


@pytest.mark.parametrize("rule", ORACLE)
def test_exact_joint_is_the_oracle_on_the_default_tables(rule):
    for k in (1, 2, 3, 4):
        for n_tokens in (2, 3):
            for ctx in range(D.V):
                np.testing.assert_allclose(
                    exact_joint(sc(D.P, D.Q, ctx, k, rule=rule), n_tokens=n_tokens),
                    oracle_joint(D.P, D.Q, ctx, k, n_tokens, rule), rtol=0, atol=ATOL,
                    err_msg=f"{rule} k={k} n_tokens={n_tokens} ctx={ctx}")


@pytest.mark.parametrize("rule", ORACLE)
@pytest.mark.parametrize("V", [3, 4])
@pytest.mark.parametrize("seed", range(3))
def test_exact_joint_is_the_oracle_on_random_tables_with_zeros(rule, V, seed):
    P, Q = random_tables(np.random.default_rng(1000 * V + seed), V)
    assert (P == 0).any() and (Q == 0).any()
    for k in (1, 2, 3):
        for n_tokens in (2, 3):
            for ctx in range(V):
                np.testing.assert_allclose(
                    exact_joint(sc(P, Q, ctx, k, rule=rule), n_tokens=n_tokens),
                    oracle_joint(P, Q, ctx, k, n_tokens, rule), rtol=0, atol=ATOL,
                    err_msg=f"{rule} k={k} n_tokens={n_tokens} ctx={ctx}")


@pytest.mark.parametrize(("rule", "params", "oracle_params"), VARIANTS)
def test_exact_joint_is_the_oracle_at_other_parameters(rule, params, oracle_params):
    r = get_rule(rule).with_params(**params)
    o = oracle_rules(**oracle_params)[rule]
    for P, Q in [(D.P, D.Q), random_tables(np.random.default_rng(5), 4)]:
        for k in (1, 3):
            for ctx in range(P.shape[0]):
                np.testing.assert_allclose(exact_joint(sc(P, Q, ctx, k, rule=r), n_tokens=3),
                                           oracle_joint(P, Q, ctx, k, 3, o), rtol=0, atol=ATOL,
                                           err_msg=f"{rule} {params} k={k} ctx={ctx}")


@pytest.mark.parametrize("rule", ORACLE)
def test_each_rule_is_lossless_exactly_when_its_family_says(rule):
    """Negative control for the comparisons above: every lossy or broken rule's oracle law is
    visibly not the target's, so agreeing with it pins a bias, not a copy of the target."""
    tv = 0.5 * np.abs(oracle_joint(D.P, D.Q, 0, 4, 2, rule) - target2(D.P, 0)).sum()
    if RULES[rule].lossless:
        assert tv < 1e-12
    else:
        assert tv > 0.01


@pytest.mark.parametrize("rule", list(PUBLISHED_TV))
def test_published_exact_tv_at_k4_from_a(rule):
    want = PUBLISHED_TV[rule]
    oracle_tv = 0.5 * np.abs(oracle_joint(D.P, D.Q, 0, 4, 2, rule) - target2(D.P, 0)).sum()
    exact_tv = 0.5 * np.abs(exact_joint(sc(D.P, D.Q, 0, 4, rule=rule), n_tokens=2) - target2(D.P,
                                                                                         0)).sum()
    assert round(oracle_tv, 3) == want
    assert round(exact_tv, 3) == want
